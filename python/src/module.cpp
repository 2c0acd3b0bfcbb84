// lrnn._core: the C++ engine as a Python extension module. Python code (python/lrnn)
// builds programs and datasets; everything heavy runs behind these bindings.
#include "bindings.hpp"
#include "lrnn/memory.hpp"

NB_MODULE(_core, m) {
  m.doc() = "lrnn's C++ engine (use the lrnn package, not this module directly)";
  // The default memory budget: a fraction of the memory available at import (lrnn/memory.hpp).
  lrnn::default_memory_limit();
  lrnn::python::bind_errors(m);
  lrnn::python::bind_syntax(m);
  lrnn::python::bind_logic(m);
  lrnn::python::bind_zoo(m);
  lrnn::python::bind_gnn(m);
  lrnn::python::bind_engine(m);
  lrnn::python::bind_rasp(m);
  lrnn::python::bind_draw(m);
  lrnn::python::bind_datasets(m);
  lrnn::python::bind_distributed(m);

}
