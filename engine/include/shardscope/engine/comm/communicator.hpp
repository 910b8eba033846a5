#pragma once
// Group collectives behind one interface [NCCL-style]: every call goes through one validation
// funnel (Communicator's non-virtual methods) before a backend's Execute runs it. Buffers are
// described as views into contiguous local tensors so that a backend can copy straight from a
// sender's memory into a receiver's (the local backend) or pack views for the wire (MPI, NCCL).

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "shardscope/engine/core/layout.hpp"
#include "shardscope/engine/core/placement.hpp"
#include "shardscope/engine/core/tensor.hpp"

namespace shardscope::engine {

/// A region of a tensor: per dim, a list of position intervals (in storage order, any order,
/// disjoint); the region is their cartesian product. Elements are taken in row-major order over
/// the concatenated positions of every dim, so splitting an interval never changes the order.
struct Box {
  std::vector<IndexSet> dims;
  /// Number of elements (1 for a 0-d box).
  int64_t Count() const;
  bool operator==(const Box&) const = default;
};

/// A view: a base pointer into a contiguous row-major tensor of `shape`, and the boxes taken
/// from it one after the other. Non-owning: the tensor must outlive the collective.
template <class Ptr>
struct BasicView {
  Ptr data = nullptr;
  Shape shape;
  DType dtype = DType::kF32;
  std::vector<Box> boxes;
  /// Total number of elements over all boxes.
  int64_t Count() const {
    int64_t n = 0;
    for (const Box& b : boxes) n += b.Count();
    return n;
  }
};
using SendView = BasicView<const std::byte*>;
using RecvView = BasicView<std::byte*>;

/// A box covering all of `shape`.
Box FullBox(const Shape& shape);
/// Views of a whole tensor, or of one box of it (the box is not checked here; the funnel does).
SendView ViewOf(const LocalTensor& tensor);
SendView ViewOf(const LocalTensor& tensor, Box box);
RecvView MutableViewOf(LocalTensor& tensor);
RecvView MutableViewOf(LocalTensor& tensor, Box box);

/// A communication group: global ranks in group order (Mesh::Group order for a mesh dim or a
/// flattened set), and the mesh dims it stands for (used only in messages and traces).
struct Group {
  std::vector<int64_t> ranks;
  std::vector<int> mesh_dims;
  /// "[0,1,2,3] (mesh dim 0)" or "[0,1,2,3] (mesh dims 0,1)".
  std::string ToString() const;
};

enum class CollectiveKind {
  kAllGather,
  kReduceScatter,
  kAllReduce,
  kAllToAll,
  kBroadcast,
  kBarrier,
  kShapeExchange
};
/// "all_gather", "reduce_scatter", "all_reduce", "all_to_all", "broadcast", "barrier", "shape_exchange".
std::string_view CollectiveKindName(CollectiveKind kind);

/// How contributions combine: `op` over the group in group order (half types in f32, rounded
/// once), then a division by `divisor` (the flattened avg_scale; kAvg divides by the group size
/// as well). Integer avg and division truncate toward zero.
struct Reduction {
  ReduceOp op = ReduceOp::kSum;
  int64_t divisor = 1;
  bool operator==(const Reduction&) const = default;
  /// What the combined value is divided by over a group of `members`: `divisor`, times the group
  /// size for kAvg. Every backend divides by this once, after combining.
  int64_t TotalDivisor(int64_t members) const { return op == ReduceOp::kAvg ? divisor * members : divisor; }
};

/// What one rank posts for one collective, after the funnel's checks. Per kind:
/// all_gather send[0] -> everyone, recv[i] <- member i; all_to_all send[j] -> member j, recv[i]
/// <- member i; reduce_scatter send[j] -> member j, recv[0]; all_reduce send[0], recv[0];
/// broadcast send[0] on the root only, recv[0] everywhere; shape_exchange shapes_send[j] -> j.
struct CollectiveCall {
  CollectiveKind kind = CollectiveKind::kBarrier;
  Group group;
  int64_t rank = 0;   ///< global rank of the poster
  int64_t index = 0;  ///< the poster's position in group.ranks
  DType dtype = DType::kF32;
  Reduction reduction;
  int64_t root = 0;  ///< broadcast root, as a group index
  std::vector<SendView> send;
  std::vector<RecvView> recv;
  std::vector<std::vector<int64_t>> shapes_send;
  std::vector<std::vector<int64_t>>* shapes_recv = nullptr;  ///< filled with one vector per member
  /// Set by backends that time the data movement themselves (the GPU backends: CUDA events,
  /// mapped onto steady_clock ns); when timed_end_ns > 0 they become the CollectiveStats times
  /// instead of the wall-clock bracket around Execute.
  int64_t timed_start_ns = 0;
  int64_t timed_end_ns = 0;
};

/// Per-collective figures for traces and benchmarks: bytes this rank sent to / received from
/// each group member (aligned with group.ranks; its own entry, a local copy, is 0), and times
/// in steady_clock nanoseconds (GPU backends: the device time of pack, transfer and unpack).
struct CollectiveStats {
  CollectiveKind kind = CollectiveKind::kBarrier;
  std::vector<int64_t> bytes_sent;
  std::vector<int64_t> bytes_recv;
  int64_t start_ns = 0;
  int64_t end_ns = 0;
};

/// Checks the posts of every member of one collective against each other (same kind, dtype,
/// reduction and root; matching element counts for every sender/receiver pair). Backends call it
/// once all posts are visible; it is deterministic, so every member throws the same
/// Error(kInvalidInput) naming the group, the ranks and the counts.
void ValidateGroupCalls(const std::vector<const CollectiveCall*>& calls);

/// One rank's endpoint. Collectives are blocking; every member of `group` must call the same
/// collectives on that group in the same order. Not thread-safe: one thread per rank.
/// Errors: Error(kInvalidInput) for bad arguments (group membership, duplicates, ranks out of
/// range, boxes outside their tensor, mismatched dtypes or counts, send/recv overlap),
/// Error(kTimeout) when members do not join in time, Error(kBackend) for backend failures.
class Communicator {
 public:
  virtual ~Communicator() = default;
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int64_t rank() const { return rank_; }
  int64_t world_size() const { return world_size_; }
  /// "local", "mpi", "nccl".
  virtual std::string_view backend_name() const = 0;

  /// recv[i] receives member i's `send` (recv.size() == group size).
  CollectiveStats AllGatherV(const Group& group, const SendView& send, std::vector<RecvView> recv);
  /// Member j's `recv` becomes the reduction over members i of their send[j].
  CollectiveStats ReduceScatterV(const Group& group, const Reduction& reduction, std::vector<SendView> send,
                                 const RecvView& recv);
  /// `recv` becomes the reduction over members of their `send` (counts equal everywhere).
  CollectiveStats AllReduce(const Group& group, const Reduction& reduction, const SendView& send,
                            const RecvView& recv);
  /// send[j] goes to member j; recv[i] receives member i's send[me].
  CollectiveStats AllToAllV(const Group& group, std::vector<SendView> send, std::vector<RecvView> recv);
  /// `recv` receives the root's `send` (`send` is ignored on other members; the root's own recv
  /// gets a copy).
  CollectiveStats Broadcast(const Group& group, int64_t root_index, const SendView& send,
                            const RecvView& recv);
  CollectiveStats Barrier(const Group& group);
  /// Small int64 vectors all_to_all (shape negotiation): send[j] goes to member j; returns what
  /// each member sent to this rank, indexed by group position.
  std::vector<std::vector<int64_t>> ExchangeShapes(const Group& group, std::vector<std::vector<int64_t>> send,
                                                   CollectiveStats* stats = nullptr);

 protected:
  Communicator(int64_t rank, int64_t world_size);
  /// Runs a call that passed the local checks; must call ValidateGroupCalls once every post
  /// of the group is known, and throw the same error on every member.
  virtual void Execute(CollectiveCall& call) = 0;

 private:
  CollectiveStats Submit(CollectiveCall& call);

  int64_t rank_ = 0;
  int64_t world_size_ = 1;
};

}  // namespace shardscope::engine
