// Facts no step reads (Plan::hot_only_facts, exec/plan_hot_facts.cpp): a training plan whose
// only reader of the data facts is a one-hot transform marks them, and a pass from sparse
// facts whose rows are all one-hot then writes neither their values nor their gradients'
// zeros. Checked on GCN graphs with one-hot node labels:
//  - the plan marks every data value for training options, and none when fact gradients are
//    kept, when the one-hot rewrite is off, or when another rule, an atom or an output
//    reads a fact;
//  - passes in one workspace whose fact slots hold NaN (a larger plan's values, then a
//    smaller one's, in turn) leave those slots as they were, give the outputs and parameter
//    gradients of a pass from the dense facts in a fresh workspace bit for bit, in float64
//    and float32, and leave every gradient 0;
//  - given a graph with a row that is not one-hot, the pass writes the facts (its GEMM reads
//    them) and still gives the dense pass's numbers;
//  - the training plans of MUTAG's graphs (one-hot node labels) under the zoo's and the
//    benchmarks' templates, run from sparse facts in workspaces filled with NaN, give the
//    dense passes' numbers bit for bit, whether the plans are marked (GCN, GraphSAGE) or not
//    (GIN, whose `in(I) :- x(I)` reads the labels where they lie).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "exec/batch_norm.hpp"
#include "exec/clear_gradients.hpp"
#include "exec/plan.hpp"
#include "exec/rewrites/registry.hpp"
#include "lrnn/datasets.hpp"
#include "lrnn/syntax.hpp"
#include "shared_datasets.hpp"
#include "train/dataset.hpp"
#include "train/engine.hpp"

namespace {

using namespace lrnn;

const char* kGcn =
    "h(X) :- $w={3,4} x(X).\n"
    "h(X) :- $w={3,4} x(Y), *edge(X, Y). [aggregation=sum]\n"
    "h/1 {3,1} [activation=relu]\n"
    "g(X) :- {2,3} h(Y), *edge(X, Y). [aggregation=sum]\n"
    "g/1 [activation=tanh]\n"
    "o :- {1,2} g(X). [aggregation=avg]\n";

// Two graphs, the second larger; `third` is node 3's label in the first.
std::string graphs(const std::string& third = "0, 0, 0, 1") {
  return "<1.0> o :- <[0, 1, 0, 0]> x(1), <[1, 0, 0, 0]> x(2), <[" + third +
         "]> x(3), edge(1, 2), edge(2, 1), edge(2, 3), edge(3, 2).\n"
         "<0.0> o :- <[0, 0, 1, 0]> x(1), <[1, 0, 0, 0]> x(2), <[0, 1, 0, 0]> x(3), <[0, 0, 0, 1]> x(4), "
         "<[0, 1, 0, 0]> x(5), edge(1, 2), edge(2, 1), edge(2, 3), edge(3, 2), edge(3, 4), edge(4, 3), edge(4, 5), "
         "edge(5, 4), edge(5, 1).\n";
}

constexpr exec::PlanOptions kTraining{.fact_gradients = false,
                                      .in_place_atoms = true,
                                      .alias_identity_rules = true,
                                      .merge_shared_weight_rules = true};

struct Built {
  train::Engine engine;
  train::PreparedSet set;
  std::vector<exec::Plan> plans;             // one per graph, without their data (a training plan's)
  std::vector<std::vector<double>> data;     // each graph's fact values, laid out as its plan reads them

  Built(const std::string& text, exec::PlanOptions options, const std::string& examples = graphs())
      : engine(parse_template(text, "t")) {
    set = engine.prepare(train::pair_samples(parse_examples(examples, "e"), {}));
    for (const auto& net : set.networks) {
      options.fact_values = true;
      data.push_back(exec::build_plan(engine.model(), {&net}, options).data);
      options.fact_values = false;
      plans.push_back(exec::build_plan(engine.model(), {&net}, options));
    }
  }
};

uint32_t marked(const std::string& text, exec::PlanOptions options, size_t graph = 0) {
  const Built b(text, options);
  return b.plans[graph].hot_only_facts;
}

TEST(HotOnlyFacts, MarkedWhereOnlyAOneHotTransformReadsTheFacts) {
  const Built b(kGcn, kTraining);
  for (size_t s = 0; s < b.plans.size(); ++s) {
    EXPECT_GT(b.data[s].size(), 0u);
    EXPECT_EQ(b.plans[s].hot_only_facts, b.data[s].size()) << s;
  }
  exec::PlanOptions keep_fact_gradients = kTraining;
  keep_fact_gradients.fact_gradients = true;
  EXPECT_EQ(marked(kGcn, keep_fact_gradients), 0u);
  exec::PlanOptions no_one_hot = kTraining;
  no_one_hot.disabled_rewrites.set(exec::bit(exec::Rewrite::OneHotInputs));
  EXPECT_EQ(marked(kGcn, no_one_hot), 0u);
  // Another reader of x: a rule's unweighted sum over neighbours (a direct product), atoms
  // that take x's value (their rule, the identity, planned as an alias of x).
  EXPECT_EQ(marked(std::string(kGcn) + "p(X) :- x(Y), *edge(X, Y). [aggregation=sum]\no :- {1,4} p(X).\n",
                   kTraining),
            0u);
  EXPECT_EQ(marked(std::string(kGcn) + "k(X) :- x(X).\nk/1 [activation=sigmoid]\no :- {1,4} k(X).\n", kTraining),
            0u);
  exec::PlanOptions separate = kTraining;
  separate.merge_shared_weight_rules = false;
  EXPECT_GT(marked(kGcn, separate), 0u);  // the neighbour rule reads the self rule's rows
}

template <class T>
exec::ParamView<T> view(const train::Engine& engine, exec::ParamMirror& mirror) {
  if constexpr (std::is_same_v<T, double>) return exec::view_of(engine.parameters());
  else return mirror.refresh(engine.parameters());
}

// The parameter gradients and outputs of one clearing pass of `plan` in `ws`, from `data`
// given dense or sparse (every nonzero value, as the training engine keeps one-hot labels).
struct Pass {
  std::vector<double> grads, outputs;
};
template <class T>
Pass run(const exec::Plan& plan, const std::vector<double>& data, const train::Engine& engine,
         exec::BasicWorkspace<T>& ws, bool sparse) {
  exec::ParamMirror mirror;
  const exec::ParamView<T> params = view<T>(engine, mirror);
  std::vector<uint32_t> positions;
  std::vector<float> values;
  for (size_t i = 0; i < data.size(); ++i)
    if (data[i] != 0.0) {
      positions.push_back(static_cast<uint32_t>(i));
      values.push_back(static_cast<float>(data[i]));
    }
  if (sparse) exec::forward_prepare(plan, exec::SparseFacts{data.size(), positions, values}, params, ws, nullptr);
  else exec::forward_prepare(plan, std::span<const double>(data), params, ws, nullptr);
  exec::forward_steps(plan, params, ws, 0, plan.steps.size());
  exec::zero_gradients(plan, ws);
  double seed = 1.0;
  for (const exec::OutputRef& o : plan.outputs)
    for (uint32_t k = 0; k < o.shape.size(); ++k) ws.grads[o.offset + k] = static_cast<T>(seed += 0.001);
  Pass p;
  p.grads.assign(engine.parameters().size(), 0.0);
  exec::backward(plan, params, ws, p.grads, nullptr, nullptr, exec::FloatGradients::Add, exec::GradientSlots::Clear);
  for (size_t o = 0; o < plan.outputs.size(); ++o) {
    const std::vector<double> y = exec::output_value(plan, ws, o);
    p.outputs.insert(p.outputs.end(), y.begin(), y.end());
  }
  return p;
}

template <class T>
bool all_nan(const exec::BasicWorkspace<T>& ws, size_t n) {
  return std::all_of(ws.values.begin(), ws.values.begin() + n, [](T x) { return std::isnan(x); });
}

template <class T>
void expect_unwritten_facts() {
  const Built b(kGcn, kTraining);
  std::vector<Pass> reference;
  for (size_t s = 0; s < b.plans.size(); ++s) {
    exec::BasicWorkspace<T> fresh;
    reference.push_back(run(b.plans[s], b.data[s], b.engine, fresh, false));
    EXPECT_GT(std::count_if(reference.back().grads.begin(), reference.back().grads.end(),
                            [](double g) { return g != 0.0; }),
              5);
  }
  exec::BasicWorkspace<T> ws;
  const size_t size = std::max(b.plans[0].num_values, b.plans[1].num_values);
  ws.values.assign(size, std::numeric_limits<T>::quiet_NaN());
  for (int round = 0; round < 4; ++round) {
    const size_t s = round % 2 == 0 ? 1 : 0;  // larger, smaller, larger, smaller
    const size_t facts = b.data[s].size();
    std::fill(ws.values.begin(), ws.values.begin() + facts, std::numeric_limits<T>::quiet_NaN());
    const Pass got = run(b.plans[s], b.data[s], b.engine, ws, true);
    EXPECT_EQ(got.grads, reference[s].grads) << "round " << round;  // bit for bit
    EXPECT_EQ(got.outputs, reference[s].outputs) << "round " << round;
    EXPECT_TRUE(all_nan(ws, facts)) << "round " << round;
    EXPECT_TRUE(ws.grads_zero);
    EXPECT_TRUE(std::all_of(ws.grads.begin(), ws.grads.end(), [](T g) { return g == T(0); })) << "round " << round;
  }
}

TEST(HotOnlyFacts, PassesLeaveTheFactsUnwrittenWithTheDensePassesNumbers) {
  expect_unwritten_facts<double>();
  expect_unwritten_facts<float>();
}

template <class T>
void expect_written_facts(const std::string& label) {
  const Built one_hot(kGcn, kTraining), other(kGcn, kTraining, graphs(label));
  const exec::Plan& plan = one_hot.plans[0];
  const std::vector<double>& data = other.data[0];
  ASSERT_EQ(data.size(), one_hot.data[0].size());
  ASSERT_GT(plan.hot_only_facts, 0u);
  exec::BasicWorkspace<T> fresh, ws;
  const Pass reference = run(plan, data, one_hot.engine, fresh, false);
  ws.values.assign(plan.num_values, std::numeric_limits<T>::quiet_NaN());
  const Pass got = run(plan, data, one_hot.engine, ws, true);
  EXPECT_EQ(got.grads, reference.grads) << label;
  EXPECT_EQ(got.outputs, reference.outputs) << label;
  for (size_t i = 0; i < data.size(); ++i) EXPECT_EQ(ws.values[i], T(data[i])) << label << " value " << i;
  EXPECT_TRUE(std::all_of(ws.grads.begin(), ws.grads.end(), [](T g) { return g == T(0); })) << label;
}

TEST(HotOnlyFacts, ARowThatIsNotOneHotHasTheFactsWritten) {
  for (const std::string label : {"0, 0.5, 0, 0", "1, 0, 0, 1", "0, 0, 0, 0"}) {
    expect_written_facts<double>(label);
    expect_written_facts<float>(label);
  }
}

// GraphSAGE as PyNeuraLogic's benchmark table writes it (bench/pyneuralogic_table.py), over
// MUTAG's 7 node labels.
const char* kGraphSage =
    "atom_embed(X) :- {10,7} x(X).\n"
    "{10,10} l1(X) :- atom_embed(X).\n"
    "{10,10} l1(X) :- atom_embed(Y), *edge(Y, X). [aggregation=avg]\n"
    "{10,10} l2(X) :- l1(X).\n"
    "{10,10} l2(X) :- l1(Y), *edge(Y, X). [aggregation=avg]\n"
    "l1/1 [activation=relu]\n"
    "{1,10} predict :- l2(X). [aggregation=avg]\n"
    "predict/0 {1}\n";

std::string file_text(const std::filesystem::path& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(HotOnlyFacts, MutagTrainingPlansFromSparseFactsInNanFilledWorkspacesMatchDensePasses) {
  LRNN_SKIP_WITHOUT_SHARED_DATASETS();
  TuData mutag = read_tu(std::string(LRNN_DATASETS_DIR) + "/tu/MUTAG");
  mutag.examples.resize(24);
  mutag.queries.resize(24);
  const std::filesystem::path source(LRNN_SOURCE_DIR);
  const std::pair<std::string, bool> templates[] = {
      {file_text(source / "examples/graphs/gcn_mutag.lrnn"), true},
      {file_text(source / "bench/templates/gcn_mutag_bench.lrnn"), true},
      {file_text(source / "bench/templates/gcn_mutag_pyneuralogic_bench.lrnn"), true},
      {kGraphSage, true},
      {file_text(source / "examples/graphs/gin_mutag.lrnn"), false},
      {file_text(source / "examples/graphs/gin_mutag_bn.lrnn"), false}};
  for (const auto& [text, expect_marked] : templates) {
    ASSERT_FALSE(text.empty());
    train::Engine engine(parse_template(text, "t"));
    const train::PreparedSet set = engine.prepare(train::pair_samples(mutag.examples, mutag.queries));
    size_t marked = 0;
    for (const neural::SampleNetwork& net : set.networks) {
      exec::PlanOptions options = train::kTrainingPlan;
      const std::vector<double> data = exec::build_plan(engine.model(), {&net}, options).data;
      options.fact_values = false;
      const exec::Plan plan = exec::build_plan(engine.model(), {&net}, options);
      marked += plan.hot_only_facts != 0;
      if (plan.hot_only_facts != 0) EXPECT_EQ(plan.hot_only_facts, data.size());
      exec::Workspace fresh, ws;
      const Pass dense = run(plan, data, engine, fresh, false);
      ws.values.assign(plan.num_values, std::numeric_limits<double>::quiet_NaN());
      const Pass sparse = run(plan, data, engine, ws, true);
      EXPECT_EQ(sparse.outputs, dense.outputs);
      EXPECT_EQ(sparse.grads, dense.grads);
      EXPECT_TRUE(std::all_of(ws.grads.begin(), ws.grads.end(), [](double g) { return g == 0.0; }));
      EXPECT_EQ(all_nan(ws, data.size()), plan.hot_only_facts != 0);
    }
    EXPECT_EQ(marked, expect_marked ? set.networks.size() : 0u) << text.substr(0, 200);
  }
}

}  // namespace
