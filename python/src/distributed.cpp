// lrnn._core.distributed: the MPI job this process belongs to (docs/distributed.md). The
// training itself needs nothing from Python: started by `mpirun -np N python3 script.py`,
// lrnn.Model shards every dataset it builds and sums the gradients over the ranks.
#include <nanobind/stl/string.h>

#include <string>

#include "bindings.hpp"
#include "train/distributed.hpp"

namespace lrnn::python {

void bind_distributed(nb::module_& m) {
  namespace dist = lrnn::train::dist;
  nb::module_ d = m.def_submodule("distributed", "Data-parallel training over MPI");
  d.def("built_with_mpi", &dist::built_with_mpi, "Whether this lrnn was built with MPI (CMake option LRNN_MPI)");
  d.def("active", [] { return dist::world().active; },
        "Whether this process is a rank of an MPI job (started by mpirun, or init() called)");
  d.def("rank", [] { return dist::world().rank; }, "This process's rank (0 outside a job)");
  d.def("size", [] { return dist::world().size; }, "The number of ranks (1 outside a job)");
  d.def("init", [] { return dist::init().size; }, "Starts MPI without a launcher (a job of one rank); returns the size");
  d.def("barrier", [] {
    nb::gil_scoped_release release;
    dist::barrier();
  });
  d.def("abort", [](const std::string& cause) { dist::abort_job(cause); },
        "Prints 'lrnn: rank R of N failed: CAUSE' and ends every rank of the job");
}

}  // namespace lrnn::python
