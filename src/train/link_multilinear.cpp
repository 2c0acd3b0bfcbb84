// The multilinear form of a link decoder, found by evaluating its one-link network
// symbolically: every atom's value is a sum of terms, each a coefficient times the
// element-wise product of argument rows, as a column, a row, or summed over its entries
// (what a row times a column gives). Any construct without such a form (a learnable or
// non-scalar weight, an offset, an activation, a soft negation, an aggregation of several
// groundings, a fact other than the arguments' rows) ends the search with nothing, and the
// general decoder plan runs instead.
#include "train/link_multilinear.hpp"

#include <algorithm>
#include <map>

#include "exec/scalar.hpp"  // Eigen, through the header that keeps GCC 12's false AVX-512 warnings out

namespace lrnn::train {

namespace {

enum class Form : uint8_t { Column, Row, Summed };

struct Poly {
  Form form = Form::Column;
  int dim = 1;
  std::vector<MultilinearDecoder::Term> terms;
};

bool same_layout(const Poly& a, const Poly& b) {
  if (a.dim != b.dim) return false;
  if (a.dim == 1) return (a.form == Form::Summed) == (b.form == Form::Summed);  // a 1x1 column is a row
  return a.form == b.form;
}

void scale(Poly& p, double c) {
  for (auto& t : p.terms) t.coefficient *= c;
}

// The element-wise product of two polynomials of one layout (distributed over their terms).
Poly times(const Poly& a, const Poly& b, Form form) {
  Poly out{form, a.dim, {}};
  for (const auto& s : a.terms)
    for (const auto& t : b.terms) {
      MultilinearDecoder::Term m{s.coefficient * t.coefficient, s.slots};
      m.slots.insert(m.slots.end(), t.slots.begin(), t.slots.end());
      out.terms.push_back(std::move(m));
    }
  return out;
}

class Symbolic {
 public:
  Symbolic(const neural::TemplateModel& model, const neural::SampleNetwork& net,
           const std::vector<uint32_t>& slot_atom, const std::vector<neural::Shape>& row_shape)
      : model_(model), net_(net), row_shape_(row_shape) {
    for (uint32_t i = 0; i < slot_atom.size(); ++i)
      if (slot_atom[i] != neural::kNone) slot_of_[slot_atom[i]] = i;
    for (uint32_t k = 0; k < net.num_ground_rules(); ++k) rules_of_[net.head[k]].push_back(k);
  }

  std::optional<Poly> atom(uint32_t a) {
    if (auto it = slot_of_.find(a); it != slot_of_.end()) return slot(it->second);
    if (net_.atom_fact[a] != neural::kNone || net_.atom_predicate[a] == neural::kNone) return std::nullopt;
    const neural::PredicateSpec& p = model_.predicates[net_.atom_predicate[a]];
    if (p.offset != neural::kNoParam || p.norm != neural::kNoParam ||
        p.activation.kind != neural::ActivationKind::Identity)
      return std::nullopt;
    // The atom's inputs: one value per rule (its groundings aggregated).
    std::map<uint32_t, std::vector<uint32_t>> by_rule;
    for (uint32_t k : rules_of_[a]) by_rule[net_.rule[k]].push_back(k);
    std::vector<Poly> values;
    for (const auto& [r, groundings] : by_rule) {
      if (groundings.size() != 1) return std::nullopt;
      std::optional<Poly> v = rule(r, groundings[0]);
      if (!v) return std::nullopt;
      values.push_back(std::move(*v));
    }
    if (values.empty()) return std::nullopt;
    if (values.size() == 1) {
      if (!neural::single_value_identity(p.combination) || (p.scalars_only && values[0].dim != 1)) return std::nullopt;
      return std::move(values[0]);
    }
    if (p.combination != neural::AggregationKind::Sum) return std::nullopt;
    return sum(values);
  }

 private:
  std::optional<Poly> slot(uint32_t i) const {
    const neural::Shape s = row_shape_[i];
    Poly p;
    if (s.cols == 1) {
      p.form = Form::Column;
      p.dim = s.rows;
    } else if (s.rows == 1) {
      p.form = Form::Row;
      p.dim = s.cols;
    } else {
      return std::nullopt;
    }
    p.terms.push_back({1.0, {i}});
    return p;
  }

  static std::optional<Poly> sum(std::vector<Poly>& values) {
    Poly out = std::move(values[0]);
    for (size_t v = 1; v < values.size(); ++v) {
      if (!same_layout(out, values[v])) return std::nullopt;
      out.terms.insert(out.terms.end(), values[v].terms.begin(), values[v].terms.end());
    }
    return out;
  }

  // Ground rule k of template rule r (the only grounding of its head).
  std::optional<Poly> rule(uint32_t r, uint32_t k) {
    const neural::RuleSpec& spec = model_.rules[r];
    if (spec.head_weight != neural::kNoParam || spec.offset != neural::kNoParam || spec.softmax ||
        spec.activation.kind != neural::ActivationKind::Identity ||
        !neural::single_value_identity(spec.aggregation.kind))
      return std::nullopt;
    std::vector<Poly> in;
    for (size_t j = 0; j < spec.inputs.size(); ++j) {
      const neural::InputSpec& input = spec.inputs[j];
      if (input.soft_negated) return std::nullopt;
      std::optional<Poly> v = atom(net_.inputs[net_.inputs_begin[k] + j]);
      if (!v) return std::nullopt;
      if (input.weight != neural::kNoParam) {  // a fixed scalar scales; anything else has no such form
        const neural::ParamInfo& w = model_.params.info(input.weight);
        if (w.learnable || !w.shape.scalar()) return std::nullopt;
        scale(*v, model_.params.data(input.weight)[0]);
      }
      if (input.transposed && v->form != Form::Summed)
        v->form = v->form == Form::Column ? Form::Row : Form::Column;
      in.push_back(std::move(*v));
    }
    if (in.empty()) return std::nullopt;
    if (in.size() == 1) return one_input(spec.combination) ? std::optional<Poly>(std::move(in[0])) : std::nullopt;
    switch (spec.combination) {
      case neural::CombinationKind::Sum:
        return sum(in);
      case neural::CombinationKind::ElProduct:
        return product(in, false);
      case neural::CombinationKind::Product:
        return product(in, true);
      default:
        return std::nullopt;
    }
  }

  // Whether the combination of one value is that value.
  static bool one_input(neural::CombinationKind c) {
    using neural::CombinationKind;
    return c == CombinationKind::Sum || c == CombinationKind::Avg || c == CombinationKind::Max ||
           c == CombinationKind::Min || c == CombinationKind::Product || c == CombinationKind::ElProduct;
  }

  // Element-wise products of columns (or of rows); `matrix`: the matrix product, which
  // is element-wise only for 1x1 values and otherwise a row times a column (a sum).
  static std::optional<Poly> product(std::vector<Poly>& in, bool matrix) {
    if (matrix && in.size() == 2 && in[0].dim > 1) {
      if (in[0].form != Form::Row || in[1].form != Form::Column || in[0].dim != in[1].dim) return std::nullopt;
      return times(in[0], in[1], Form::Summed);
    }
    Poly out = std::move(in[0]);
    if (out.form == Form::Summed || (matrix && out.dim != 1)) return std::nullopt;
    for (size_t v = 1; v < in.size(); ++v) {
      if (!same_layout(out, in[v]) || in[v].form == Form::Summed) return std::nullopt;
      out = times(out, in[v], out.form);
    }
    return out;
  }

  const neural::TemplateModel& model_;
  const neural::SampleNetwork& net_;
  std::map<uint32_t, uint32_t> slot_of_;  // fact atom -> decoder input
  const std::vector<neural::Shape>& row_shape_;
  std::map<uint32_t, std::vector<uint32_t>> rules_of_;  // head atom -> its ground rules
};

}  // namespace

std::optional<MultilinearDecoder> multilinear_decoder(const neural::TemplateModel& model,
                                                      const neural::SampleNetwork& one_link,
                                                      const std::vector<uint32_t>& slot_atom,
                                                      const std::vector<neural::Shape>& row_shape) {
  if (!one_link.pair_blocks.empty() || one_link.query_atoms.size() != 1 || one_link.query_atoms[0].size() != 1)
    return std::nullopt;
  Symbolic symbolic(model, one_link, slot_atom, row_shape);
  std::optional<Poly> score = symbolic.atom(one_link.query_atoms[0][0]);
  if (!score || (score->form != Form::Summed && score->dim != 1) || score->terms.empty()) return std::nullopt;
  MultilinearDecoder d;
  d.dim = score->dim;
  d.terms = std::move(score->terms);
  for (auto& t : d.terms) std::sort(t.slots.begin(), t.slots.end());
  return d;
}

template <class T>
double multilinear_score(const MultilinearDecoder& d, const T* const* rows) {
  using Row = Eigen::Map<const Eigen::Matrix<T, Eigen::Dynamic, 1>>;
  const int n = d.dim;
  double score = 0;
  for (const auto& t : d.terms) {
    const uint32_t* s = t.slots.data();
    T sum = 0;
    switch (t.slots.size()) {  // Eigen's reductions keep several partial sums in vector registers
      case 1:
        sum = Row(rows[s[0]], n).sum();
        break;
      case 2:
        sum = Row(rows[s[0]], n).dot(Row(rows[s[1]], n));
        break;
      case 3:
        sum = Row(rows[s[0]], n).cwiseProduct(Row(rows[s[1]], n)).dot(Row(rows[s[2]], n));
        break;
      default:
        for (int e = 0; e < n; ++e) {
          T p = rows[s[0]][e];
          for (size_t q = 1; q < t.slots.size(); ++q) p *= rows[s[q]][e];
          sum += p;
        }
    }
    score += t.coefficient * double(sum);
  }
  return score;
}

template <class T>
void multilinear_backward(const MultilinearDecoder& d, const T* const* rows, double g, T* const* grads) {
  const int n = d.dim;
  for (const auto& t : d.terms) {
    const T gc = T(g * t.coefficient);
    const uint32_t* s = t.slots.data();
    const size_t m = t.slots.size();
    if (m == 1) {
      for (int e = 0; e < n; ++e) grads[s[0]][e] += gc;
    } else if (m == 2) {
      const T *a = rows[s[0]], *b = rows[s[1]];
      T *ga = grads[s[0]], *gb = grads[s[1]];
      for (int e = 0; e < n; ++e) ga[e] += gc * b[e];
      for (int e = 0; e < n; ++e) gb[e] += gc * a[e];
    } else if (m == 3) {
      const T *a = rows[s[0]], *b = rows[s[1]], *c = rows[s[2]];
      T *ga = grads[s[0]], *gb = grads[s[1]], *gc3 = grads[s[2]];
      for (int e = 0; e < n; ++e) ga[e] += gc * b[e] * c[e];
      for (int e = 0; e < n; ++e) gb[e] += gc * a[e] * c[e];
      for (int e = 0; e < n; ++e) gc3[e] += gc * a[e] * b[e];
    } else {
      for (size_t q = 0; q < m; ++q) {
        T* to = grads[s[q]];
        for (int e = 0; e < n; ++e) {
          T p = gc;
          for (size_t r = 0; r < m; ++r)
            if (r != q) p *= rows[s[r]][e];
          to[e] += p;
        }
      }
    }
  }
}

template double multilinear_score<double>(const MultilinearDecoder&, const double* const*);
template double multilinear_score<float>(const MultilinearDecoder&, const float* const*);
template void multilinear_backward<double>(const MultilinearDecoder&, const double* const*, double, double* const*);
template void multilinear_backward<float>(const MultilinearDecoder&, const float* const*, double, float* const*);

}  // namespace lrnn::train
