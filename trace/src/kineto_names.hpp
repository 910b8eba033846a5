#pragma once
// Private: the names a Kineto trace uses for collectives and dtypes, shared by the Kineto reader
// and the cross-rank analysis (docs/kineto.md, "Collectives").

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace shardscope::trace::detail {

/// record_param_comms "Collective name" or an nccl:* op name ("allreduce", "_allgather_base",
/// "nccl:_reduce_scatter_base", "alltoall_base", ...) -> our kind ("all_reduce", ...); "" for a
/// record that is not a collective ("wait"); other names lower-cased without leading '_'.
std::string KindOfCollectiveName(std::string_view name);

/// An NCCL kernel's name -> kind ("ncclKernel_AllReduce_RING_LL_Sum_float(...)" -> "all_reduce",
/// "ncclDevKernel_SendRecv(...)" -> "send_recv"); "" when it is not an NCCL kernel.
std::string KindOfNcclKernel(std::string_view name);

/// A C++ element type as profiler "Input type" writes it ("float", "c10::BFloat16") -> PyTorch's
/// dtype name ("Float", "BFloat16"); "" when unknown.
std::string DtypeOfInputType(std::string_view type);

/// Bytes of one element of a PyTorch dtype name ("Float" 4, "BFloat16" 2, ...), 0 when unknown.
int64_t DtypeBytes(std::string_view dtype);

/// PyTorch dtype name -> the trace's short name ("Float" -> "f32"), others lower-cased.
std::string ShortDtypeName(std::string_view dtype);

/// "send", "recv" or "send_recv".
inline bool IsP2pKind(std::string_view kind) {
  return kind == "send" || kind == "recv" || kind == "send_recv";
}

/// "nccl:send 0->1" / "nccl:recv 1<-0": (self, peer) as group-local indices; {-1, -1} otherwise.
std::pair<int64_t, int64_t> P2pLocalPair(std::string_view profiling_name);

}  // namespace shardscope::trace::detail
