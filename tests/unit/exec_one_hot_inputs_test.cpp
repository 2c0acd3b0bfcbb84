// The one-hot-inputs rewrite (rewrites/one_hot_inputs.cpp, docs/semantics.md "Plan
// rewrites"): a transform sum over one-hot data facts without gradients reads W's columns
// instead of running its GEMMs. Graphs whose node labels are one-hot vectors are planned
// with it and without it (PlanOptions::disabled_rewrites), as an inspection-like plan (the
// self and neighbour rules sharing one transform) and as training plans are, and both run
// to the same outputs and parameter gradients, at 1e-12 in float64 and 1e-5 in float32;
// the rewritten plan's gradients match finite differences, and every one-hot row is read as
// a column (the columns forward leaves for backward say so). It applies only where the
// inputs take no gradient, and not to a group of a plan holding data with a row that is not
// one-hot (a 0.5 entry, two ones); a plan that applies it and is given such data in a pass (a
// training plan serves every sample of its structure) still computes the plain plan's
// values and gradients.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "exec/one_hot.hpp"
#include "exec/transform_sum.hpp"
#include "exec/plan.hpp"
#include "exec/rewrites/registry.hpp"
#include "lrnn/syntax.hpp"
#include "train/dataset.hpp"
#include "train/engine.hpp"

namespace {

using namespace lrnn;

constexpr size_t kOneHot = static_cast<size_t>(exec::Rewrite::OneHotInputs);

// A GCN layer over the labels (self and neighbour rules through one weight), a second
// embedding of them (one grounding per head), and an embedding of the nodes with an edge to
// node 1 (2 and 4 of the first graph, 2 of the second: rows that do not lie back to back,
// read where they are), read out by their averages.
const char* kTemplate =
    "e(X) :- $w={3,4} x(X).\n"
    "e(X) :- $w={3,4} x(Y), *edge(X, Y). [aggregation=sum]\n"
    "e/1 {3,1} [activation=tanh]\n"
    "f(X) :- {2,4} x(X).\n"
    "f/1 [activation=sigmoid]\n"
    "s(X) :- {2,4} x(X), *edge(X, 1).\n"
    "s/1 [activation=tanh]\n"
    "o :- {1,3} e(X), {1,2} f(X). [aggregation=avg]\n"
    "o :- {1,2} s(X). [aggregation=avg]\n";

// Two graphs with one-hot labels X1..X6 (each `<[...]>` one of them); node 4 of the first
// has one neighbour, node 3 of the second none.
std::string graphs(const std::vector<std::string>& x) {
  return "<0.3> o :- <[" + x[0] + "]> x(1), <[" + x[1] + "]> x(2), <[" + x[2] + "]> x(3), <[" + x[3] +
         "]> x(4), edge(1, 2), edge(2, 1), edge(2, 3), edge(3, 2), edge(4, 1), edge(1, 4), edge(1, 3).\n"
         "<0.7> o :- <[" + x[4] + "]> x(1), <[" + x[5] + "]> x(2), <[" + x[0] + "]> x(3), edge(1, 2), edge(2, 1).\n";
}
const std::vector<std::string> kOneHotLabels = {"0, 1, 0, 0", "1, 0, 0, 0", "0, 0, 0, 1",
                                                "0, 1, 0, 0", "0, 0, 1, 0", "1, 0, 0, 0"};
// The same graphs with one row that is not one-hot (the third: a 0.5; or the fourth: two ones).
std::vector<std::string> with_label(size_t i, const std::string& x) {
  std::vector<std::string> labels = kOneHotLabels;
  labels[i] = x;
  return labels;
}

// Training plans' options (train/engine.cpp kTrainingPlan), and one whose rules keep their
// own groups (the neighbour rule then sums the self rule's transformed rows).
const exec::PlanOptions kTraining{.fact_gradients = false,
                                  .in_place_atoms = true,
                                  .alias_identity_rules = true,
                                  .merge_shared_weight_rules = true};
const exec::PlanOptions kSeparateRules{.fact_gradients = false};

struct Planned {
  train::Engine engine;
  train::PreparedSet set;
  std::vector<const neural::SampleNetwork*> nets;

  explicit Planned(const std::vector<std::string>& labels) : engine(parse_template(kTemplate, "t")) {
    set = engine.prepare(train::pair_samples(parse_examples(graphs(labels), "e"), {}));
    for (const neural::SampleNetwork& n : set.networks) nets.push_back(&n);
  }
  exec::Plan plan(exec::PlanOptions options, bool one_hot = true) const {
    if (!one_hot) options.disabled_rewrites.set(exec::bit(exec::Rewrite::OneHotInputs));
    return exec::build_plan(engine.model(), nets, options);
  }
};

// The outputs and parameter gradients of one pass of `plan` over `data` in scalar type T,
// every output's gradient seeded with 1.001, 1.002, ...
struct Pass {
  std::vector<double> outputs, param_grads;
  // Per rewritten group, the column forward read for each row, -1 from where it ran the GEMM.
  std::vector<std::vector<double>> hot_columns;
};

template <class T>
Pass run_pass(const exec::Plan& plan, const std::vector<double>& data, const neural::Parameters& parameters) {
  exec::BasicWorkspace<T> ws;
  exec::ParamMirror mirror;
  exec::ParamView<T> params;
  if constexpr (std::is_same_v<T, double>) params = exec::view_of(parameters);
  else params = mirror.refresh(parameters);
  exec::forward(plan, std::span<const double>(data), params, ws);
  ws.grads.assign(plan.num_values, T(0));
  double seed = 1.0;
  for (const exec::OutputRef& o : plan.outputs)
    if (o.offset != exec::kNoValue)
      for (uint32_t k = 0; k < o.shape.size(); ++k) ws.grads[o.offset + k] = T(seed += 0.001);
  Pass p;
  p.param_grads.assign(parameters.size(), 0.0);
  exec::backward(plan, params, ws, p.param_grads);
  for (size_t o = 0; o < plan.outputs.size(); ++o) {
    const std::vector<double> value = exec::output_value(plan, ws, o);
    p.outputs.insert(p.outputs.end(), value.begin(), value.end());
  }
  for (const exec::RuleGroup& G : plan.rule_groups)
    if (G.transform.one_hot_inputs) {
      const T* hot = ws.values.data() + G.transform.hot_off;
      p.hot_columns.emplace_back(hot, hot + G.transform.sources.size());
    }
  return p;
}

// The two plans' passes over `data` agree to `tolerance` (relative for gradients), and
// every learnable weight's gradient is somewhere nonzero (so the comparison means something).
template <class T>
Pass expect_same_pass(const exec::Plan& rewritten, const exec::Plan& plain, const std::vector<double>& data,
                      const neural::Parameters& params, double tolerance) {
  const Pass a = run_pass<T>(rewritten, data, params), b = run_pass<T>(plain, data, params);
  EXPECT_EQ(a.hot_columns.size(), rewritten.rewrites[kOneHot]);
  EXPECT_TRUE(b.hot_columns.empty());
  EXPECT_EQ(a.outputs.size(), 2u);
  EXPECT_EQ(b.outputs.size(), 2u);
  for (size_t o = 0; o < std::min(a.outputs.size(), b.outputs.size()); ++o)
    EXPECT_NEAR(a.outputs[o], b.outputs[o], tolerance) << o;
  for (uint32_t q = 0; q < params.count(); ++q) {
    const exec::ParamView<double> view = exec::view_of(params);
    double largest = 0;
    for (size_t k = 0; k < view.info(q).shape.size(); ++k) {
      const size_t i = view.info(q).offset + k;
      EXPECT_NEAR(a.param_grads[i], b.param_grads[i], tolerance * std::max(1.0, std::abs(b.param_grads[i])))
          << params.info(q).name << " entry " << k;
      largest = std::max(largest, std::abs(b.param_grads[i]));
    }
    if (params.info(q).learnable) EXPECT_GT(largest, 1e-4) << params.info(q).name;
  }
  return a;
}

// How many rows of the rewritten groups forward read as columns, and how many groups ran
// the GEMM from some row on.
std::pair<int, int> columns_and_gemms(const Pass& pass) {
  int columns = 0, gemms = 0;
  for (const std::vector<double>& group : pass.hot_columns) {
    const auto first_gemm = std::find(group.begin(), group.end(), -1.0);
    columns += int(first_gemm - group.begin());
    gemms += first_gemm != group.end();
  }
  return {columns, gemms};
}

int marked(const exec::Plan& plan) {
  int n = 0;
  for (const exec::RuleGroup& G : plan.rule_groups) n += G.transform.one_hot_inputs;
  return n;
}

TEST(OneHotInputs, OneHotLabelsReadAsColumnsEqualThePlainPlan) {
  const Planned p(kOneHotLabels);
  for (const bool training : {false, true}) {
    const exec::PlanOptions& options = training ? kTraining : kSeparateRules;
    const exec::Plan rewritten = p.plan(options), plain = p.plan(options, false);
    // f's and s's rules, and the GCN's self rule (whose rows its neighbour rule sums) or,
    // in training, the GCN's two rules merged into one (W summed over each head's x rows).
    EXPECT_EQ(rewritten.rewrites[kOneHot], 3u);
    EXPECT_EQ(marked(rewritten), int(rewritten.rewrites[kOneHot]));
    int apart = 0;  // s's rows
    for (const exec::RuleGroup& G : rewritten.rule_groups)
      apart += G.transform.one_hot_inputs && !G.transform.contiguous;
    EXPECT_EQ(apart, 1);
    EXPECT_EQ(plain.rewrites[kOneHot], 0u);
    EXPECT_EQ(marked(plain), 0);
    // Every row read as a column: 7 nodes for e and f, 3 for s.
    const std::pair<int, int> every_row{7 + 7 + 3, 0};
    const neural::Parameters& params = p.engine.parameters();
    EXPECT_EQ(columns_and_gemms(expect_same_pass<double>(rewritten, plain, rewritten.data, params, 1e-12)), every_row);
    EXPECT_EQ(columns_and_gemms(expect_same_pass<float>(rewritten, plain, rewritten.data, params, 1e-5)), every_row);
  }
}

TEST(OneHotInputs, NotWhereTheInputsTakeGradients) {
  const Planned p(kOneHotLabels);
  const exec::Plan inspection = p.plan({});  // fact gradients on: dL/dx is computed
  EXPECT_EQ(inspection.rewrites[kOneHot], 0u);
  EXPECT_EQ(marked(inspection), 0);
}

// Each group is decided on its own rows: node 3 of the first graph (a 0.5) is none of s's,
// whose group stays rewritten; node 4 (two ones) is one of every group's.
TEST(OneHotInputs, NotOverDataWithARowThatIsNotOneHot) {
  const std::pair<std::vector<std::string>, int> cases[] = {{with_label(2, "0, 0.5, 0, 0"), 1},
                                                            {with_label(3, "1, 0, 0, 1"), 0}};
  for (const auto& [labels, rewritten_groups] : cases) {
    const Planned p(labels);
    for (const exec::PlanOptions& options : {kSeparateRules, kTraining}) {
      const exec::Plan rewritten = p.plan(options), plain = p.plan(options, false);
      EXPECT_EQ(rewritten.rewrites[kOneHot], uint32_t(rewritten_groups));
      EXPECT_EQ(marked(rewritten), rewritten_groups);
      expect_same_pass<double>(rewritten, plain, rewritten.data, p.engine.parameters(), 1e-12);
    }
  }
}

// A plan built without its data (a training plan's) applies it, and each pass checks its
// rows: given data with a row that is not one-hot, the rows before it read columns and the
// rest run the GEMMs, the same function as the plain plan's.
TEST(OneHotInputs, APlanGivenDataThatIsNotOneHotInAPassRunsTheGemms) {
  const Planned one_hot(kOneHotLabels);
  for (const std::vector<std::string>& labels :
       {with_label(2, "0, 0.5, 0, 0"), with_label(3, "1, 0, 0, 1"), with_label(0, "0, 0, 0, 0")}) {
    const Planned other(labels);
    const std::vector<double> data = other.plan(kSeparateRules).data;
    ASSERT_EQ(data.size(), one_hot.plan(kSeparateRules).data.size());  // the same layout
    for (exec::PlanOptions options : {kSeparateRules, kTraining}) {
      options.fact_values = false;
      const exec::Plan rewritten = one_hot.plan(options), plain = one_hot.plan(options, false);
      EXPECT_GT(rewritten.rewrites[kOneHot], 0u);
      ASSERT_TRUE(rewritten.data.empty());
      const Pass pass = expect_same_pass<double>(rewritten, plain, data, one_hot.engine.parameters(), 1e-12);
      expect_same_pass<float>(rewritten, plain, data, one_hot.engine.parameters(), 1e-5);
      EXPECT_GT(columns_and_gemms(pass).second, 0);  // some group ran its GEMM
    }
  }
}

// The rewritten plan's parameter gradients are those of its outputs: central differences
// of the seeded sum of the outputs, weight entry by weight entry.
TEST(OneHotInputs, GradientsMatchFiniteDifferences) {
  Planned p(kOneHotLabels);
  for (const exec::PlanOptions& options : {kSeparateRules, kTraining}) {
    const exec::Plan plan = p.plan(options);
    ASSERT_GT(plan.rewrites[kOneHot], 0u);
    neural::Parameters& params = p.engine.parameters();
    const Pass pass = run_pass<double>(plan, plan.data, params);
    const auto loss = [&] {
      const Pass q = run_pass<double>(plan, plan.data, params);
      double sum = 0, seed = 1.0;
      for (double y : q.outputs) sum += (seed += 0.001) * y;
      return sum;
    };
    const double h = 1e-6;
    for (size_t i = 0; i < params.values.size(); ++i) {
      const double kept = params.values[i];
      params.values[i] = kept + h;
      const double up = loss();
      params.values[i] = kept - h;
      const double down = loss();
      params.values[i] = kept;
      EXPECT_NEAR(pass.param_grads[i], (up - down) / (2 * h), 1e-7) << "parameter entry " << i;
    }
  }
}

// The row check (exec/one_hot.hpp) at every width up to past three vector lengths and
// every position, in both scalar types: one-hot rows give their 1's position, and a second
// 1, a 0.5, a 2, an infinity or a NaN anywhere else, or no 1 at all, give none; -0 counts as 0.
template <class T>
void expect_hot_entries() {
  const T odd[] = {T(0.5), T(2), T(-1), std::numeric_limits<T>::infinity(), std::numeric_limits<T>::quiet_NaN(), T(1)};
  for (uint32_t n = 1; n <= 50; ++n) {
    std::vector<T> x(n, T(0));
    EXPECT_EQ(exec::hot_entry(x.data(), n), exec::kOneHotNone) << n;
    for (uint32_t k = 0; k < n; ++k) {
      x.assign(n, T(0));
      x[k] = T(1);
      x[(k + 1) % n] = k + 1 < n ? T(-0.0) : x[(k + 1) % n];
      EXPECT_EQ(exec::hot_entry(x.data(), n), k) << n << " " << k;
      if (n == 1) continue;
      for (T other : odd) {
        const uint32_t at = (k * 7 + 3) % n == k ? (k + 1) % n : (k * 7 + 3) % n;
        const T kept = x[at];
        x[at] = other;
        EXPECT_EQ(exec::hot_entry(x.data(), n), exec::kOneHotNone) << n << " " << k << " " << other;
        x[at] = kept;
      }
    }
  }
}

// The rows' columns written from sparse fact values (exec::write_hot_rows, what a pass from
// a sparse copy of its facts does) are the row check's on the same values made dense, at
// every width up to 20 and every position, with a -0, a second 1, a 2, a NaN or no 1 in a
// row, in both scalar types; rows that do not lie back to back, with other facts between.
template <class T>
void expect_written_hot_rows() {
  const float odd[] = {-0.0f, 1.0f, 2.0f, std::numeric_limits<float>::quiet_NaN(), 0.5f};
  for (uint32_t in = 1; in <= 20; ++in) {
    exec::Plan plan;
    plan.rule_groups.resize(1);
    exec::RuleGroup& G = plan.rule_groups[0];
    G.inputs.resize(1);
    G.inputs[0].raw_shape = neural::Shape{int(in), 1};
    exec::TransformSum& t = G.transform;
    t.enabled = t.one_hot_inputs = true;
    std::vector<float> dense;
    for (uint32_t k = 0; k < in; ++k)
      for (int variant = -1; variant < 5; ++variant) {
        dense.resize(dense.size() + 3, 7.0f);  // another fact's values
        t.sources.push_back(static_cast<uint32_t>(dense.size()));
        dense.resize(dense.size() + in, 0.0f);
        float* row = dense.data() + t.sources.back();
        row[k] = 1.0f;
        if (variant >= 0) row[(k + 1 + variant) % in] = odd[variant];  // (in place of the 1 when in is 1)
      }
    dense.push_back(1.0f);
    t.hot_off = static_cast<uint32_t>(dense.size());
    std::vector<uint32_t> positions;
    std::vector<float> values;
    for (size_t i = 0; i < dense.size(); ++i)
      if (std::bit_cast<uint32_t>(dense[i]) != 0) {
        positions.push_back(static_cast<uint32_t>(i));
        values.push_back(dense[i]);
      }
    std::vector<T> v(dense.size() + t.sources.size(), T(5));
    const bool all_hot =
        exec::write_hot_rows(plan, std::span<const uint32_t>(positions), std::span<const float>(values), v.data());
    std::vector<T> widened(dense.begin(), dense.end());
    bool every_row = true;
    for (size_t r = 0; r < t.sources.size(); ++r) {
      const uint32_t k = exec::hot_entry(widened.data() + t.sources[r], in);
      EXPECT_EQ(v[t.hot_off + r], k == exec::kOneHotNone ? T(-1) : T(k)) << in << " row " << r;
      every_row = every_row && k != exec::kOneHotNone;
    }
    EXPECT_EQ(all_hot, every_row) << in;
    // The one-hot rows alone (the first of each width's six variants): all found one-hot.
    std::vector<uint32_t> hot_sources, hot_positions;
    std::vector<float> ones;
    for (size_t r = 0; r < t.sources.size(); r += 6) hot_sources.push_back(t.sources[r]);
    for (uint32_t source : hot_sources)
      for (uint32_t e = 0; e < in; ++e)
        if (dense[source + e] == 1.0f) {
          hot_positions.push_back(source + e);
          ones.push_back(1.0f);
        }
    t.sources = hot_sources;
    EXPECT_TRUE(exec::write_hot_rows(plan, std::span<const uint32_t>(hot_positions), std::span<const float>(ones),
                                     v.data()))
        << in;
  }
}

TEST(OneHotInputs, RowsWrittenFromSparseFactsAreTheRowChecks) {
  expect_written_hot_rows<double>();
  expect_written_hot_rows<float>();
}

TEST(OneHotInputs, RowCheckAtEveryWidthAndPosition) {
  expect_hot_entries<double>();
  expect_hot_entries<float>();
}

}  // namespace
