// A link decoder that is a sum of element-wise products of its argument rows
// (docs/big_graphs.md "Link prediction", the decoder's fast path): the dot product
// h(X)^T h(Y), DistMult's sum of e(S) * r(R) * e(O), ComplEx's four such terms with fixed
// signs. Such a score is computed straight from the encoder's rows, and its gradient
// added straight into theirs, instead of copying each link's rows into a small network
// and back. A decoder of any other form (a learnable weight, an activation, an offset, a
// norm such as TransE's) runs through the general decoder plan.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "neural/network.hpp"
#include "neural/template_model.hpp"

namespace lrnn::train {

// score = sum over terms t of coefficient_t * sum over e of prod over slots s of t: row_s[e],
// every row of `dim` entries; a slot is a decoder input (LinkDecoder::inputs index).
struct MultilinearDecoder {
  struct Term {
    double coefficient = 1;       // the product of the fixed scalar weights on its path
    std::vector<uint32_t> slots;  // with repetition (h(X)^T h(X) reads slot 0 twice)
  };
  int dim = 0;
  std::vector<Term> terms;
};

// The decoder of one link (`one_link`: the network of one link over placeholder argument
// facts, `slot_atom[i]` the fact atom of decoder input i or kNone, `row_shape[i]` its
// value's shape) as a MultilinearDecoder, or nothing when the network computes anything
// else. Reads the fixed weights' current values from `model`.
std::optional<MultilinearDecoder> multilinear_decoder(const neural::TemplateModel& model,
                                                      const neural::SampleNetwork& one_link,
                                                      const std::vector<uint32_t>& slot_atom,
                                                      const std::vector<neural::Shape>& row_shape);

// One link's score from its rows (rows[s]: slot s's `dim` values).
template <class T>
double multilinear_score(const MultilinearDecoder& d, const T* const* rows);

// Adds g * d(score)/d(row_s) into grads[s] for every slot s the decoder reads.
template <class T>
void multilinear_backward(const MultilinearDecoder& d, const T* const* rows, double g, T* const* grads);

}  // namespace lrnn::train
