// Built instead of the GPU backends when SHARDSCOPE_WITH_CUDA found no CUDA toolkit: the API
// exists so callers compile alike, and using it says clearly that this build lacks it (the
// NcclWorld stubs are nccl_unavailable.cpp's, built with this file).
#include <string>

#include "shardscope/engine/comm/nccl_backend.hpp"
#include "shardscope/error.hpp"

namespace shardscope::engine {

bool CudaBackendAvailable() { return false; }

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

}  // namespace shardscope::engine
