// The public view of the MPI job (lrnn/distributed.hpp) over the training stage's
// communication layer (train/distributed.hpp), which holds the MPI calls.
#include "lrnn/distributed.hpp"

#include "train/distributed.hpp"

namespace lrnn {

ProcessGroup process_group() {
  const train::dist::World& world = train::dist::world();
  return ProcessGroup{world.rank, world.size, world.active};
}

void abort_job(const std::string& cause) { train::dist::abort_job(cause); }

std::vector<uint32_t> gather_from_every_process(const std::vector<uint32_t>& mine) {
  return train::dist::allgather(mine);
}

StepTiming step_timing() {
  return train::dist::step_timing();
}

}  // namespace lrnn
