#include "device_staging.hpp"

#include <algorithm>
#include <thread>

#include "comm/view_ops.hpp"
#include "shardscope/engine/comm/nccl_backend.hpp"
#include "shardscope/error.hpp"
#include "shardscope/trace/writer.hpp"

namespace shardscope::engine {
namespace detail::gpu {
namespace {

static_assert(static_cast<int>(DType::kF32) == static_cast<int>(KernelType::kF32) &&
                  static_cast<int>(DType::kF64) == static_cast<int>(KernelType::kF64) &&
                  static_cast<int>(DType::kF16) == static_cast<int>(KernelType::kF16) &&
                  static_cast<int>(DType::kBF16) == static_cast<int>(KernelType::kBF16) &&
                  static_cast<int>(DType::kI32) == static_cast<int>(KernelType::kI32) &&
                  static_cast<int>(DType::kI64) == static_cast<int>(KernelType::kI64),
              "KernelType must number element types as DType does");
static_assert(static_cast<int>(ReduceOp::kSum) == static_cast<int>(KernelOp::kSum) &&
                  static_cast<int>(ReduceOp::kAvg) == static_cast<int>(KernelOp::kAvg) &&
                  static_cast<int>(ReduceOp::kMin) == static_cast<int>(KernelOp::kMin) &&
                  static_cast<int>(ReduceOp::kMax) == static_cast<int>(KernelOp::kMax) &&
                  static_cast<int>(ReduceOp::kProduct) == static_cast<int>(KernelOp::kProduct),
              "KernelOp must number reduce ops as ReduceOp does");

constexpr int64_t kAlign = 256;

int64_t AlignUp(int64_t v) { return (v + kAlign - 1) / kAlign * kAlign; }

// Appends [src_off, src_off + bytes) -> [dst_off, ...) split into pieces of at most kMaxRunBytes.
template <class Run>
void AddPieces(std::vector<Run>& runs, Run run) {
  const int64_t max = static_cast<int64_t>(kMaxRunBytes);
  for (int64_t done = 0; done < run.bytes; done += max) {
    Run piece = run;
    piece.src_off += done;
    piece.dst_off += done;
    piece.bytes = std::min(max, run.bytes - done);
    runs.push_back(piece);
  }
}

}  // namespace

std::string CudaErrorText(cudaError_t rc) {
  return std::string(cudaGetErrorName(rc)) + " (" + cudaGetErrorString(rc) + ")";
}

void CudaCheck(cudaError_t rc, const char* call, const std::string& where, const std::string& who) {
  if (rc == cudaSuccess) return;
  throw Error(ErrorCode::kBackend, who + ": " + call + " in " + where + " failed: " + CudaErrorText(rc));
}

KernelType KernelTypeOf(DType dtype) { return static_cast<KernelType>(static_cast<int>(dtype)); }
KernelOp KernelOpOf(ReduceOp op) { return static_cast<KernelOp>(static_cast<int>(op)); }

DeviceBuffer::~DeviceBuffer() {
  if (data_ != nullptr) cudaFree(data_);
}

std::byte* DeviceBuffer::Reserve(int64_t bytes, const std::string& where, const std::string& who) {
  bytes = std::max<int64_t>(bytes, 1);
  if (bytes <= capacity_) return data_;
  // Grow by half again so that a sweep of growing sizes does not reallocate every call.
  const int64_t want = std::max(bytes, capacity_ + capacity_ / 2);
  if (data_ != nullptr) {
    cudaFree(data_);
    data_ = nullptr;
    capacity_ = 0;
  }
  void* p = nullptr;
  CudaCheck(cudaMalloc(&p, static_cast<size_t>(want)), "cudaMalloc", where, who);
  data_ = static_cast<std::byte*>(p);
  capacity_ = want;
  return data_;
}

Staging::Staging(std::string who, cudaStream_t stream) : who_(std::move(who)), stream_(stream) {
  CudaCheck(cudaEventCreate(&start_), "cudaEventCreate", "staging", who_);
  CudaCheck(cudaEventCreate(&end_), "cudaEventCreate", "staging", who_);
}

Staging::~Staging() {
  if (start_ != nullptr) cudaEventDestroy(start_);
  if (end_ != nullptr) cudaEventDestroy(end_);
}

size_t Staging::MirrorOf(std::byte* host, bool send) {
  for (size_t m = 0; m < mirrors_.size(); ++m) {
    if (mirrors_[m].host == host) return m;
  }
  Mirror mirror;
  mirror.host = host;
  mirror.lo = INT64_MAX;
  mirror.hi = 0;
  mirror.send = send;
  mirrors_.push_back(mirror);
  return mirrors_.size() - 1;
}

void Staging::Prepare(const CollectiveCall& call, int64_t scratch_bytes, const std::string& where) {
  element_size_ = DTypeSize(call.dtype);
  const int64_t es = element_size_;
  mirrors_.clear();
  pack_.clear();
  unpack_.clear();
  send_offsets_.assign(call.send.size(), 0);
  send_counts_.assign(call.send.size(), 0);
  recv_offsets_.assign(call.recv.size(), 0);
  recv_counts_.assign(call.recv.size(), 0);
  int64_t send_total = 0, recv_total = 0;
  for (size_t j = 0; j < call.send.size(); ++j) {
    send_offsets_[j] = send_total;
    send_counts_[j] = call.send[j].Count();
    send_total += send_counts_[j];
  }
  for (size_t i = 0; i < call.recv.size(); ++i) {
    recv_offsets_[i] = recv_total;
    recv_counts_[i] = call.recv[i].Count();
    recv_total += recv_counts_[i];
  }
  // Pack runs: send view j's runs, in element order, into slot j.
  for (size_t j = 0; j < call.send.size(); ++j) {
    const SendView& view = call.send[j];
    if (send_counts_[j] == 0) continue;
    Mirror* m = nullptr;
    const size_t mi = MirrorOf(const_cast<std::byte*>(view.data), true);
    m = &mirrors_[mi];
    RunCursor cursor(view.shape, view.boxes);
    int64_t offset = 0, length = 0, pos = 0;
    while (cursor.Next(offset, length)) {
      m->lo = std::min(m->lo, offset * es);
      m->hi = std::max(m->hi, (offset + length) * es);
      AddPieces(pack_, PendingRun{mi, offset * es, j, pos * es, length * es});
      pos += length;
    }
  }
  // Unpack runs: recv slot i's contiguous elements into recv view i's runs.
  std::vector<std::vector<std::pair<int64_t, int64_t>>> covered;
  for (size_t i = 0; i < call.recv.size(); ++i) {
    const RecvView& view = call.recv[i];
    if (recv_counts_[i] == 0) continue;
    const size_t mi = MirrorOf(view.data, false);
    if (covered.size() <= mi) covered.resize(mi + 1);
    Mirror& m = mirrors_[mi];
    RunCursor cursor(view.shape, view.boxes);
    int64_t offset = 0, length = 0, pos = 0;
    while (cursor.Next(offset, length)) {
      m.lo = std::min(m.lo, offset * es);
      m.hi = std::max(m.hi, (offset + length) * es);
      covered[mi].push_back({offset * es, (offset + length) * es});
      AddPieces(unpack_, PendingRun{i, pos * es, mi, offset * es, length * es});
      pos += length;
    }
  }
  // A receive span that the views do not cover completely is uploaded first, so that the
  // download does not overwrite the elements in between with stale device bytes.
  for (size_t mi = 0; mi < covered.size(); ++mi) {
    auto& runs = covered[mi];
    if (runs.empty()) continue;
    std::sort(runs.begin(), runs.end());
    int64_t union_bytes = 0, reach = runs[0].first;
    for (const auto& [a, b] : runs) {
      const int64_t from = std::max(a, reach);
      if (b > from) union_bytes += b - from;
      reach = std::max(reach, b);
    }
    mirrors_[mi].upload = union_bytes < mirrors_[mi].hi - mirrors_[mi].lo;
  }
  // One allocation: mirrors, packed send, packed recv, scratch, then the two run tables.
  int64_t total = 0;
  std::vector<int64_t> mirror_at(mirrors_.size());
  for (size_t mi = 0; mi < mirrors_.size(); ++mi) {
    mirror_at[mi] = total;
    total = AlignUp(total + mirrors_[mi].hi - mirrors_[mi].lo);
  }
  const int64_t send_at = total;
  total = AlignUp(total + send_total * es);
  const int64_t recv_at = total;
  total = AlignUp(total + recv_total * es);
  const int64_t scratch_at = total;
  total = AlignUp(total + scratch_bytes);
  const int64_t pack_at = total;
  total = AlignUp(total + static_cast<int64_t>(pack_.size() * sizeof(CopyRun)));
  const int64_t unpack_at = total;
  total = AlignUp(total + static_cast<int64_t>(unpack_.size() * sizeof(CopyRun)));
  std::byte* base = buffer_.Reserve(total, where, who_);
  for (size_t mi = 0; mi < mirrors_.size(); ++mi) mirrors_[mi].device = base + mirror_at[mi];
  send_base_ = base + send_at;
  recv_base_ = base + recv_at;
  scratch_ = base + scratch_at;
  pack_table_ = reinterpret_cast<CopyRun*>(base + pack_at);
  unpack_table_ = reinterpret_cast<CopyRun*>(base + unpack_at);
}

void Staging::LaunchRuns(const std::vector<CopyRun>& runs, CopyRun* table, const std::string& where) {
  if (runs.empty()) return;
  // Pageable host -> device copies are staged before cudaMemcpyAsync returns, so `runs` may be
  // reused at once.
  CudaCheck(
      cudaMemcpyAsync(table, runs.data(), runs.size() * sizeof(CopyRun), cudaMemcpyHostToDevice, stream_),
      "cudaMemcpyAsync (run table)", where, who_);
  CudaCheck(LaunchCopyRuns(table, static_cast<int64_t>(runs.size()), stream_), "copy-runs kernel launch",
            where, who_);
}

void Staging::UploadAndPack(const std::string& where) {
  for (const Mirror& m : mirrors_) {
    if (!m.send && !m.upload) continue;
    CudaCheck(cudaMemcpyAsync(m.device, m.host + m.lo, static_cast<size_t>(m.hi - m.lo),
                              cudaMemcpyHostToDevice, stream_),
              "cudaMemcpyAsync (upload)", where, who_);
  }
  // Device time starts after the host staging: it measures pack, transfer and unpack.
  CudaCheck(cudaEventRecord(start_, stream_), "cudaEventRecord", where, who_);
  host_runs_.clear();
  for (const PendingRun& r : pack_) {
    const Mirror& m = mirrors_[r.src];
    host_runs_.push_back(CopyRun{reinterpret_cast<uint64_t>(m.device + (r.src_off - m.lo)),
                                 reinterpret_cast<uint64_t>(send_slot(r.dst) + r.dst_off),
                                 static_cast<uint64_t>(r.bytes)});
  }
  LaunchRuns(host_runs_, pack_table_, where);
}

void Staging::Unpack(const std::vector<const std::byte*>& sources, const std::string& where) {
  host_runs_.clear();
  for (const PendingRun& r : unpack_) {
    const Mirror& m = mirrors_[r.dst];
    if (r.src >= sources.size() || sources[r.src] == nullptr)
      throw InternalError(who_ + ": " + where + ": no device source for receive slot " +
                          std::to_string(r.src));
    host_runs_.push_back(CopyRun{reinterpret_cast<uint64_t>(sources[r.src] + r.src_off),
                                 reinterpret_cast<uint64_t>(m.device + (r.dst_off - m.lo)),
                                 static_cast<uint64_t>(r.bytes)});
  }
  LaunchRuns(host_runs_, unpack_table_, where);
  CudaCheck(cudaEventRecord(end_, stream_), "cudaEventRecord", where, who_);
}

std::pair<int64_t, int64_t> Staging::Finish(const std::string& where, const std::function<void()>& poll) {
  if (!poll) {
    CudaCheck(cudaEventSynchronize(end_), "cudaEventSynchronize", where, who_);
  } else {
    for (int64_t spins = 0;; ++spins) {
      const cudaError_t rc = cudaEventQuery(end_);
      if (rc == cudaSuccess) break;
      if (rc != cudaErrorNotReady) CudaCheck(rc, "cudaEventQuery", where, who_);
      if ((spins & 63) == 0) poll();
      if (spins > 1000) std::this_thread::yield();
    }
  }
  const int64_t end_ns = trace::NowNs();
  float ms = 0;
  CudaCheck(cudaEventElapsedTime(&ms, start_, end_), "cudaEventElapsedTime", where, who_);
  for (const Mirror& m : mirrors_) {
    if (m.send) continue;
    CudaCheck(cudaMemcpyAsync(m.host + m.lo, m.device, static_cast<size_t>(m.hi - m.lo),
                              cudaMemcpyDeviceToHost, stream_),
              "cudaMemcpyAsync (download)", where, who_);
  }
  CudaCheck(cudaStreamSynchronize(stream_), "cudaStreamSynchronize", where, who_);
  return {end_ns - static_cast<int64_t>(static_cast<double>(ms) * 1e6), end_ns};
}

}  // namespace detail::gpu

bool CudaBackendAvailable() { return true; }

int CudaDeviceCount(std::string* why) {
  int count = 0;
  const cudaError_t rc = cudaGetDeviceCount(&count);
  if (rc != cudaSuccess || count <= 0) {
    (void)cudaGetLastError();  // clear the error so later calls start clean
    if (why != nullptr) {
      *why = rc != cudaSuccess
                 ? "no CUDA device: cudaGetDeviceCount returned " + std::string(cudaGetErrorName(rc))
                 : "no CUDA device: cudaGetDeviceCount found 0 devices";
    }
    return 0;
  }
  return count;
}

int RequireGpuBackend(std::string_view backend) {
  if (backend == "nccl" && !NcclBackendAvailable()) {
    throw InvalidInput(
        "--backend nccl: built without NCCL (reconfigure with -DSHARDSCOPE_WITH_NCCL=ON where nccl.h and "
        "libnccl are installed; see docs/gpu.md)");
  }
  std::string why;
  const int count = CudaDeviceCount(&why);
  if (count == 0) throw InvalidInput("--backend " + std::string(backend) + ": " + why);
  return count;
}

}  // namespace shardscope::engine
