// Built instead of nccl_backend.cpp when NCCL was not found (with or without CUDA: without it,
// cuda_unavailable.cpp comes too): NcclWorld says clearly that this build lacks NCCL.
#include <string>

#include "shardscope/engine/comm/nccl_backend.hpp"
#include "shardscope/error.hpp"

namespace shardscope::engine {

bool NcclBackendAvailable() { return false; }

struct NcclWorld::Impl {};
NcclWorld::NcclWorld(MpiWorld&, const NcclOptions&) { RequireGpuBackend("nccl"); }
NcclWorld::~NcclWorld() = default;
int64_t NcclWorld::rank() const { return 0; }
int64_t NcclWorld::size() const { return 1; }
int NcclWorld::device() const { return 0; }
Communicator& NcclWorld::comm() { throw InternalError("nccl backend: not in this build"); }

}  // namespace shardscope::engine
