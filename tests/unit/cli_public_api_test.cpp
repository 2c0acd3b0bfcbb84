// What the `lrnn` command reads from the public API instead of internal headers
// (docs/architecture.md "The stages"): checks of settings, grounding with counts, the
// reports' JSON, and the MPI job of a process started without a launcher.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "cli_test_support.hpp"
#include "lrnn/distributed.hpp"
#include "lrnn/logic.hpp"
#include "lrnn/model.hpp"
#include "lrnn/report.hpp"
#include "lrnn/syntax.hpp"

namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const lrnn::Error& e) {
    return e.message();
  }
  return "";
}

TEST(CliPublicApi, SettingTextIsCheckedAsTrainingReadsIt) {
  EXPECT_EQ(error_of([] { lrnn::check_setting_text("optimizer", "adamw"); }), "");
  EXPECT_EQ(error_of([] { lrnn::check_setting_text("schedule", "noam"); }), "");
  EXPECT_EQ(error_of([] { lrnn::check_setting_text("corrupt", "both"); }), "");
  EXPECT_NE(error_of([] { lrnn::check_setting_text("optimizer", "adamx"); }).find("adamx"), std::string::npos);
  EXPECT_NE(error_of([] { lrnn::check_setting_text("loss", "hinge"); }).find("hinge"), std::string::npos);
  // A misspelled setting name is refused with the closest one, not ignored.
  const std::string unknown = error_of([] { lrnn::check_setting_text("optimiser", "adam"); });
  EXPECT_NE(unknown.find("unknown setting 'optimiser'"), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("did you mean 'optimizer'"), std::string::npos) << unknown;
}

TEST(CliPublicApi, SettingsThatNeedEachOtherAreRefusedBeforeLoading) {
  EXPECT_EQ(error_of([] { lrnn::check_settings(lrnn::Settings{}); }), "");
  lrnn::Settings s;
  s.fanout = {10};  // needs query_batch_size
  EXPECT_NE(error_of([&] { lrnn::check_settings(s); }), "");
  EXPECT_EQ(error_of([] { lrnn::check_query_split(0.6, 0.2, 0.2); }), "");
  EXPECT_NE(error_of([] { lrnn::check_query_split(0.8, 0.2, 0.2); }), "");
  EXPECT_NE(error_of([] { lrnn::check_query_split(-0.1, 0.2, 0.2); }), "");
}

TEST(CliPublicApi, GrounderCountsAndListsGroundRules) {
  const lrnn::TemplateAst tmpl = lrnn::parse_template("path(X, Y) :- edge(X, Y).\npath(X, Z) :- edge(X, Y), path(Y, Z).\n");
  const std::vector<lrnn::ExampleAst> examples = lrnn::parse_examples("edge(a, b), edge(b, c), edge(c, d).\n");
  const lrnn::logic::Grounder grounder(tmpl);
  const lrnn::logic::ExampleGrounding g = grounder.ground(examples[0], {}, true);
  // path holds for the 6 pairs of the chain a-b-c-d: 3 by the first rule, 3 by the second.
  EXPECT_EQ(g.facts, 3u);
  EXPECT_EQ(g.derived, 6u);
  ASSERT_EQ(g.ground_rules_per_rule.size(), 2u);
  EXPECT_EQ(g.ground_rules_per_rule[0], 3u);
  EXPECT_EQ(g.ground_rules_per_rule[1], 3u);
  EXPECT_EQ(g.ground_rules, 6u);
  ASSERT_EQ(g.ground_rule_lines.size(), 6u);
  EXPECT_EQ(g.ground_rule_lines[0], "path(a, b) :- edge(a, b).");
  // Without listing, the same counts and no text.
  const lrnn::logic::ExampleGrounding counts = grounder.ground(examples[0], {}, false);
  EXPECT_EQ(counts.ground_rules, 6u);
  EXPECT_TRUE(counts.ground_rule_lines.empty());
  // A limit ends grounding with an error, as `lrnn ground --max-ground-rules` does.
  EXPECT_NE(error_of([&] { grounder.ground(examples[0], {}, false, 2); }), "");
}

TEST(CliPublicApi, ReportsAsJson) {
  lrnn::Metrics m;
  m.loss = 0.25;
  m.accuracy = 0.5;
  m.count = 4;
  m.auc = std::nan("");  // targets that are not binary: no "auc" key
  const nlohmann::json j = lrnn::metrics_json(m);
  EXPECT_EQ(j["loss"], 0.25);
  EXPECT_EQ(j["accuracy"], 0.5);
  EXPECT_EQ(j["count"], 4);
  EXPECT_FALSE(j.contains("auc"));
  m.auc = 0.75;
  EXPECT_EQ(lrnn::metrics_json(m)["auc"], 0.75);
  lrnn::EpochInfo e;
  e.epoch = 3;
  e.train = m;
  EXPECT_EQ(lrnn::epoch_line(e, 10), "epoch 3/10  loss 0.250000  acc 0.5000");
  const nlohmann::json h = lrnn::history_json({e});
  ASSERT_EQ(h.size(), 1u);
  EXPECT_EQ(h[0]["epoch"], 3);
}

TEST(CliPublicApi, OneProcessWithoutALauncher) {
  const lrnn::ProcessGroup job = lrnn::process_group();
  EXPECT_EQ(job.size, 1);
  EXPECT_EQ(job.rank, 0);
  EXPECT_EQ(lrnn::gather_from_every_process({1, 2, 3}), (std::vector<uint32_t>{1, 2, 3}));
}

// A query nothing derives outputs 0 (docs/semantics.md "Underivable queries"): the API
// counts and names such queries, `lrnn train` warns about them and marks them in --json.
TEST(CliPublicApi, UnderivableQueriesAreCountedNamedAndWarnedAbout) {
  const char* tmpl = "out(X) :- {1} in(X).\n";
  const char* examples = "in(a), in(c).\n";
  const char* queries = "1.0 out(a), 0.0 out(b), 1.0 out(c), 1.0 out(d).\n";
  lrnn::Model model(lrnn::Template::from_string(tmpl));
  const lrnn::Dataset data = lrnn::Dataset::from_text(examples, queries);
  const lrnn::UnderivableQueries u = model.underivable_queries(data);
  EXPECT_EQ(u.count, 2u);
  EXPECT_EQ(u.total, 4u);
  ASSERT_EQ(u.listed.size(), 2u);
  EXPECT_EQ(u.listed[0], "out(b) (example 1)");
  EXPECT_EQ(u.listed[1], "out(d) (example 1)");
  EXPECT_EQ(model.underivable_queries(data, 1).listed.size(), 1u);
  const lrnn::Evaluation ev = model.evaluate(data);
  ASSERT_EQ(ev.outputs.size(), 4u);
  EXPECT_TRUE(ev.outputs[0].derived);
  EXPECT_FALSE(ev.outputs[1].derived);
  EXPECT_EQ(ev.outputs[1].value, std::vector<double>{0.0});
  EXPECT_EQ(lrnn::outputs_json(ev)[1]["derived"], false);
  EXPECT_FALSE(lrnn::outputs_json(ev)[0].contains("derived"));

  const std::string dir = ::testing::TempDir();
  const auto write = [&](const std::string& name, const char* text) {
    std::ofstream(dir + name) << text;
    return dir + name;
  };
  const std::string t = write("underivable.lrnn", tmpl), e = write("underivable_ex.txt", examples),
                    q = write("underivable_q.txt", queries);
  const lrnn_test::CliRun run = lrnn_test::run_lrnn("train " + t + " -e " + e + " -q " + q + " --epochs 1");
  EXPECT_EQ(run.code, 0) << run.out;
  EXPECT_NE(run.out.find("warning: 2 of 4 queries of the training data are derived by no rule or fact"),
            std::string::npos)
      << run.out;
  EXPECT_NE(run.out.find("out(b) (example 1), out(d) (example 1)"), std::string::npos) << run.out;
  // Every query derived: no warning.
  const std::string q_ok = write("underivable_q_ok.txt", "1.0 out(a), 1.0 out(c).\n");
  const lrnn_test::CliRun ok = lrnn_test::run_lrnn("train " + t + " -e " + e + " -q " + q_ok + " --epochs 1");
  EXPECT_EQ(ok.code, 0) << ok.out;
  EXPECT_EQ(ok.out.find("warning"), std::string::npos) << ok.out;
}

}  // namespace
