// Built instead of the GPU backends when SHARDSCOPE_WITH_CUDA found no CUDA toolkit: the API
// exists so callers compile alike, and using it says clearly that this build lacks it.
#include <string>

#include "shardscope/engine/comm/nccl_backend.hpp"
#include "shardscope/error.hpp"

namespace shardscope::engine {

bool CudaBackendAvailable() { return false; }
bool NcclBackendAvailable() { return false; }

int CudaDeviceCount(std::string* why) {
  if (why != nullptr) {
    *why =
        "built without CUDA/NCCL (reconfigure with -DSHARDSCOPE_WITH_CUDA=ON -DSHARDSCOPE_WITH_NCCL=ON on a "
        "machine with the CUDA toolkit and NCCL; see docs/gpu.md)";
  }
  return 0;
}

int RequireGpuBackend(std::string_view backend) {
  std::string why;
  CudaDeviceCount(&why);
  throw InvalidInput("--backend " + std::string(backend) + ": " + why);
}

void CudaLocalWorld::Run(int64_t, const RankFn&, const CudaWorldOptions&) { RequireGpuBackend("cuda"); }

struct NcclWorld::Impl {};
NcclWorld::NcclWorld(MpiWorld&, const NcclOptions&) { RequireGpuBackend("nccl"); }
NcclWorld::~NcclWorld() = default;
int64_t NcclWorld::rank() const { return 0; }
int64_t NcclWorld::size() const { return 1; }
int NcclWorld::device() const { return 0; }
Communicator& NcclWorld::comm() { throw InternalError("nccl backend: not in this build"); }

}  // namespace shardscope::engine
