// lrnn.nn.module.gnn: a SequenceModel (include/lrnn/zoo.hpp) over any template text, so
// the GNN layers (python/lrnn/nn/module/gnn) run their generated rules on NumPy arrays
// with the plan cache, backward and per-weight gradients of the transformer zoo.
#include <nanobind/stl/string.h>

#include "bindings.hpp"
#include "lrnn/syntax.hpp"
#include "lrnn/zoo.hpp"

namespace lrnn::python {

void bind_gnn(nb::module_& m) {
  m.def(
      "zoo_template_model",
      [](const std::string& text, const std::string& input, const std::string& output, uint64_t seed) {
        return zoo::SequenceModel(parse_template(text, "<gnn>"), input, output, seed);
      },
      nb::arg("text"), nb::arg("input"), nb::arg("output"), nb::arg("seed") = 1,
      "A ZooSequenceModel running the template `text`: rows of the input array become "
      "`<[row i]> input(i)` facts, the outputs are output(0..n-1).");
}

}  // namespace lrnn::python
