// The MPI job this process belongs to (docs/distributed.md), for programs over the public
// API that report once per job or must end every rank on an error (the `lrnn` command).
// Without MPI, or not started by an MPI launcher, the job is this one process.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "lrnn/training.hpp"

namespace lrnn {

struct ProcessGroup {
  int rank = 0;         // this process, 0-based
  int size = 1;         // processes in the job
  bool mpi = false;     // started by an MPI launcher: training goes through the MPI path, even on one rank
};

// Initialises MPI on first use when the process was started by a launcher.
ProcessGroup process_group();
inline bool is_root_process() { return process_group().rank == 0; }

// Prints "lrnn: rank R of N failed: CAUSE" and ends every rank of the job (MPI_Abort), so no
// rank waits forever in a collective. Outside a job: only prints and exits with status 1.
[[noreturn]] void abort_job(const std::string& cause);

// Every process's `mine`, concatenated in rank order (an allgather: every rank must call it).
std::vector<uint32_t> gather_from_every_process(const std::vector<uint32_t>& mine);

// This process's step timing (lrnn/training.hpp's StepTiming), summed since it started.
StepTiming step_timing();

}  // namespace lrnn
