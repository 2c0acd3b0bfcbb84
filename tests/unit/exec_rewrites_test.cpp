// The plan rewrites (exec/rewrites/registry.hpp, docs/semantics.md "Plan rewrites"): every
// program is planned with its rewrites and with none (PlanOptions::disabled_rewrites), and
// both plans run to the same atom values, atom gradients and gradients of every learnable
// parameter at 1e-12. The fold of a sum's literal under a fixed zero weight (PyNeuraLogic's
// GCN spelling `W x(Y), <0.0> edge(X, Y)`) fires under every aggregation (sum, avg, max,
// softmax) and rule activation, as 0 is added to every grounding; it does not fire for a
// learnable weight (even one that is 0 now), a nonzero fixed weight, an average
// combination, or a zero literal that alone sets the combined shape. A plan whose folded
// weight is set to nonzero afterwards refuses to run, naming the weight. A fixed weight that
// multiplies as the identity (1, an identity matrix, ones entry by entry) is dropped, and
// not a learnable one, a 2, or a matrix or vector that is not the identity.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "exec/plan.hpp"
#include "lrnn/diagnostics.hpp"
#include "lrnn/syntax.hpp"
#include "plan_pass.hpp"
#include "train/dataset.hpp"
#include "train/engine.hpp"

namespace {

using namespace lrnn;

constexpr size_t kFold = static_cast<size_t>(exec::Rewrite::FoldZeroLiterals);
constexpr size_t kTransform = static_cast<size_t>(exec::Rewrite::TransformSum);

// A two-layer GCN whose neighbour rules carry EDGE before the edge literal and METADATA.
std::string gcn(const std::string& edge, const std::string& metadata) {
  return "h(X) :- $w={3,2} x(X).\n"
         "h(X) :- $w={3,2} x(Y), " + edge + " edge(X, Y). [" + metadata + "]\n"
         "h/1 {3,1} [activation=relu]\n"
         "g(X) :- $u={3,3} h(X).\n"
         "g(X) :- $u={3,3} h(Y), " + edge + " edge(X, Y). [" + metadata + "]\n"
         "g/1 {3,1} [activation=tanh]\n"
         "o :- {1,3} g(X). [aggregation=avg]\n";
}

// Two graphs; node 4 of the first has one neighbour, node 3 of the second none.
const char* kExamples =
    "<0.3> o :- <[0.5, -1.0]> x(1), <[1.0, 0.25]> x(2), <[-0.75, 0.4]> x(3), <[0.2, 0.6]> x(4), "
    "edge(1, 2), edge(2, 1), edge(2, 3), edge(3, 2), edge(4, 1), edge(1, 4), edge(1, 3).\n"
    "<0.7> o :- <[0.1, 0.9]> x(1), <[-0.6, 0.35]> x(2), <[0.45, -0.2]> x(3), edge(1, 2), edge(2, 1).\n";

struct Planned {
  train::Engine engine;
  train::PreparedSet set;
  exec::Plan rewritten, plain;

  explicit Planned(const std::string& text) : engine(parse_template(text, "t")) {
    set = engine.prepare(train::pair_samples(parse_examples(kExamples, "e"), {}));
    std::vector<const neural::SampleNetwork*> nets;
    for (const neural::SampleNetwork& n : set.networks) nets.push_back(&n);
    rewritten = exec::build_plan(engine.model(), nets);
    exec::PlanOptions none;
    none.disabled_rewrites.set();
    plain = exec::build_plan(engine.model(), nets, none);
  }
};

// Every atom's value and gradient, every learnable parameter's gradient: equal at 1e-12.
void expect_same_function(const Planned& p) {
  const test::PlanPass a = test::run_plan_pass(p.rewritten, p.engine), b = test::run_plan_pass(p.plain, p.engine);
  size_t compared = 0;
  for (size_t s = 0; s < p.plain.num_samples(); ++s)
    for (size_t l = 0; l < p.plain.atom_offsets[s].size(); ++l) {
      const uint32_t oa = p.rewritten.atom_offsets[s][l], ob = p.plain.atom_offsets[s][l];
      ASSERT_EQ(oa == exec::kNoValue, ob == exec::kNoValue);
      if (ob == exec::kNoValue) continue;
      for (uint32_t k = 0; k < p.plain.atom_shapes[s][l].size(); ++k, ++compared) {
        EXPECT_NEAR(a.ws.values[oa + k], b.ws.values[ob + k], 1e-12) << "sample " << s << " atom " << l;
        EXPECT_NEAR(a.ws.grads[oa + k], b.ws.grads[ob + k], 1e-12) << "sample " << s << " atom " << l;
      }
    }
  EXPECT_GT(compared, 30u);
  const neural::Parameters& params = p.engine.parameters();
  size_t nonzero = 0;
  for (uint32_t q = 0; q < params.count(); ++q) {
    if (!params.info(q).learnable) continue;
    for (size_t k = 0; k < params.info(q).shape.size(); ++k) {
      const size_t i = params.info(q).offset + k;
      nonzero += b.param_grads[i] != 0.0;
      EXPECT_NEAR(a.param_grads[i], b.param_grads[i], 1e-12) << params.info(q).name << " entry " << k;
    }
  }
  EXPECT_GT(nonzero, 10u);
  EXPECT_GT(std::abs(a.ws.values[p.rewritten.outputs[0].offset]), 1e-3);
}

void expect_folds(const std::string& metadata, uint32_t transform_sums) {
  SCOPED_TRACE(metadata);
  const Planned p(gcn("<0.0>", metadata));
  EXPECT_EQ(p.rewritten.rewrites[kFold], 2u);  // the two neighbour rules
  EXPECT_EQ(p.rewritten.rewrites[kTransform], transform_sums);
  EXPECT_EQ(p.plain.rewrites, exec::RewriteCounts{});
  EXPECT_EQ(p.rewritten.folded_zero_weights.size(), 2u);
  EXPECT_LT(p.rewritten.num_values, p.plain.num_values);
  expect_same_function(p);
}

TEST(PlanRewrites, FoldZeroLiteralsUnderEveryAggregationAndActivation) {
  // Summed or averaged, the folded neighbour rules become transform sums too (with the
  // self rules and the readout: 5); otherwise only those 3 are.
  expect_folds("aggregation=sum", 5);
  expect_folds("aggregation=avg", 5);
  expect_folds("aggregation=max", 3);
  expect_folds("aggregation=softmax(Y)", 3);
  expect_folds("aggregation=sum, activation=sigmoid", 3);
}

void expect_no_fold(const std::string& edge, const std::string& metadata) {
  SCOPED_TRACE(edge + " [" + metadata + "]");
  const Planned p(gcn(edge, metadata));
  EXPECT_EQ(p.rewritten.rewrites[kFold], 0u);
  EXPECT_TRUE(p.rewritten.folded_zero_weights.empty());
  expect_same_function(p);
}

TEST(PlanRewrites, FoldZeroLiteralsLeavesWhatIsNotZeroForEver) {
  expect_no_fold("0.0", "aggregation=sum");        // learnable, 0 only until trained
  expect_no_fold("<0.5>", "aggregation=sum");      // fixed, not zero
  expect_no_fold("<0.0>", "aggregation=sum, combination=avg");  // the average counts it
  expect_no_fold("<0.0>", "aggregation=sum, combination=max");
}

TEST(PlanRewrites, AZeroLiteralThatSetsTheShapeStays) {
  // A scalar input summed with a zero vector: the sum is a vector only because of it.
  const Planned p("o :- s, <[0.0, 0.0]> z. [aggregation=sum]\ns.\nz.\n");
  EXPECT_EQ(p.rewritten.rewrites[kFold], 0u);
}

TEST(PlanRewrites, AFoldedWeightSetToNonzeroIsRefused) {
  Planned p(gcn("<0.0>", "aggregation=sum"));
  neural::Parameters& params = p.engine.parameters();
  const uint32_t w = p.rewritten.folded_zero_weights.at(0);
  params.data(w)[0] = 0.25;
  exec::Workspace ws;
  try {
    exec::forward(p.rewritten, params, ws);
    FAIL() << "the plan ran with a folded weight of 0.25";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find(params.info(w).name), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("was 0 when the network was planned"), std::string::npos) << e.message();
  }
  exec::forward(p.plain, params, ws);  // the plain plan reads the weight
}

// Training plans merge a layer's self and neighbour rules (PlanOptions::
// merge_shared_weight_rules); in PyNeuraLogic's spelling the neighbour rule's zero literal
// is folded out ahead of the merge, so both spellings plan alike: one group per layer whose
// sums are the layer's atoms, the zero weights noted (and checked), the same function as
// the plain plan. A zero literal on values that are not scalars (whose product the sum's
// shape would have to take) is not folded there: those rules stay apart.
TEST(PlanRewrites, ZeroLiteralsFoldAheadOfAMergeOfSharedWeightRules) {
  const exec::PlanOptions training{.fact_gradients = false, .in_place_atoms = true, .merge_shared_weight_rules = true};
  const Planned pyneuralogic(gcn("<0.0>", "aggregation=sum"));
  std::string own_text = gcn("<0.0>", "aggregation=sum");  // lrnn's spelling: the edge hidden
  for (size_t at = own_text.find("<0.0> edge"); at != std::string::npos; at = own_text.find("<0.0> edge"))
    own_text.replace(at, 10, "*edge");
  const Planned own(own_text);
  std::vector<exec::Plan> merged;
  for (const Planned* p : {&pyneuralogic, &own}) {
    std::vector<const neural::SampleNetwork*> nets;
    for (const neural::SampleNetwork& n : p->set.networks) nets.push_back(&n);
    merged.push_back(exec::build_plan(p->engine.model(), nets, training));
  }
  EXPECT_EQ(merged[0].rule_groups.size(), merged[1].rule_groups.size());
  EXPECT_EQ(merged[0].rule_groups.size(), pyneuralogic.rewritten.rule_groups.size() - 2);  // h's and g's two rules
  EXPECT_EQ(merged[0].atom_groups.size(), merged[1].atom_groups.size());  // (the edge facts keep data slots)
  size_t in_rows = 0;
  for (const exec::AtomGroup& A : merged[0].atom_groups) in_rows += A.in_input_rows;
  EXPECT_EQ(in_rows, 1u);  // h (relu); g's tanh keeps its own slots
  EXPECT_EQ(merged[0].folded_zero_weights.size(), 2u);
  EXPECT_EQ(merged[0].rewrites[kFold], 2u);
  // The same outputs and parameter gradients as the plain plan (and as lrnn's spelling).
  const test::PlanPass a = test::run_plan_pass(merged[0], pyneuralogic.engine);
  const test::PlanPass b = test::run_plan_pass(pyneuralogic.plain, pyneuralogic.engine);
  const test::PlanPass c = test::run_plan_pass(merged[1], own.engine);
  ASSERT_EQ(merged[0].outputs.size(), pyneuralogic.plain.outputs.size());
  for (size_t o = 0; o < merged[0].outputs.size(); ++o) {
    const double plain = b.ws.values[pyneuralogic.plain.outputs[o].offset];
    EXPECT_GT(std::abs(plain), 1e-3);
    EXPECT_NEAR(a.ws.values[merged[0].outputs[o].offset], plain, 1e-12) << o;
    EXPECT_EQ(a.ws.values[merged[0].outputs[o].offset], c.ws.values[merged[1].outputs[o].offset]) << o;
  }
  const neural::Parameters& params = pyneuralogic.engine.parameters();
  for (uint32_t q = 0; q < params.count(); ++q)
    if (params.info(q).learnable)
      for (size_t k = 0; k < params.info(q).shape.size(); ++k) {
        const size_t i = params.info(q).offset + k;
        EXPECT_NEAR(a.param_grads[i], b.param_grads[i], 1e-12) << params.info(q).name << " entry " << k;
      }
  // A folded weight set to nonzero afterwards: the merged plan refuses to run too.
  Planned changed(gcn("<0.0>", "aggregation=sum"));
  std::vector<const neural::SampleNetwork*> nets;
  for (const neural::SampleNetwork& n : changed.set.networks) nets.push_back(&n);
  const exec::Plan plan = exec::build_plan(changed.engine.model(), nets, training);
  changed.engine.parameters().data(plan.folded_zero_weights.at(0))[0] = 0.5;
  exec::Workspace ws;
  EXPECT_THROW(exec::forward(plan, changed.engine.parameters(), ws), Error);
}

// A template's one example planned as training plans merge (merge_shared_weight_rules, in
// place atoms) and plainly: the rule layer h of its rules RULES under an identity, read by o.
struct MergedAndPlain {
  train::Engine engine;
  train::PreparedSet set;
  exec::Plan merged, plain;
  MergedAndPlain(const std::string& rules, const char* examples)
      : engine(parse_template(rules + "h/1 {3,1} [activation=identity]\no :- {1,3} h(X). [aggregation=avg]\n", "t")) {
    set = engine.prepare(train::pair_samples(parse_examples(examples, "e"), {}));
    merged = exec::build_plan(engine.model(), {&set.networks[0]},
                              {.in_place_atoms = true, .merge_shared_weight_rules = true});
    plain = exec::build_plan(engine.model(), {&set.networks[0]});
  }
};

TEST(PlanRewrites, ThreeRulesWithZeroLiteralsMergeIntoOne) {
  // Two edge relations, each in PyNeuraLogic's spelling, and the self rule, through one $w:
  // the second neighbour rule merges into a group that already holds two rules' members.
  const MergedAndPlain p("h(X) :- $w={3,2} x(X).\n"
                         "h(X) :- $w={3,2} x(Y), <0.0> e(X, Y). [aggregation=sum]\n"
                         "h(X) :- <0.0> f(X, Y), $w={3,2} x(Y). [aggregation=sum]\n",
                         "<0.3> o :- <[0.5, -1.0]> x(1), <[1.0, 0.25]> x(2), <[-0.75, 0.4]> x(3), e(1, 2), "
                         "e(2, 1), f(2, 3), f(3, 1), f(1, 3).\n");
  EXPECT_EQ(p.merged.rule_groups.size(), p.plain.rule_groups.size() - 2);  // h's three rules: one group
  EXPECT_EQ(p.merged.folded_zero_weights.size(), 2u);
  test::expect_same_pass(p.merged, p.plain, p.engine, 1e-3);
}

TEST(PlanRewrites, AZeroLiteralOnVectorValuesKeepsItsRuleApart) {
  // The edge's values are 3-vectors: 0 * [a, b, c] is a zero 3-vector, which the sum adds.
  const MergedAndPlain p("h(X) :- $w={3,2} x(X).\n"
                         "h(X) :- $w={3,2} x(Y), <0.0> e(X, Y). [aggregation=sum]\n",
                         "<0.3> o :- <[0.5, -1.0]> x(1), <[1.0, 0.25]> x(2), <[1.0, 2.0, 3.0]> e(1, 2), "
                         "<[0.5, 0.5, 0.5]> e(2, 1).\n");
  EXPECT_EQ(p.merged.rule_groups.size(), p.plain.rule_groups.size());  // not merged
  for (const exec::AtomGroup& A : p.merged.atom_groups) EXPECT_FALSE(A.in_input_rows);
  test::expect_same_pass(p.merged, p.plain, p.engine, 1e-3);
}

// drop_unit_weights: the neighbour rules' h(Y) under WEIGHT (the self rules keep their
// learnable matrices), summed.
std::string unit_gcn(const std::string& weight) {
  return "h(X) :- $w={3,2} x(X).\n"
         "h(X) :- $w={3,2} x(Y), *edge(X, Y). [aggregation=sum]\n"
         "h/1 {3,1} [activation=relu]\n"
         "g(X) :- $u={3,3} h(X).\n"
         "g(X) :- " + weight + " h(Y), *edge(X, Y). [aggregation=sum]\n"
         "g/1 {3,1} [activation=tanh]\n"
         "o :- {1,3} g(X). [aggregation=avg]\n";
}

constexpr size_t kUnit = static_cast<size_t>(exec::Rewrite::DropUnitWeights);
constexpr size_t kDirect = static_cast<size_t>(exec::Rewrite::DirectProduct);

TEST(PlanRewrites, DropUnitWeightsReadsTheInputUnweighted) {
  // A scalar 1, an identity matrix, ones entry by entry: the rule becomes one unweighted
  // input, which the direct product then sums in place.
  for (const char* weight : {"<1.0>", "<[[1, 0, 0], [0, 1, 0], [0, 0, 1]]>", "<[1, 1, 1]>"}) {
    SCOPED_TRACE(weight);
    const Planned p(unit_gcn(weight));
    EXPECT_EQ(p.rewritten.rewrites[kUnit], 1u);
    EXPECT_EQ(p.rewritten.rewrites[kDirect], 1u);
    EXPECT_EQ(p.rewritten.dropped_unit_weights.size(), 1u);
    EXPECT_LT(p.rewritten.num_values, p.plain.num_values);
    expect_same_function(p);
  }
  for (const char* weight : {"1.0", "<2.0>", "<[[1, 0, 0], [0, 1, 0], [0, 1, 1]]>", "<[1, 1, 0.5]>"}) {
    SCOPED_TRACE(weight);
    const Planned p(unit_gcn(weight));
    EXPECT_EQ(p.rewritten.rewrites[kUnit], 0u);
    expect_same_function(p);
  }
}

TEST(PlanRewrites, ADroppedUnitWeightChangedLaterIsRefused) {
  Planned p(unit_gcn("<[[1, 0, 0], [0, 1, 0], [0, 0, 1]]>"));
  neural::Parameters& params = p.engine.parameters();
  const uint32_t w = p.rewritten.dropped_unit_weights.at(0).first;
  params.data(w)[1] = 0.5;
  exec::Workspace ws;
  EXPECT_THROW(exec::forward(p.rewritten, params, ws), Error);
  exec::forward(p.plain, params, ws);
}

TEST(PlanRewrites, EachRewriteOffAloneGivesTheSameFunction) {
  const Planned p(gcn("<0.0>", "aggregation=sum"));
  std::vector<const neural::SampleNetwork*> nets;
  for (const neural::SampleNetwork& n : p.set.networks) nets.push_back(&n);
  for (size_t r = 0; r < exec::kRewriteCount; ++r) {
    exec::PlanOptions options;
    options.disabled_rewrites.set(r);
    const exec::Plan plan = exec::build_plan(p.engine.model(), nets, options);
    EXPECT_EQ(plan.rewrites[r], 0u);
    const test::PlanPass a = test::run_plan_pass(plan, p.engine), b = test::run_plan_pass(p.plain, p.engine);
    for (size_t o = 0; o < plan.outputs.size(); ++o)
      EXPECT_NEAR(a.ws.values[plan.outputs[o].offset], b.ws.values[p.plain.outputs[o].offset], 1e-12);
  }
}

TEST(PlanRewrites, RegistryNamesAndDescribesEachRewrite) {
  for (size_t r = 0; r < exec::kRewriteCount; ++r) {
    const exec::RewriteInfo& info = exec::rewrite_info(static_cast<exec::Rewrite>(r));
    EXPECT_EQ(exec::rewrite_named(info.name), static_cast<exec::Rewrite>(r));
    EXPECT_FALSE(info.description.empty());
    EXPECT_EQ(info.doc, "docs/semantics.md \"Plan rewrites\"");
  }
  EXPECT_THROW(exec::rewrite_named("fold"), Error);
  exec::RewriteCounts counts{};
  counts[kFold] = 1;
  counts[kTransform] = 3;
  EXPECT_EQ(exec::describe_rewrites(counts),
            "rewrite fold_zero_literals: 1 rule group (literals of a sum under a fixed zero weight left out "
            "(they add 0))\n"
            "rewrite drop_unit_weights: 0 rule groups (fixed weights that multiply as the identity (1, an identity "
            "matrix, ones) left out)\n"
            "rewrite direct_product: 0 rule groups (products of unweighted inputs read where they lie, not "
            "gathered per grounding)\n"
            "rewrite transform_sum: 3 rule groups (one input under a matrix weight transformed once per distinct "
            "input, summed per head)\n"
            "rewrite one_hot_inputs: 0 rule groups (one-hot data inputs under a transform read as the weight's "
            "columns, not a GEMM; training plans only, where data facts take no gradient)\n"
            "rewrite shared_head_rows: 0 rule groups (rules into the same summed atoms add their values to one set "
            "of rows; training plans only)\n"
            "rewrite self_into_sum: 0 rule groups (a node's own value summed into its neighbours' per-head sum, "
            "whose rows become the atoms; training plans only)\n"
            "rewrite weight_after_readout: 0 rule groups (a layer's matrix weight applied after the sum or average "
            "that alone reads its rows, W avg(x) for avg(W x); training plans only)\n");
}

}  // namespace
