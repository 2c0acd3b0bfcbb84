// The copies of a set's fact values that training and evaluation passes read
// (SampleSteps::build_fact_copies), and how a pass starts from them (prepare_pass): a float
// copy kept across epochs, dense or sparse, or each network's own double values.
#include <algorithm>
#include <bit>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "lrnn/memory.hpp"
#include "train/engine.hpp"

namespace lrnn::train {

// The fact values (and parameter facts) of sample `local` copied into `ws`, as every
// forward starts: from the float copy of its fact values once there is one, in a float pass
// or (build_exact_float_facts) a float64 one, else from its network's.
template <class T>
void SampleSteps::prepare_pass(const exec::Plan& plan, const PreparedSet& set, uint32_t local,
                               const exec::ParamView<T>& params, exec::BasicWorkspace<T>& ws,
                               const neural::Parameters* example_params) const {
  // A prepared set's data never change: a workspace that last ran this plan on this sample
  // keeps what the plan computes from the data alone (exec::DataSource).
  const exec::DataSource source{set.id, local};
  if (!facts32_begin_.empty() && (std::is_same_v<T, float> || exact_floats_ == ExactFloats::kExact)) {
    if (!sparse_begin_.empty()) return exec::forward_prepare(plan, sparse_facts(local), params, ws, example_params, &source);
    return exec::forward_prepare(plan, float_facts(local), params, ws, example_params, &source);
  }
  exec::forward_prepare(plan, set.networks[local].fact_data, params, ws, example_params, &source);
}
template void SampleSteps::prepare_pass<double>(const exec::Plan&, const PreparedSet&, uint32_t,
                                                const exec::ParamView<double>&, exec::Workspace&,
                                                const neural::Parameters*) const;
template void SampleSteps::prepare_pass<float>(const exec::Plan&, const PreparedSet&, uint32_t,
                                               const exec::ParamView<float>&, exec::Workspace32&,
                                               const neural::Parameters*) const;

namespace {

// The value ranges `rows` (begin, end pairs) of `table`, one after another: a query
// batch's feature rows, read at random in the whole graph's values, so the rows ahead are
// prefetched.
void gather_rows(const float* table, const std::vector<uint32_t>& rows, float* out) {
  constexpr size_t kAhead = 2 * 16;  // 16 rows
  for (size_t k = 0; k < rows.size(); k += 2) {
    if (k + kAhead < rows.size())
      for (const float* line = table + rows[k + kAhead]; line < table + rows[k + kAhead + 1]; line += 16)
        __builtin_prefetch(line);
    out = std::copy(table + rows[k], table + rows[k + 1], out);
  }
}

// Whether x is kept in a sparse copy: every float but +0 (-0 and NaN are kept).
bool nonzero_float(double x) { return std::bit_cast<uint32_t>(float(x)) != 0; }

}  // namespace

// The float copy kept sparse (build_float_facts), from the networks' own fact values.
void SampleSteps::build_sparse_facts(const PreparedSet& set, size_t nonzero) {
  const std::string what = "the sparse float copy of the fact values of " + std::to_string(set.size()) + " samples";
  facts32_memory_.resize(uint64_t(nonzero) * (sizeof(uint32_t) + sizeof(float)) + uint64_t(set.size() + 1) * sizeof(size_t),
                         what);
  sparse_positions_.reserve(nonzero);
  sparse_values_.reserve(nonzero);
  sparse_begin_.assign(1, 0);
  for (const neural::SampleNetwork& net : set.networks) {
    for (size_t k = 0; k < net.fact_data.size(); ++k)
      if (nonzero_float(net.fact_data[k])) {
        sparse_positions_.push_back(static_cast<uint32_t>(k));
        sparse_values_.push_back(float(net.fact_data[k]));
      }
    sparse_begin_.push_back(sparse_positions_.size());
  }
}

void SampleSteps::build_float_facts(const PreparedSet& set) {
  bind(set);
  if (!facts32_begin_.empty()) return;
  std::vector<size_t> begin(set.size() + 1, 0);
  for (size_t i = 0; i < set.size(); ++i) begin[i + 1] = begin[i] + neural::fact_values_size(set.networks[i]);
  // Sparse when its entries (a position and a value: twice a dense value's bytes) are at
  // most an eighth of the values. Not for query batches' supports, whose values are rows
  // of a shared table (value_tables), nor past 2^32 values a sample (32-bit positions).
  if (set.value_tables.empty()) {
    size_t nonzero = 0, largest = 0;
    for (const neural::SampleNetwork& net : set.networks) {
      largest = std::max(largest, net.fact_data.size());
      for (double x : net.fact_data) nonzero += nonzero_float(x);
    }
    if (nonzero <= begin.back() / 8 && largest < (size_t{1} << 32)) {
      build_sparse_facts(set, nonzero);
      facts32_begin_ = std::move(begin);
      return;
    }
  }
  // Held for as long as the copy lives, so that later stages' checks count it (NCI1: 18 MB).
  facts32_memory_.resize(uint64_t(begin.back()) * sizeof(float),
                         "the float copy of the fact values of " + std::to_string(set.size()) + " samples");
  facts32_.resize(begin.back());
  for (size_t i = 0; i < set.size(); ++i) {
    if (i < set.value_tables.size() && set.value_tables[i]) {
      gather_rows(set.value_tables[i], set.value_rows[i], facts32_.data() + begin[i]);
      continue;
    }
    std::copy(set.networks[i].fact_data.begin(), set.networks[i].fact_data.end(), facts32_.begin() + begin[i]);
  }
  facts32_begin_ = std::move(begin);
}

void SampleSteps::build_exact_float_facts(const PreparedSet& set) {
  bind(set);
  if (exact_floats_ != ExactFloats::kUnknown) return;
  exact_floats_ = ExactFloats::kInexact;
  // One sample (a big graph) copies its data once (exec::DataSource), and arrays' value
  // tables are floats already.
  if (set.size() < 2 || !set.value_tables.empty()) return;
  size_t values = 0;
  for (const neural::SampleNetwork& net : set.networks) {
    for (double x : net.fact_data)
      if (double(float(x)) != x) return;  // NaN and the inexact stay double
    values += net.fact_data.size();
  }
  // A speed-up only: not past the limit (build_float_facts then holds its bytes). A copy a
  // float32 pass made is held already: asking for its bytes again would count them twice.
  if (facts32_begin_.empty() && !memory_fits(uint64_t(values) * sizeof(float))) return;
  exact_floats_ = ExactFloats::kExact;
  build_float_facts(set);
}

}  // namespace lrnn::train
