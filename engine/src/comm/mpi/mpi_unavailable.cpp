// Built instead of mpi_backend.cpp when SHARDSCOPE_WITH_MPI found no MPI: the API exists so
// callers compile alike, and using it says clearly that this build lacks the backend.
#include "shardscope/engine/comm/mpi_backend.hpp"

#include "shardscope/error.hpp"

namespace shardscope::engine {
namespace {

[[noreturn]] void NotBuilt() {
  throw InvalidInput(
      "--backend mpi: this build has no MPI backend (configure with MPI installed, or "
      "-DSHARDSCOPE_WITH_MPI=ON to require it)");
}

}  // namespace

bool MpiBackendAvailable() { return false; }

struct MpiWorld::Impl {};
MpiWorld::MpiWorld(const MpiOptions&) { NotBuilt(); }
MpiWorld::~MpiWorld() = default;
int64_t MpiWorld::rank() const { return 0; }
int64_t MpiWorld::size() const { return 1; }
Communicator& MpiWorld::comm() { NotBuilt(); }
MpiWorld::ClockEstimate MpiWorld::EstimateClockOffset(int) { NotBuilt(); }
void MpiWorld::IdleBarrier() { NotBuilt(); }
void MpiWorld::Abort(const std::string&, int) { NotBuilt(); }
bool MpiWorld::LaunchedByMpirun() { return false; }

struct MpiCommunicator::Impl {};
MpiCommunicator::MpiCommunicator(int64_t world_rank, int64_t world_size, const MpiOptions&)
    : Communicator(world_rank, world_size) {
  NotBuilt();
}
MpiCommunicator::~MpiCommunicator() = default;
void MpiCommunicator::Execute(CollectiveCall&) { NotBuilt(); }

}  // namespace shardscope::engine
