#include "exec/transform_sum.hpp"

#include "exec/one_hot.hpp"
#include "exec/prefetch.hpp"
#include "exec/row_sum.hpp"
#include "exec/small_gemm.hpp"

#include <algorithm>
#include <cstring>

namespace lrnn::exec {

namespace {

struct Dims {
  Eigen::Index u, in, out;  // distinct inputs, input entries, output entries
};

Dims dims_of(const RuleGroup& G) {
  const InputBlock& B = G.inputs[0];
  return {static_cast<Eigen::Index>(G.transform.sources.size()), B.raw_shape.size(), B.wout_shape.size()};
}


// agg[h] = sum over head h's groundings k of rows[row_of[k]] (then scaled for an average),
// summed in grounding order as the gathered aggregation does. W > 0: rows of W entries,
// known at compile time (the common widths: the row loops unroll into a few vector ops,
// where a runtime width costs a loop and its remainder per row; same additions, same bits).
// How many groundings ahead the rows are prefetched. A big graph's transformed rows (200k
// nodes x 32 floats: 25 MB) do not fit in the caches and its edges reach them in no order
// the hardware prefetcher can follow, so without hints each grounding waited on main
// memory for its row; 16 groundings ahead covers that latency at a few ns per row.
constexpr uint32_t kRowsAhead = 16;

// Hints that row `k + kRowsAhead` of the groundings (if any) is read (written: for_write)
// soon.
template <class T>
inline void prefetch_row_ahead(const TransformSum& t, uint32_t k, uint32_t total, Eigen::Index out, const T* rows,
                               bool for_write) {
  if (k + kRowsAhead < total)
    prefetch_bytes(rows + size_t(t.row_of[k + kRowsAhead]) * out, sizeof(T) * size_t(out), for_write);
}

// out[h] = scale(h) * the sum over head h's groundings k of row(k) (width entries, W when
// W > 0), summed in grounding order (as the gathered aggregation does); ahead(k) hints the
// row a later grounding reads. A head without groundings gets zeros. With `add`, out[h] +=
// that instead (RuleGroup::adds_to_out: the atoms' sum of two rules' values, in the order
// the atom would add them).
template <int W, class T, class Row, class Ahead>
void sum_per_head(const RuleGroup& G, Eigen::Index runtime_width, T* out, Row row, Ahead ahead, bool add = false) {
  const Eigen::Index width = W > 0 ? W : runtime_width;
  std::vector<T> heap(W > 0 || !add ? 0 : size_t(width));
  for (uint32_t h = 0; h < G.m; ++h) {
    T* y = out + size_t(h) * width;
    const uint32_t begin = G.head_segments[h], end = G.head_segments[h + 1];
    if (begin == end) {
      if (!add) std::fill(y, y + width, T(0.0));
      continue;
    }
    // Summed in registers for a compile-time width, else in the output row itself (or, when
    // adding to it, a row of its own).
    T acc[W > 0 ? W : 1];
    T* sum = W > 0 ? acc : add ? heap.data() : y;
    sum_rows<W>(
        begin, end,
        [&](uint32_t k) {
          ahead(k, end);
          return row(k);
        },
        sum, width);
    const T scale = head_scale(G, h);
    if (add)
      for (Eigen::Index e = 0; e < width; ++e) y[e] += scale != 1.0 ? sum[e] * scale : sum[e];
    else
      for (Eigen::Index e = 0; e < width; ++e) y[e] = scale != 1.0 ? sum[e] * scale : sum[e];
  }
}

// agg[h] = (or +=, with `add`) the (scaled) sum of the transformed rows of head h's groundings.
template <int W, class T>
void sum_rows_per_head(const RuleGroup& G, Eigen::Index out, const T* rows, T* agg, bool add) {
  const TransformSum& t = G.transform;
  const uint32_t total = G.head_segments.empty() ? 0 : G.head_segments.back();
  sum_per_head<W>(
      G, out, agg, [&](uint32_t k) { return rows + size_t(t.row_of[k]) * out; },
      [&](uint32_t k, uint32_t) { prefetch_row_ahead(t, k, total, out, rows, false); }, add);
}

template <class T>
void sum_rows_per_head(const RuleGroup& G, Eigen::Index out, const T* rows, T* agg, bool add = false) {
  with_row_width(out, [&](auto w) { sum_rows_per_head<decltype(w)::value>(G, out, rows, agg, add); });
}

// grows[row_of[k]] += scale(h) gagg[h] for every grounding k of every head h.
template <class T>
void scatter_heads_to_rows(const RuleGroup& G, Eigen::Index out, const T* gagg, T* grows) {
  const TransformSum& t = G.transform;
  const uint32_t total = G.head_segments.empty() ? 0 : G.head_segments.back();
  for (uint32_t h = 0; h < G.m; ++h) {
    const T scale = head_scale(G, h);
    const T* gy = gagg + size_t(h) * out;
    for (uint32_t k = G.head_segments[h]; k < G.head_segments[h + 1]; ++k) {
      prefetch_row_ahead(t, k, total, out, grows, true);
      add_scaled_row<0>(grows + size_t(t.row_of[k]) * out, gy, scale, out);
    }
  }
}

// The same by rows (TransformSum::row_begin): grows[r] += scale(h) gagg[h] for the heads h
// of row r's groundings, in grounding order (a sum's rows added in registers, W > 0, and
// written once). The heads' gradient rows are read at random and fetched ahead.
template <int W, class T>
void gather_heads_to_rows(const RuleGroup& G, Eigen::Index runtime_out, const T* gagg, T* grows) {
  const TransformSum& t = G.transform;
  const Eigen::Index out = W > 0 ? W : runtime_out;
  const uint32_t rows = static_cast<uint32_t>(t.row_begin.size() - 1), total = t.row_begin.back();
  const uint32_t* heads = t.row_heads.data();
  const auto head_row = [&](uint32_t j) {
    if (j + kRowsAhead < total) prefetch_bytes(gagg + size_t(heads[j + kRowsAhead]) * out, sizeof(T) * size_t(out));
    return gagg + size_t(heads[j]) * out;
  };
  for (uint32_t r = 0; r < rows; ++r) {
    const uint32_t begin = t.row_begin[r], end = t.row_begin[r + 1];
    T* gx = grows + size_t(r) * out;
    if (G.aggregation != AggregationKind::Avg) {  // every head's scale is 1
      add_rows<W>(begin, end, head_row, gx, out);
      continue;
    }
    for (uint32_t j = begin; j < end; ++j) add_scaled_row<W>(gx, head_row(j), T(head_scale(G, heads[j])), out);
  }
}

template <class T>
void gather_heads_to_rows(const RuleGroup& G, Eigen::Index out, const T* gagg, T* grows) {
  with_row_width(out, [&](auto w) { gather_heads_to_rows<decltype(w)::value>(G, out, gagg, grows); });
}

// Hints that the input row of grounding k + kRowsAhead (if any), `in` entries where its
// source lies, is read (written: for_write) soon.
template <class T>
inline void prefetch_input_ahead(const TransformSum& t, uint32_t k, uint32_t end, Eigen::Index in, const T* v,
                                 bool for_write) {
  if (k + kRowsAhead < end) prefetch_bytes(v + t.sources[t.row_of[k + kRowsAhead]], sizeof(T) * size_t(in), for_write);
}

// Sum first (TransformSum::sum_first): s[h] = scale(h) * the sum of head h's inputs, read
// where they live (the inputs' rows, W entries wide when W > 0), summed in grounding order.
template <int W, class T>
void sum_inputs_per_head(const RuleGroup& G, Eigen::Index in, const T* v, T* s) {
  const TransformSum& t = G.transform;
  sum_per_head<W>(
      G, in, s, [&](uint32_t k) { return v + t.sources[t.row_of[k]]; },
      [&](uint32_t k, uint32_t end) { prefetch_input_ahead(t, k, end, in, v, false); });
}

// Sum first, backward: every input of head h gets scale(h) * gs[h] added, in member order.
// A big graph's inputs (a partitioned part's ghosts and neighbours) are rows spread over
// the buffer: each is fetched ahead for writing, and W (> 0) fixes the row loop's width.
template <int W, class T>
void scatter_heads_to_inputs(const RuleGroup& G, Eigen::Index runtime_in, const T* gs, T* g) {
  const TransformSum& t = G.transform;
  const Eigen::Index in = W > 0 ? W : runtime_in;
  const uint32_t total = G.head_segments.empty() ? 0 : G.head_segments.back();
  for (uint32_t h = 0; h < G.m; ++h) {
    const T scale = head_scale(G, h);
    const T* gy = gs + size_t(h) * in;
    for (uint32_t k = G.head_segments[h]; k < G.head_segments[h + 1]; ++k) {
      prefetch_input_ahead(t, k, total, in, g, true);
      add_scaled_row<W>(g + t.sources[t.row_of[k]], gy, scale, in);
    }
  }
}

// One-hot inputs (TransformSum::one_hot_inputs): T[r] = W's column k_r (W is out x in, row
// major) for the rows whose input is one-hot at k_r, up to the first that is not; returns
// how many rows that is. The inputs are read where they lie, not gathered; each row's k_r
// is left at hot_off for backward, and -1 after them (exact in either scalar type). With
// `written`, the columns are at hot_off already (write_hot_rows) and the rows are not read.
template <class T>
Eigen::Index copy_hot_columns(const TransformSum& t, const Dims& d, const T* W, T* v, bool written) {
  T* hot = v + t.hot_off;
  for (Eigen::Index r = 0; r < d.u; ++r) {
    const uint32_t k = !written ? hot_entry(v + t.sources[r], uint32_t(d.in))
                       : hot[r] < T(0) ? kOneHotNone
                                       : static_cast<uint32_t>(hot[r]);
    if (k == kOneHotNone) {
      hot[r] = T(-1);
      return r;
    }
    hot[r] = T(k);
    T* row = v + t.t_off + r * d.out;
    for (Eigen::Index i = 0; i < d.out; ++i) row[i] = W[i * d.in + k];
  }
  return d.u;
}

// Their weight gradient, dW[:, k_r] += gT[r] in row order, for the rows forward found
// one-hot; returns how many rows that is.
template <class T>
Eigen::Index add_hot_column_gradients(const TransformSum& t, const Dims& d, const T* v, const T* g, T* gW) {
  const T* hot = v + t.hot_off;
  for (Eigen::Index r = 0; r < d.u; ++r) {
    if (hot[r] < T(0)) return r;
    const Eigen::Index k = static_cast<Eigen::Index>(hot[r]);
    const T* gt = g + t.t_off + r * d.out;
    for (Eigen::Index i = 0; i < d.out; ++i) gW[i * d.in + k] += gt[i];
  }
  return d.u;
}

// T rows [first, u) = X W^T: one GEMM over those distinct inputs (gathered first unless
// they lie back to back).
template <class T>
void transform_rows(const TransformSum& t, const Dims& d, Eigen::Index first, const T* W, const T* Wt, T* v) {
  if (first == d.u) return;
  if (!t.contiguous)
    for (Eigen::Index r = first; r < d.u; ++r)
      std::memcpy(v + t.x_off + r * d.in, v + t.sources[r], sizeof(T) * d.in);
  product_abt(d.u - first, d.in, d.out, v + t.x_off + first * d.in, W, v + t.t_off + first * d.out, Wt);
}

}  // namespace

namespace {

// write_hot_rows' columns when the entries from `first` on are exactly one per row, in row
// order (one-hot rows without a kept zero: NCI1's node labels): each row's column is then
// its entry's if that entry is 1, else -1, the same as the walk below finds. Each row read
// independently of the one before, without a branch; false (hot left partly written, for
// the walk to overwrite) when the entries are not so. `all_hot` is cleared when a row's
// entry is not 1.
template <class T>
bool write_one_entry_rows(const std::vector<uint32_t>& sources, uint32_t in, std::span<const uint32_t> positions,
                          std::span<const float> values, size_t first, T* hot, bool& all_hot) {
  const size_t u = sources.size();
  if (positions.size() - first < u) return false;
  bool one_each = u == 0 || positions.size() - first == u || positions[first + u] >= sources[u - 1] + in;
  bool ones = true;
  for (size_t r = 0; r < u; ++r) {
    const uint32_t p = positions[first + r];
    one_each &= p >= sources[r] && p - sources[r] < in;
    ones &= values[first + r] == 1.0f;
    hot[r] = values[first + r] == 1.0f ? T(p - sources[r]) : T(-1);
  }
  if (one_each) all_hot = all_hot && ones;
  return one_each;
}

}  // namespace

template <class T>
bool write_hot_rows(const Plan& plan, std::span<const uint32_t> positions, std::span<const float> values, T* v) {
  bool all_hot = true;
  for (const RuleGroup& G : plan.rule_groups) {
    const TransformSum& t = G.transform;
    if (!t.enabled || !t.one_hot_inputs) continue;
    const uint32_t in = static_cast<uint32_t>(G.inputs[0].raw_shape.size());
    T* hot = v + t.hot_off;
    // The rows' sources ascend (TransformSum::sources), as do the positions: one walk.
    size_t i = std::lower_bound(positions.begin(), positions.end(), t.sources.empty() ? 0 : t.sources[0]) -
               positions.begin();
    if (write_one_entry_rows(t.sources, in, positions, values, i, hot, all_hot)) continue;
    for (size_t r = 0; r < t.sources.size(); ++r) {
      const uint32_t begin = t.sources[r], end = begin + in;
      while (i < positions.size() && positions[i] < begin) ++i;
      uint32_t ones = 0, others = 0, at = 0;
      for (; i < positions.size() && positions[i] < end; ++i) {
        const float x = values[i];
        ones += x == 1.0f;
        others += x != 1.0f && x != 0.0f;  // a kept -0 is a 0; NaN is another value
        at = x == 1.0f ? positions[i] - begin : at;
      }
      hot[r] = ones == 1 && others == 0 ? T(at) : T(-1);
      all_hot = all_hot && ones == 1 && others == 0;
    }
  }
  return all_hot;
}

template <class T>
void transform_sum_forward(const RuleGroup& G, const ParamView<T>& params, T* v, bool data_held,
                           bool hot_rows_written) {
  const TransformSum& t = G.transform;
  const InputBlock& B = G.inputs[0];
  const Dims d = dims_of(G);
  if (t.sum_first) {
    if (!(t.constant_sums && data_held))
      with_row_width(d.in, [&](auto w) { sum_inputs_per_head<decltype(w)::value>(G, d.in, v, v + t.s_off); });
    // agg (m x out) = S (m x in) W^T: one GEMM over the heads (added to an earlier rule's
    // rows: RuleGroup::adds_to_out).
    const T *W = params.data(B.weight), *Wt = params.transposed(B.weight);
    if (adds_to_agg(G)) add_product_abt(Eigen::Index(G.m), d.in, d.out, v + t.s_off, W, v + G.agg_off, Wt);
    else product_abt(Eigen::Index(G.m), d.in, d.out, v + t.s_off, W, v + G.agg_off, Wt);
    return;
  }
  if (t.owns_transform) {
    // T (u x out) = X (u x in) W^T: W's columns for one-hot rows, one GEMM over the others.
    const T* W = params.data(B.weight);
    const Eigen::Index hot_rows = t.one_hot_inputs ? copy_hot_columns(t, d, W, v, hot_rows_written) : 0;
    transform_rows(t, d, hot_rows, W, params.transposed(B.weight), v);
  }
  if (!t.rows_are_heads) sum_rows_per_head(G, d.out, v + t.t_off, v + G.agg_off, adds_to_agg(G));
}

template <class T>
void transform_sum_backward(const RuleGroup& G, const ParamView<T>& params, const T* v, T* g,
                            T* pg) {
  const TransformSum& t = G.transform;
  const InputBlock& B = G.inputs[0];
  const Dims d = dims_of(G);
  if (t.sum_first) {
    // dL/dW += gagg^T S
    add_product_atb(d.out, Eigen::Index(G.m), d.in, g + G.agg_off, v + t.s_off, pg + params.info(B.weight).offset);
    if (!t.input_gradients) return;
    // dL/dS = gagg W (m x in, into S's zeroed gradient slot), then onto each head's inputs.
    add_product_ab(Eigen::Index(G.m), d.out, d.in, g + G.agg_off, params.data(B.weight), g + t.s_off);
    with_row_width(d.in, [&](auto w) { scatter_heads_to_inputs<decltype(w)::value>(G, d.in, g + t.s_off, g); });
    return;
  }
  if (!t.row_begin.empty()) gather_heads_to_rows(G, d.out, g + G.agg_off, g + t.t_off);
  else if (!t.rows_are_heads) scatter_heads_to_rows(G, d.out, g + G.agg_off, g + t.t_off);
  if (!t.owns_transform) return;  // the owner, later in backward, takes it from here
  // dL/dW += gT^T X: W's columns for one-hot rows, one GEMM over the others.
  T* gW = pg + params.info(B.weight).offset;
  const Eigen::Index hot_rows = t.one_hot_inputs ? add_hot_column_gradients(t, d, v, g, gW) : 0;
  if (hot_rows < d.u)
    add_product_atb(d.out, d.u - hot_rows, d.in, g + t.t_off + hot_rows * d.out, v + t.x_off + hot_rows * d.in, gW);
  if (!t.input_gradients) return;  // data facts nobody reads the gradients of
  // dL/dX += gT W: in place when the inputs lie back to back, else gathered and scattered.
  add_product_ab(d.u, d.out, d.in, g + t.t_off, params.data(B.weight), g + t.x_off);
  if (!t.contiguous)
    for (Eigen::Index r = 0; r < d.u; ++r) {
      const T* gx = g + t.x_off + r * d.in;
      T* gs = g + t.sources[r];
      for (Eigen::Index e = 0; e < d.in; ++e) gs[e] += gx[e];
    }
}

// The two scalar types of execution (exec/scalar.hpp).
template void transform_sum_forward<double>(const RuleGroup&, const ParamView<double>&, double*, bool, bool);
template bool write_hot_rows<double>(const Plan&, std::span<const uint32_t>, std::span<const float>, double*);
template bool write_hot_rows<float>(const Plan&, std::span<const uint32_t>, std::span<const float>, float*);
template void transform_sum_backward<double>(const RuleGroup&, const ParamView<double>&, const double*, double*, double*);
template void transform_sum_forward<float>(const RuleGroup&, const ParamView<float>&, float*, bool, bool);
template void transform_sum_backward<float>(const RuleGroup&, const ParamView<float>&, const float*, float*, float*);

}  // namespace lrnn::exec
