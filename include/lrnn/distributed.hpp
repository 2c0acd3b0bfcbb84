// The MPI job this process belongs to (docs/distributed.md), for programs over the public
// API that report once per job or must end every rank on an error (the `lrnn` command).
// Without MPI, or not started by an MPI launcher, the job is this one process.
#pragma once

#include <string>

namespace lrnn {

struct ProcessGroup {
  int rank = 0;  // this process, 0-based
  int size = 1;  // processes in the job
};

// Initialises MPI on first use when the process was started by a launcher.
ProcessGroup process_group();
inline bool is_root_process() { return process_group().rank == 0; }

// Prints "lrnn: rank R of N failed: CAUSE" and ends every rank of the job (MPI_Abort), so no
// rank waits forever in a collective. Outside a job: only prints and exits with status 1.
[[noreturn]] void abort_job(const std::string& cause);

}  // namespace lrnn
