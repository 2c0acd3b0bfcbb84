// The parts of the lrnn._core extension; each python/src/*.cpp defines one bind_* function
// and module.cpp calls them in order.
#pragma once

#include <nanobind/nanobind.h>

namespace lrnn::python {

namespace nb = nanobind;

void bind_errors(nb::module_& m);  // lrnn::Error -> lrnn.errors.LrnnError
void bind_syntax(nb::module_& m);  // AST types, parse_* / print_*
void bind_logic(nb::module_& m);   // answer_query
void bind_zoo(nb::module_& m);     // attention/transformer generators, SequenceModel (zoo stage)
void bind_gnn(nb::module_& m);     // SequenceModel over template text (lrnn.nn.module.gnn)
void bind_engine(nb::module_& m);  // lrnn::Model (the public API): lrnn.Model
void bind_rasp(nb::module_& m);    // lrnn._core.rasp: RASP programs (lrnn.rasp)
void bind_draw(nb::module_& m);    // pictures: template_dot, sample_dot, render_dot (lrnn.draw)
void bind_datasets(nb::module_& m);  // SampleSet, read_tu (lrnn.datasets)
void bind_distributed(nb::module_& m);  // lrnn._core.distributed: the MPI job (lrnn.distributed)


}  // namespace lrnn::python
