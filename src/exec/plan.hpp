// Execution plans: one or more sample networks merged into layers of batched kernels over
// one flat value buffer (docs/semantics.md "Execution (src/exec)"). A plan holds only indices and
// shapes; values live in a Workspace, parameters in neural::Parameters. Forward runs the
// steps in order, backward in reverse with the transposed kernels; every gradient of a
// shared weight is reduced inside its group in a fixed order (deterministic).
#pragma once

#include <cstdint>
#include <functional>
#include <new>
#include <span>
#include <utility>
#include <vector>

#include "exec/functions.hpp"
#include "exec/rewrites/registry.hpp"
#include "exec/scalar.hpp"
#include "neural/network.hpp"
#include "neural/template_model.hpp"

namespace lrnn::exec {

inline constexpr uint32_t kNoValue = 0xFFFFFFFFu;

// Group kernels go parallel only when they move more than this many doubles: below it the
// fork/join costs more than it saves, and on a shared machine (other processes on the
// cores) a barrier waiting for a descheduled thread costs milliseconds.
inline constexpr size_t kParallelEntries = size_t{1} << 20;

// How a weight W meets its input x (decided once per group from the two shapes):
//  None:        no weight, z = x
//  Scalar:      W is 1x1, z = w * x
//  Outer:       x is 1x1 and W is not, z = x * W (a scalar input scales a vector/matrix weight)
//  MatMul:      W is r x c and x has c rows, z = W x (r x x.cols)
//  Elementwise: W has x's shape but cannot multiply it (e.g. two n x 1 vectors), z = W .* x
enum class WeightMode : uint8_t { None, Scalar, Outer, MatMul, Elementwise };
// Throws lrnn::Error (Shape) with `what` in the message when W cannot apply to x.
WeightMode weight_mode(Shape w, Shape x, Shape& out);
// Whether weight values w (of `shape`) applied in `mode` give back their input: a scalar 1,
// an identity matrix, ones entry by entry (rewrites/drop_unit_weights.cpp).
bool multiplies_as_identity(const double* w, Shape shape, WeightMode mode);

// Whether the value offsets `src` are consecutive rows of `size` values, in order (one
// grounding or atom per row of an earlier step's output, read where it lies). False when
// empty.
inline bool rows_in_order(const std::vector<uint32_t>& src, uint32_t size) {
  for (size_t j = 0; j < src.size(); ++j)
    if (src[j] != src[0] + j * size) return false;
  return !src.empty();
}

struct InputBlock {
  Shape raw_shape;   // the input atoms' value shape
  Shape wout_shape;  // after the weight
  Shape out_shape;   // after ^T (the weight applies first: `W k(J)^T` is (W k_J)^T)
  bool soft_negated = false, transposed = false;
  uint32_t weight = neural::kNoParam;
  WeightMode mode = WeightMode::None;
  std::vector<uint32_t> src;  // value offset of each grounding's input atom
  uint32_t x_off = 0;         // gathered inputs (1 - x under ~), n values
  uint32_t w_off = 0;         // weighted (== x_off without weight)
  uint32_t z_off = 0;         // transposed (== w_off unless a real matrix is transposed)
};

// A product combination computed straight from where its inputs live (no gather): the
// inputs carry no weight, no negation and no real transpose, and are scalar factors with
// either nothing else (Scalars), one vector or matrix (Scale: the factors scale it) or a
// row vector times a column vector (Dot: the attention score). Attention is a product
// rule over n^2 (or n w) pairs of rows that already sit in the value buffer, so copying
// them per pair would cost more memory and time than the product itself. A rule of one
// unweighted input whose combination is the identity on one value (sum, avg, max, min,
// product, elproduct: a GIN layer's neighbour sum) is a product of one factor here too.
struct DirectProduct {
  enum class Kind : uint8_t { None, Scalars, Scale, Dot };
  Kind kind = Kind::None;
  int a = -1, b = -1;        // the scaled input (Scale), or the row (a) and column (b) (Dot)
  int len = 1;               // entries per product (Scale), dot length (Dot)
  std::vector<int> scalars;  // the scalar factors
  bool fused_sum = false;    // products summed (or averaged) per head, never stored
  // Dense blocks: when the members enumerate every pair of two runs of rows that lie back
  // to back in the value buffer (full attention), the products are one matrix product.
  //  Dot, not fused: member i * cols + j multiplies row i of `outer` (at outer_off + i len)
  //    with row j of `inner` (at inner_off + j len); the products form rows x cols.
  //  Scale, fused: head i sums cols members; member i * cols + j scales row j of `inner`
  //    (at inner_off + j len) by scalar input `outer` at outer_off + i * cols + j, or at
  //    outer_off + j * rows + i when outer_transposed (the scalars stored column by column,
  //    as the attention weights w(I, J) are when J is their slower-moving argument).
  // Every other scalar factor is the same value for all members (scalar_off).
  bool dense = false;
  uint32_t rows = 0, cols = 0;
  int outer = -1, inner = -1;
  uint32_t outer_off = 0, inner_off = 0;
  bool outer_transposed = false;
  std::vector<uint32_t> scalar_off;  // the constant scalar factors' offsets
  // Banded blocks (a causal mask @leq(J, I), or any mask leaving each row one run of
  // consecutive columns), run as dense tiles (exec/dense_tiles.hpp) instead of per-member
  // products. Row i owns members band_begin[i] .. band_begin[i + 1] - 1 (rows + 1 offsets),
  // member band_begin[i] + t standing for column band_first[i] + t:
  //  Dot, not fused: the product of row i of `outer` (at outer_off + i len) and that column
  //    of `inner` (at inner_off + column len), stored at member order.
  //  Scale, fused: head i sums (averages) its members; member k scales that column of
  //    `inner` by the scalar input `outer` at outer_off + k (stored in member order).
  // rows, cols (columns spanned), outer, inner, outer_off, inner_off and scalar_off as for
  // dense blocks.
  bool banded = false;
  std::vector<uint32_t> band_begin, band_first;
  std::vector<uint32_t> tile_begin;  // the first row of each tile, then rows (dense_tiles.hpp)
  // A fused sum of one grounding per head, under a head weight, whose input rows lie back to
  // back in head order (a GraphSAGE layer's self rule, `{10,10} h(X) :- e(X).`): the
  // aggregates are those rows where they lie (agg_off is the first), so forward runs the
  // head weight alone and its backward adds straight into their gradients
  // (plan_input_rows in rewrites/direct_product.cpp).
  bool input_rows = false;
};

// Whether d sums one unweighted input's rows per head where they lie (a product of that
// one factor alone, fused into the sum; no scalar factor, no dense or banded block): a
// GNN layer's neighbour sum, or a self rule's one row per head.
inline bool sums_input_rows(const DirectProduct& d) {
  return d.kind == DirectProduct::Kind::Scale && d.fused_sum && d.scalars.empty() && !d.dense && !d.banded;
}

// A rule whose one input is a column vector under a matrix weight and whose groundings
// are summed (or averaged) per head with nothing in between (the combination of one input,
// no offset, identity activation, no softmax): a head's value is the sum of W x over its
// groundings. Each distinct input atom is transformed once (one GEMM over the u distinct
// inputs instead of the n groundings), and the heads sum their rows straight from there
// (a sparse-dense product): nothing per grounding is stored. A GCN layer's neighbour rule
// is this, with n = edges and u = nodes.
struct TransformSum {
  bool enabled = false;
  std::vector<uint32_t> sources;  // value offset of each distinct input atom, ascending
  std::vector<uint32_t> row_of;   // per grounding: its input's row in `sources`
  bool contiguous = false;        // sources lie back to back: read in place, no gather
  bool rows_are_heads = false;    // one grounding per head and row_of[k] == k: the aggregates are the rows
  uint32_t x_off = 0;             // the distinct inputs (sources[0] when contiguous)
  uint32_t t_off = 0;             // W x of each distinct input, u rows
  // False when an earlier group of the same depth has the same weight and its sources
  // include this group's (a GCN layer's self and neighbour rules: every node, and the nodes
  // with a neighbour): that group's rows are used (`sources`, `contiguous` and `row_of` are
  // then the owner's rows), and it runs the GEMMs (forward before this group, backward
  // after it has added its gradients to the rows).
  bool owns_transform = true;
  // False when the inputs are data facts whose gradients nobody reads (built with
  // PlanOptions::fact_gradients off): backward skips dL/dX, the second of its two GEMMs.
  bool input_gradients = true;
  // Sum first (PlanOptions::transform_sum_first, when the distinct inputs are at least
  // twice the heads: a sampled support's neighbour rule, ~10 distinct inputs per head):
  // each head's inputs are summed (averaged) into s_off (m rows of the input's size) and
  // the heads' rows are one GEMM, agg = S W^T, W (sum x) being sum W x. x_off and t_off
  // are then unused, and backward adds dW += gagg^T S and (input gradients) scatters
  // gagg W to the inputs.
  bool sum_first = false;
  uint32_t s_off = 0;
  // Sum first over data facts only (no ghost, no learnable example fact: PlanBuilder's
  // data_inputs): the sums are the same in every pass over the same sample's data, so a
  // workspace that still holds them from such a pass (BasicWorkspace::data_held) runs only
  // the GEMM. A big graph's first GCN layer then gathers its neighbours' features once,
  // not every epoch.
  bool constant_sums = false;
  // One-hot data inputs (rewrites/one_hot_inputs.cpp): the transform's own rows (not sum
  // first) read data facts that take no gradient (input_gradients false), each one-hot where
  // the plan holds the data. A row with one entry 1 at column k and 0 elsewhere transforms
  // to W's column k, and its weight gradient is that column's: dW[:, k] += gT[r]. A training
  // plan serves every sample of its structure, whatever their data, so each pass checks
  // its rows: the ones before the first that is not one-hot take their columns, that row
  // and the rest the GEMMs. Forward leaves at hot_off (u values) each of those rows' column
  // k, then -1 for the first row that is not one-hot: backward reads them, not the rows.
  bool one_hot_inputs = false;
  uint32_t hot_off = 0;
  // Backward by rows (big groups, kBackwardByRowMinEntries): the groundings grouped by their
  // row, so that backward gathers each row's gradient from the heads that read it instead
  // of scattering each head's gradient onto its rows. A big graph's rows are spread over
  // more memory than the caches hold: scattered, every grounding read and wrote back a
  // row at random; gathered, it reads one and each row is written once, in order. Each
  // row still adds its groundings' gradients in grounding order: the same bits.
  // row_begin: u + 1 offsets into row_heads (empty: backward scatters); row_heads: per
  // grounding, grouped by row and ascending within a row, the head it belongs to.
  std::vector<uint32_t> row_begin;
  std::vector<uint32_t> row_heads;
};
// From how many transformed entries (rows x width) a transform sum's backward gathers by
// rows (TransformSum::row_begin): ~256 KB of float32 rows, beyond what the L2 cache keeps
// next to the rest of a pass. Smaller groups (a molecule's) scatter, their rows in cache.
inline constexpr size_t kBackwardByRowMinEntries = size_t{1} << 16;
// From how many groundings a group over data facts sums first (rewrites/transform_sum.cpp).
inline constexpr size_t kSumDataFirstMin = size_t{1} << 16;

// All ground rules of one template rule whose heads sit at one depth, with their
// aggregation and the head weight: one kernel.
struct RuleGroup {
  uint32_t rule = 0;
  uint32_t n = 0;  // ground rules
  CombinationKind combination = CombinationKind::Sum;
  Activation activation;
  std::vector<InputBlock> inputs;
  // Set when the product is computed in place (inputs' x_off/w_off/z_off then unused).
  // With fused_sum (identity activation, no offset, no softmax, sum or avg aggregation)
  // comb_off/pre_off/act_off are unused too and agg_off receives the per-head sums.
  DirectProduct direct;
  // Set when the weighted input is summed per head from its distinct inputs (inputs'
  // x_off/w_off/z_off and comb_off/pre_off/act_off then unused).
  TransformSum transform;
  Shape comb_shape;
  uint32_t comb_off = 0;   // combination output (n values)
  uint32_t offset = neural::kNoParam;
  uint32_t pre_off = 0;    // + offset (== comb_off without offset)
  Shape act_shape;
  uint32_t act_off = 0;    // rule neuron values (n values)
  // softmax(J) aggregation: rule neuron values are normalised across the groundings that
  // agree on every variable except J (a softmax segment may span several heads), then
  // summed per head. softmax_perm orders the n rule neurons by softmax segment.
  bool softmax = false;
  std::vector<uint32_t> softmax_perm;
  std::vector<uint32_t> softmax_segments;  // offsets into the permuted order
  uint32_t perm_off = 0;   // rule neuron values in permuted order
  uint32_t psoft_off = 0;  // their softmax (permuted order)
  uint32_t soft_off = 0;   // the softmax back in head order
  AggregationKind aggregation = AggregationKind::Avg;
  // Several stages may be the identity, and then share their input's offset (and run no
  // kernel): act_off == pre_off (identity activation), perm_off == act_off and
  // soft_off == psoft_off (softmax segments already contiguous, softmax_perm empty), and
  // agg_off == its input (identity_aggregation: one grounding per head).
  bool identity_aggregation = false;
  uint32_t m = 0;                       // distinct heads (aggregation neurons)
  std::vector<uint32_t> head_segments;  // m + 1 offsets into the n rule neurons
  // The order in which a plain row sum's forward visits the heads (order_heads_by_count in
  // direct_product.hpp; empty: 0, 1, ..., m - 1): by their count of members, stable. Each
  // head's sum is its own, so the order changes no value, while the loop's trip counts then
  // change a few times per pass instead of at random, mispredicted (a GNN's neighbour sum
  // over nodes of degrees 1 to 4). Backward keeps head order: heads that share an input add
  // into its gradient row in that order.
  std::vector<uint32_t> head_order;
  Shape agg_shape;
  uint32_t agg_off = 0;
  // A square matrix weight moved here from the group whose rows this group's sum or average
  // alone reads (rewrites/weight_after_readout.cpp: avg(W x) computed as W avg(x)): the
  // aggregates go through it into rows of agg_shape at readout_off, which the head weight
  // then reads (or which are the out rows, out_off == readout_off, without one). kNoParam:
  // none. When a second group had added its products to those rows (W1 x + W2 y, a
  // GraphSAGE layer: RuleGroup::adds_to_out), each member's row of y lies readout_shift
  // values after its row of x: their sums or averages at readout_agg2_off go through
  // readout_weight2, added to the first weight's products.
  uint32_t readout_weight = neural::kNoParam;
  uint32_t readout_off = 0;
  uint32_t readout_weight2 = neural::kNoParam;
  uint32_t readout_shift = 0;
  uint32_t readout_agg2_off = 0;
  // Read through the rows (weight_after_readout, where they were a plain per-head sum's or
  // average's that nothing else reads): the members are the rows those were sums of, each
  // row once per head, with its coefficient in the aggregates (readout_scale) and, under a
  // second weight, in the second aggregates (readout_scale2; readout_shift then unused):
  // agg[h] = sum_k readout_scale[k] x_k over head h's members, whatever the aggregation.
  // Empty: the members' rows are summed or averaged.
  std::vector<double> readout_scale, readout_scale2;
  uint32_t head_weight = neural::kNoParam;
  WeightMode head_mode = WeightMode::None;
  Shape out_shape;
  uint32_t out_off = 0;  // head-weighted aggregates (== agg_off without head weight)
  // The group's last stage (the head weight's products, else its aggregates: a transform
  // sum's per-head sums or its GEMM over them) is added to the rows an earlier group of the
  // same depth wrote for the same atoms, out_off being that group's
  // (rewrites/shared_head_rows.cpp): a GraphSAGE layer's self and neighbour rules end in
  // one sum, W1 x + W2 avg(x_nbr).
  bool adds_to_out = false;
};

// Whether G's aggregates themselves are added to an earlier group's rows (no head weight
// after them: RuleGroup::adds_to_out).
inline bool adds_to_agg(const RuleGroup& G) { return G.adds_to_out && G.head_weight == neural::kNoParam; }

// Head h's aggregation scale: 1 for a sum, 1 / (its groundings) for an average.
inline double head_scale(const RuleGroup& G, uint32_t h) {
  const uint32_t count = G.head_segments[h + 1] - G.head_segments[h];
  return G.aggregation == AggregationKind::Avg && count > 0 ? 1.0 / double(count) : 1.0;
}

// Atom neurons of one predicate at one depth: combine each atom's inputs (one per rule
// that derives it, plus its own fact value if it is also a fact), offset, activation.
struct AtomGroup {
  uint32_t predicate = 0;
  uint32_t m = 0;
  Shape in_shape;
  std::vector<uint32_t> src;       // value offset of each input
  std::vector<uint32_t> segments;  // m + 1 offsets into src
  uint32_t c_off = 0;              // gathered inputs (unless summed_in_place)
  AggregationKind combination = AggregationKind::Sum;
  // A sum or average reads the inputs where they are (no gather, c_off unused) and its
  // offset is added in place (pre_off == red_off): neither backward step needs them.
  bool summed_in_place = false;
  // The atoms are their one input's rows, changed in place (PlanOptions::in_place_atoms;
  // each atom's one input is a row of a rule group's own per-head sums, which nothing else
  // reads): red_off == pre_off == out_off is that group's out_off, the offset and the
  // activation apply there, and backward leaves dL/d(pre) there for the rule group to read.
  // src and segments are then empty: there is nothing to gather or scatter.
  bool in_input_rows = false;
  uint32_t red_off = 0;
  uint32_t offset = neural::kNoParam;
  // Batch normalisation (neural::BatchNormSpec; norm == kNoParam: none): red -> x^ at
  // norm_off -> scale * x^ + offset at pre_off (its own slot) -> activation. A plain forward
  // normalises with the running statistics; a training step computes x^ from the batch
  // (exec/batch_norm.hpp) between the group's two halves.
  uint32_t norm = neural::kNoParam;
  uint32_t norm_scale = neural::kNoParam, norm_mean = neural::kNoParam, norm_var = neural::kNoParam;
  // A normalised group whose x are its inputs where they lie (PlanOptions::in_place_atoms:
  // each atom sums one input and those are consecutive rows in atom order, a GIN's
  // `mlp(I) :- {64,64} in(I)`): red_off is those rows, nothing is summed into a slot of its
  // own forward nor scattered out of it backward (dL/dx adds where the inputs' gradients
  // lie), in a training step and outside one alike.
  bool x_in_inputs = false;
  // x^; in training plans over x itself (norm_off == red_off) when x is a GEMM's rows that
  // nothing else reads (PlanBuilder::x_hat_over_x): backward then finds dL/dx^ and leaves
  // dL/dx in one slot.
  uint32_t norm_off = 0;
  uint32_t pre_off = 0;
  Activation activation;
  Shape out_shape;
  uint32_t out_off = 0;  // the atom values, m consecutive
};

struct Step {
  bool atom = false;  // AtomGroup or RuleGroup
  uint32_t index = 0;
};

struct OutputRef {
  uint32_t sample = 0;  // position of the sample in the plan
  uint32_t query = 0;   // query of the example
  uint32_t atom = 0;    // local atom id in the sample network (kNoValue: no neuron)
  uint32_t offset = kNoValue;  // value offset, kNoValue: the query has no neuron (output 0)
  Shape shape;
};

struct Plan {
  // Different for every plan build_plan makes in the process (never 0): what a workspace
  // remembers of the pass it last held (BasicWorkspace::data_key).
  uint64_t serial = 0;
  uint32_t num_values = 0;
  // The values a pass computes once its data are held: what its steps allocate
  // (step_values), less the per-head sums of data alone (TransformSum::constant_sums,
  // computed by the first pass only). The data facts, a partitioned sample's ghosts (written
  // by the exchange) and the template's facts lie before the steps' values and are not
  // counted; a plan that lists no step values counts all its values. A measure of a pass's
  // work (docs/distributed.md), where num_values measures its memory.
  uint64_t computed_values = 0;
  // Example fact values, laid out at [0, data.size()): forward starts with one copy.
  std::vector<double> data;
  // Template facts: value offset and parameter.
  std::vector<uint32_t> param_fact_off, param_fact_param;
  // Learnable example facts (SampleNetwork::fact_example_param): value offset (inside
  // `data`) and parameter of the dataset's own block, which replaces the written value.
  std::vector<uint32_t> example_fact_off, example_fact_param;
  std::vector<RuleGroup> rule_groups;
  std::vector<AtomGroup> atom_groups;
  std::vector<Step> steps;
  // Positions in `steps` of the batch-normalised atom groups, ascending.
  std::vector<uint32_t> norm_steps;
  // Per depth d = 1, 2, ...: the first step of the atoms and ground rules at depth d, then the
  // number of steps (depth_steps[d - 1] .. depth_steps[d] are depth d's steps). A caller that
  // must act between layers (a partitioned sample's ghost exchange, train/ghost_exchange.hpp)
  // runs the steps up to a depth, acts, and runs the rest.
  std::vector<uint32_t> depth_steps;
  // Per step: the values [first, second) it allocated (the value buffer is allocated in step
  // order, and a step reads and writes only its own values and earlier ones). Once step k's
  // backward is done no step left to run backward touches them, so a clearing backward
  // (GradientSlots::Clear) zeroes their gradients there, while they are still in cache.
  // Steps planned together (one call of the builder) list their values with the first of
  // them and an empty range with the others. Empty for a plan built without it: a clearing
  // backward then zeroes every gradient at its end.
  std::vector<std::pair<uint32_t, uint32_t>> step_values;
  std::vector<OutputRef> outputs;
  // The data facts' values [0, hot_only_facts) are read by no step but one-hot transforms
  // (TransformSum::one_hot_inputs), which read them only for a row that is not one-hot, and
  // no step writes their gradients (exec/plan_hot_facts.cpp; 0: some step may). A pass from
  // sparse facts whose one-hot rows are all one-hot then writes neither the values nor
  // their gradients' zeros.
  uint32_t hot_only_facts = 0;
  // Per sample: value offset of each local atom (for inspection).
  std::vector<std::vector<uint32_t>> atom_offsets;
  std::vector<std::vector<Shape>> atom_shapes;
  // Per plan rewrite (exec/rewrites/registry.hpp): the rule groups it changed.
  RewriteCounts rewrites{};
  // The fixed weights the fold-zero-literals rewrite left out because they were zero when
  // the plan was built: forward refuses to run the plan once one of them is not (the
  // plain plan would then differ).
  std::vector<uint32_t> folded_zero_weights;
  // The same for the fixed weights the drop-unit-weights rewrite left out because they
  // multiplied as the identity in that mode (multiplies_as_identity).
  std::vector<std::pair<uint32_t, WeightMode>> dropped_unit_weights;
  size_t num_samples() const { return atom_offsets.size(); }
};

struct PlanOptions {
  // Members that come in the order a step needs (attention's n^2 pair atoms: each fed by
  // one ground rule, listed in atom order; softmax segments already contiguous) are taken
  // as they are, after one pass that checks the order, instead of being counted, indexed
  // and sorted into it; members that form a grid listed the other way round (full
  // attention's scores, key by key, ordered query by query) are transposed in strips. The
  // plan is the same either way (tests compare both).
  bool in_order_shortcuts = true;
  // Off: the gradients of the data facts (the values of plan.data) may be left unwritten,
  // for callers that read only parameter gradients (training). A GCN's first layer then
  // skips its dL/dX GEMM over the node features. Learnable example facts keep theirs.
  bool fact_gradients = true;
  // On: a fused atom sum (exec/atom_sum.hpp) with a ReLU or identity activation keeps its
  // outputs in its sums' slot (ReLU's backward needs only the sign, which the output keeps):
  // a slot less per atom, values and gradients. Where each atom's one input is a row of a
  // rule group's own per-head sums (a GCN layer's rules merged into one group,
  // W (x_self + sum x_nbr): merge_shared_weight_rules), the atoms are those rows (AtomGroup::in_input_rows):
  // no slot of their own at all, and no pass copying the sums. The atoms' gradient slots then end a pass
  // holding dL/d(pre-activation), not dL/d(atom value): for callers that read parameter
  // gradients and outputs only (training, evaluation), never for inspection. A batch-
  // normalised group with a ReLU or identity keeps its outputs in the slot of its scaled and
  // shifted values likewise (out_off == pre_off).
  bool in_place_atoms = false;
  // On: a rule whose value is its one input's, unchanged (one unweighted, unnegated,
  // untransposed literal, a combination and aggregation that are the identity on one value
  // with one grounding per head, no offset, identity activation, no head weight, no
  // softmax: a GIN layer's `in(I) :- h(I)`) gets no slots and no step; its head atoms read
  // the input where it lies (exec/plan_alias_rules.cpp). Two slots fewer per node and GIN
  // layer, values and gradients. Its rule neurons then have no values of their own: for
  // callers that read parameter gradients and outputs only (training, evaluation), never
  // for inspection. Such a rule under a matrix head weight instead (a GraphSAGE layer's
  // self rule, `{10,10} h(X) :- e(X).`) keeps its step, whose head weight reads the input's
  // rows where they lie if they lie back to back in head order (DirectProduct::input_rows):
  // its aggregates' gradients are then the input's.
  bool alias_identity_rules = false;
  // On: a TransformSum whose distinct inputs are at least twice its heads sums each head's
  // inputs before the one GEMM (TransformSum::sum_first): a GEMM over the heads instead of
  // the inputs. The same values up to the order of additions; inspection plans keep the
  // per-input rows (each rule neuron's value is shown from them).
  bool transform_sum_first = false;
  // With transform_sum_first: sum first when the distinct inputs are more than this many
  // times the heads. 2 for a query batch's sampled support; a partitioned sample's part
  // (train/ghost_cut.hpp), whose neighbour rules read ghosts the self rules do not and so
  // share no transform with them, sums first whenever the inputs outnumber the heads.
  double transform_sum_first_ratio = 2;
  // On: rules that sum W x into the same atoms through the same weight W and nothing else
  // (a GCN layer's self rule and neighbour rule) are one group, W (x_self + sum x_nbr): one
  // transform of each head's summed inputs. The same values up to the order of additions
  // (W a + W b against W (a + b)). Training plans merge (train/engine.cpp kTrainingPlan:
  // the heads' sums are then the atoms' rows, AtomGroup::in_input_rows), and so does a
  // partitioned sample's part (train/ghost_cut.hpp), where the two rules read different
  // inputs and could share no transform; inspection plans keep each rule's own neurons.
  bool merge_shared_weight_rules = false;
  // On: rules of one depth that end in column vectors for the same heads, in the same
  // order, into atoms that sum them (a GraphSAGE layer's self rule W1 x and neighbour rule
  // W2 avg(x_nbr), the weights on the heads or on the inputs) write one set of rows, the
  // later ones adding their values to the first one's (RuleGroup::adds_to_out): the atoms
  // are then those rows (AtomGroup::in_input_rows) where in_place_atoms allows, not a sum
  // of two inputs each. The same values up to the order of additions
  // (rewrites/shared_head_rows.cpp); the rules' own neurons have no rows of their own: for
  // training and evaluation only.
  bool share_head_rows = false;
  // Without fact_gradients: the data facts at this value offset and after still take their
  // gradients (a partitioned sample's ghosts, laid out last, send theirs home).
  uint32_t data_gradients_from = 0xFFFFFFFFu;
  // Off: plan.data stays empty (the data facts still get their offsets), for callers that
  // give every pass the values themselves (training reads its networks' own): a query
  // batch's support would otherwise copy its ~100k feature rows once more per step.
  bool fact_values = true;
  // The plan rewrites (exec/rewrites/registry.hpp) not to apply: all of them set gives the
  // plain plan (tests compare it with the rewritten one).
  RewriteSet disabled_rewrites{};
};

// Merges sample networks into one plan (same-depth, same-rule groups concatenated) and
// infers every shape. Throws lrnn::Error (Shape) naming the rule, literal and shapes.
Plan build_plan(const neural::TemplateModel& model,
                const std::vector<const neural::SampleNetwork*>& samples, const PlanOptions& options = {});

// Neuron values and gradients live in cache-line aligned buffers. Eigen's vector kernels
// start with a scalar prologue up to the first aligned element, so the same plan run in a
// buffer at another alignment (a workspace reallocated for a bigger plan in between) would
// associate its sums differently and differ in the last bits; aligned starts make reruns
// bit-identical.
// Buffers of several MB (attention's n^2 scores) start on a 2 MB boundary and ask for huge
// pages (exec/huge_pages.cpp): a new sequence length's first pass then takes a page fault
// per 2 MB instead of per 4 KB, where the faults cost as much as the pass.
inline constexpr size_t kHugePageBytes = size_t{2} << 20;
void advise_huge_pages(void* p, size_t bytes) noexcept;
void collapse_huge_pages(const void* p, size_t bytes) noexcept;
template <class T>
struct CacheAlignedAllocator {
  using value_type = T;
  static constexpr std::align_val_t kAlignment{64}, kHugeAlignment{kHugePageBytes};
  CacheAlignedAllocator() = default;
  template <class U>
  CacheAlignedAllocator(const CacheAlignedAllocator<U>&) noexcept {}
  static bool huge(size_t n) { return n * sizeof(T) >= 2 * kHugePageBytes; }
  T* allocate(size_t n) {
    if (!huge(n)) return static_cast<T*>(::operator new(n * sizeof(T), kAlignment));
    void* p = ::operator new(n * sizeof(T), kHugeAlignment);
    advise_huge_pages(p, n * sizeof(T));
    return static_cast<T*>(p);
  }
  void deallocate(T* p, size_t n) noexcept { ::operator delete(p, huge(n) ? kHugeAlignment : kAlignment); }
  friend bool operator==(const CacheAlignedAllocator&, const CacheAlignedAllocator&) { return true; }
};
template <class T>
using AlignedBuffer = std::vector<T, CacheAlignedAllocator<T>>;
using AlignedValues = AlignedBuffer<double>;

// The values and gradients of a plan's neurons in the scalar type T (exec/scalar.hpp); the
// plan's offsets count entries, so one plan serves both types. `param_grads` is where a
// float backward accumulates the parameter gradients before adding them into the caller's
// double vector (unused for double, which accumulates there directly).
// `in_shapes`, `in` and `gin` are the per-group argument lists of the combination kernels,
// kept here so that a pass allocates nothing once its workspace has run the plan.
template <class T>
struct BasicWorkspace {
  AlignedBuffer<T> values, grads;
  // The plan (its serial) and the caller's data (DataSource) of the last forward_prepare
  // given a source, and whether that pass found the same ones before it: then the data
  // facts' values and what the plan computes from them alone (TransformSum::constant_sums)
  // are still here (nothing but that copy writes the data's slots; learnable example facts
  // and ghosts are written every pass anyway), and neither is written again. Who replaces
  // `values` wholesale resets the key.
  struct DataKey {
    uint64_t plan = 0, set = 0, sample = 0;
    bool operator==(const DataKey&) const = default;
  } data_key;
  bool data_held = false;
  // The last forward_prepare wrote each one-hot group's row columns (TransformSum::hot_off)
  // itself, from sparse fact values (SparseFacts): the group's kernel reads them there
  // instead of checking its rows. Like the data, they are not written again while held.
  bool hot_rows_written = false;
  // Every entry of `grads` is 0: a clearing backward left it so (exec/clear_gradients.hpp),
  // and the next pass need not zero it. Any other backward sets it false.
  bool grads_zero = false;
  std::vector<T> param_grads;
  std::vector<Shape> in_shapes;
  std::vector<const T*> in;
  std::vector<T*> gin;
};
using Workspace = BasicWorkspace<double>;
using Workspace32 = BasicWorkspace<float>;

// The parameters as the kernels read them: the infos of `params` with values of type T
// (the parameters' own values for double, a float mirror of them for float).
template <class T>
struct ParamView {
  const neural::Parameters* params = nullptr;
  const T* values = nullptr;
  // Laid out as `values`, each parameter's block transposed (cols x rows) where the small
  // GEMMs may take it (kSmallGemmMaxTransposed entries at most; bigger blocks unset), when
  // the view's maker keeps them (ParamMirror): the GEMMs read W^T from here instead of
  // checking a cached transpose against W on every call. Null: none kept.
  const T* transposed_values = nullptr;
  const neural::ParamInfo& info(uint32_t p) const { return params->info(p); }
  const T* data(uint32_t p) const { return values + params->info(p).offset; }
  const T* transposed(uint32_t p) const {
    return transposed_values ? transposed_values + params->info(p).offset : nullptr;
  }
  size_t size() const { return params->size(); }
};
inline ParamView<double> view_of(const neural::Parameters& params) { return {&params, params.values.data()}; }

// A float copy of the (double, master) parameters for float execution: refreshed from them
// before every pass that reads them (after each optimizer step), never written back.
struct ParamMirror {
  std::vector<float> values, transposed;
  // The float values and their transposes (ParamView::transposed_values), made
  // once per refresh: a batch's passes each read them many times.
  ParamView<float> refresh(const neural::Parameters& params);
};

// Computes every neuron value of the plan. `example_params` (may be null: the facts keep
// their written values) is the dataset's block of learnable example facts.
void forward(const Plan& plan, const neural::Parameters& params, Workspace& ws,
             const neural::Parameters* example_params = nullptr);
// The same with `data` in place of plan.data (a plan shared by samples whose networks are
// identical up to their example fact values, laid out as plan.data would hold them), in
// the scalar type T: the fact data and learnable example facts are converted to T as they
// are copied into the workspace (the copy forward makes anyway), the parameters are read
// through `params` (double: view_of, float: a ParamMirror).
void forward(const Plan& plan, std::span<const double> data, const neural::Parameters& params, Workspace& ws,
             const neural::Parameters* example_params = nullptr);
template <class T>
void forward(const Plan& plan, std::span<const double> data, const ParamView<T>& params, BasicWorkspace<T>& ws,
             const neural::Parameters* example_params = nullptr);
// Given ws.grads seeded with dL/d(output values) (after forward, with every other entry
// zero), propagates to every neuron and ACCUMULATES parameter gradients into param_grads,
// and those of the learnable example facts into example_grads (if given, laid out as the
// dataset's block `example_params`). In float the parameter gradients of the pass are
// summed in float (ws.param_grads) and then added into the double vectors.
void backward(const Plan& plan, const neural::Parameters& params, Workspace& ws,
              std::vector<double>& param_grads, const neural::Parameters* example_params = nullptr,
              std::vector<double>* example_grads = nullptr);
// How a float pass hands over its parameter gradients: added into param_grads (Add), or
// left in ws.param_grads as the pass summed them, param_grads untouched (KeepFloat: a
// per-sample gradient then costs no zero-fill and no pass over a double vector; converting
// them later gives the values Add would have added). A double pass always adds.
enum class FloatGradients : uint8_t { Add, KeepFloat };
// How a backward pass leaves the value gradients ws.grads: as computed (Keep: for callers
// that read them, e.g. inspection), or all zero again, each step's zeroed as soon as no step
// left needs them (Clear: for callers that read only parameter gradients, i.e. training;
// the next pass's zero_gradients then writes nothing; exec/clear_gradients.hpp).
enum class GradientSlots : uint8_t { Keep, Clear };
// Where a backward pass stops for its caller: at each step index of `at` (descending), once
// every step from it on is done and before the steps below it run, `call(index)`; the
// caller may then add to ws.grads (a partitioned sample's ghost gradients coming home,
// train/ghost_exchange.hpp) and read them.
struct BackwardPauses {
  std::span<const uint32_t> at;
  const std::function<void(uint32_t)>* call = nullptr;
};
template <class T>
void backward(const Plan& plan, const ParamView<T>& params, BasicWorkspace<T>& ws, std::vector<double>& param_grads,
              const neural::Parameters* example_params = nullptr, std::vector<double>* example_grads = nullptr,
              FloatGradients float_gradients = FloatGradients::Add, GradientSlots slots = GradientSlots::Keep,
              BackwardPauses pauses = {});

// The value of output o (0 for a query without a neuron), as a flat row-major array.
template <class T>
std::vector<double> output_value(const Plan& plan, const BasicWorkspace<T>& ws, size_t o);
// The same into `out` (its capacity reused: no allocation once it has held the value).
template <class T>
void copy_output_value(const Plan& plan, const BasicWorkspace<T>& ws, size_t o, std::vector<double>& out);

}  // namespace lrnn::exec
