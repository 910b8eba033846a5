#include "shardscope/engine/exec/executor.hpp"

#include <algorithm>
#include <exception>
#include <map>
#include <memory>

#include "comm/view_ops.hpp"
#include "core/dtype_dispatch.hpp"
#include "exec/trace_records.hpp"
#include "shardscope/engine/core/layout.hpp"
#include "shardscope/engine/plan/plan_layouts.hpp"
#include "shardscope/error.hpp"
#include "shardscope/trace/events.hpp"
#include "shardscope/trace/writer.hpp"

namespace shardscope::engine {
namespace {

using detail::RedistributeRecords;

// The data two layouts share, as positions in each one's storage. Per dim the common indices are
// enumerated in the holder's storage order on both sides, so the two boxes list the same elements
// in the same (row-major) order.
struct PairBoxes {
  Box holder;
  Box other;
  int64_t count = 0;
};

PairBoxes Pair(const RankLayout& holder, const RankLayout& other) {
  PairBoxes out;
  out.count = 1;
  for (size_t d = 0; d < holder.indices.size(); ++d) {
    IndexSet common = Intersect(holder.indices[d], other.indices[d]);
    out.count *= IndexSetSize(common);
    out.holder.dims.push_back(PositionsOf(holder.indices[d], common));
    out.other.dims.push_back(PositionsOf(other.indices[d], common));
  }
  return out;
}

std::vector<int64_t> DimSizes(const Box& box) {
  std::vector<int64_t> out;
  for (const IndexSet& set : box.dims) out.push_back(IndexSetSize(set));
  return out;
}

// R -> P(op) without communication (PyTorch Partial._partition_value; see executor.hpp for the
// integer and product rules, which PyTorch does not define).
void PartitionValue(LocalTensor& t, ReduceOp op, int64_t index, int64_t n) {
  DispatchDType(t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using A = typename ArithOf<T>::type;
    T* data = reinterpret_cast<T*>(t.data());
    if (op == ReduceOp::kSum) {
      if constexpr (std::is_integral_v<A>) {
        if (index != 0) std::fill(data, data + t.numel(), T{0});
      } else {
        for (int64_t i = 0; i < t.numel(); ++i) {
          data[i] = ArithOf<T>::Store(ArithOf<T>::Load(data[i]) / static_cast<A>(n));
        }
      }
    } else if (op == ReduceOp::kProduct && index != 0) {
      std::fill(data, data + t.numel(), ArithOf<T>::Store(A{1}));
    }
  });
}

// What Executor::Run derives from (src, dst, plan, rank) alone: the layouts of every group member
// before and after each step, the first local layout, and whether the plan ends in dst's layout.
// `pairs` is the step's copy plan for this rank, per group member m: what this rank holds of m's
// target piece (send[m] = Pair(before[me], after[m])) and what m holds of this rank's target
// piece (recv[m] = Pair(before[m], after[me])), so a repeated redistribute builds its views from
// cached boxes with no intersection work.
struct StepPairs {
  std::vector<PairBoxes> send;
  std::vector<PairBoxes> recv;
};

struct StepGeometry {
  bool skip = true;
  Group group;
  std::vector<RankLayout> before;
  std::vector<RankLayout> after;
  StepPairs pairs;
};

StepPairs PairsOf(const std::vector<RankLayout>& before, const std::vector<RankLayout>& after, size_t me) {
  StepPairs out;
  for (size_t m = 0; m < before.size(); ++m) {
    out.send.push_back(Pair(before[me], after[m]));
    out.recv.push_back(Pair(before[m], after[me]));
  }
  return out;
}

struct Geometry {
  RankLayout first;
  std::vector<StepGeometry> steps;
  bool ends_as_dst = false;
  Shape dst_shape;
};

// A few recent geometries per thread (each rank of the local backend is a thread; a repeated
// redistribute asks for the same one each time). Keyed by value: the specs, the transforms and
// the rank are compared, never addresses, so a spec or plan reassigned in place cannot hit a stale
// entry (docs/contributing.md rule 18). Small and bounded: the oldest entry goes when it is full.
class StepGeometryCache {
 public:
  std::shared_ptr<const Geometry> Find(const TensorSpec& src, const TensorSpec& dst,
                                       const std::vector<Transform>& plan, int64_t rank) const {
    for (const Entry& e : entries_) {
      if (e.rank == rank && e.plan == plan && e.src == src && e.dst == dst) return e.geometry;
    }
    return nullptr;
  }
  void Add(const TensorSpec& src, const TensorSpec& dst, const std::vector<Transform>& plan, int64_t rank,
           std::shared_ptr<const Geometry> geometry) {
    if (entries_.size() >= kEntries) entries_.erase(entries_.begin());
    entries_.push_back({src, dst, plan, rank, std::move(geometry)});
  }

 private:
  static constexpr size_t kEntries = 8;
  struct Entry {
    TensorSpec src;
    TensorSpec dst;
    std::vector<Transform> plan;
    int64_t rank = 0;
    std::shared_ptr<const Geometry> geometry;
  };
  std::vector<Entry> entries_;
};

StepGeometryCache& Cache() {
  thread_local StepGeometryCache cache;
  return cache;
}

class Executor {
 public:
  // `records` (null when untraced) writes the trace events.
  Executor(Communicator& comm, int64_t rank, const TensorSpec& src, const TensorSpec& dst, const Plan& plan,
           const ExecuteOptions& options, RedistributeRecords* records = nullptr)
      : comm_(&comm),
        rank_(rank),
        src_(src),
        dst_(dst),
        plan_(plan),
        options_(options),
        records_(records),
        mesh_(src.mesh),
        layouts_(src, dst, plan) {}

  LocalTensor Run(const LocalTensor& in) {
    // The layouts along the plan depend only on (src, dst, plan, rank): a repeat of the same
    // redistribute on this thread takes them from the cache (see StepGeometryCache) instead of
    // recomputing every group member's layout at every step. A first run computes them in
    // plan order, so its errors arise where they always did.
    std::shared_ptr<const Geometry> cached = Cache().Find(src_, dst_, plan_.optimized, rank_);
    auto geometry = cached ? nullptr : std::make_shared<Geometry>();
    PlanState state = layouts_.Start();
    RankLayout mine = cached ? cached->first : layouts_.At(state, 0, rank_);
    if (in.shape() != mine.local_shape) {
      // ShardTensor keeps this comparison as a hard error on a corrupt spec, never as a branch.
      throw InvalidInput("redistribute: rank " + std::to_string(rank_) + "'s local tensor has shape " +
                         FormatShape(in.shape()) + " but " + FormatPlacements(src_.placements) + " of " +
                         FormatShape(src_.shape) + " gives it " + FormatShape(mine.local_shape));
    }
    if (geometry) geometry->first = mine;
    const LocalTensor* current = &in;
    LocalTensor holder;
    // Rank-uniform staleness flag (PhysicsNeMo PR #1779): depends only on the hop sequence.
    bool shapes_current = options_.shapes == ShapeMode::kKnown;
    for (size_t k = 0; k < plan_.optimized.size(); ++k) {
      const Transform& t = plan_.optimized[k];
      const StepGeometry* step = cached ? &cached->steps[k] : nullptr;
      if (!step) {
        StepGeometry computed;
        PlanState next = layouts_.Advance(state, t);
        computed.skip = t.src == t.dst || mesh_.GroupSize(t.mesh_dims) <= 1;
        if (!computed.skip) {
          computed.group = Group{mesh_.Group(rank_, t.mesh_dims), t.mesh_dims};
          for (int64_t r : computed.group.ranks) {
            computed.before.push_back(layouts_.At(state, static_cast<int64_t>(k), r));
            computed.after.push_back(layouts_.At(next, static_cast<int64_t>(k) + 1, r));
          }
          computed.pairs = PairsOf(computed.before, computed.after, MemberIndex(computed.group));
        }
        state = std::move(next);
        geometry->steps.push_back(std::move(computed));
        step = &geometry->steps.back();
      }
      if (records_) records_->StepBegin(static_cast<int64_t>(k), t, mine);
      if (!step->skip) {
        const Group& group = step->group;
        LocalTensor out = Step(static_cast<int64_t>(k), t, *step, *current, shapes_current);
        holder = std::move(out);
        current = &holder;
        shapes_current = false;
        mine = step->after[MemberIndex(group)];
      }
      if (records_) records_->StepEnd(static_cast<int64_t>(k), mine);
    }
    if (geometry) {
      RankLayout want = ComputeRankLayout(dst_, rank_);
      RankLayout got = layouts_.At(state, static_cast<int64_t>(plan_.optimized.size()), rank_);
      geometry->ends_as_dst = got.indices == want.indices;
      geometry->dst_shape = want.local_shape;
    }
    const Geometry& done = cached ? *cached : *geometry;
    if (!done.ends_as_dst || current->shape() != done.dst_shape) {
      const std::string what = current->shape() != done.dst_shape
                                   ? "shape " + FormatShape(current->shape()) + " but " +
                                         FormatPlacements(dst_.placements) + " gives it " +
                                         FormatShape(done.dst_shape)
                                   : "other elements than " + FormatPlacements(dst_.placements) +
                                         " gives it (shape " + FormatShape(done.dst_shape) + " both)";
      throw InternalError("redistribute: the plan '" + plan_.notation + "' ends with rank " +
                          std::to_string(rank_) + " holding " + what);
    }
    if (geometry) Cache().Add(src_, dst_, plan_.optimized, rank_, std::move(geometry));
    return current == &in ? in : std::move(holder);
  }

 private:
  void Record(int64_t k, const Group& group, const CollectiveStats& stats, bool negotiated) {
    if (options_.collectives) options_.collectives->push_back({k, group, stats, negotiated});
    if (records_)
      records_->Collective(k, group.mesh_dims, group.ranks, negotiated ? DType::kI64 : src_.dtype, stats,
                           negotiated);
  }

  // This rank's position in `group`.
  size_t MemberIndex(const Group& group) const {
    return static_cast<size_t>(std::find(group.ranks.begin(), group.ranks.end(), rank_) -
                               group.ranks.begin());
  }

  // One step as its paths see it: the transform, its geometry, this rank's member index and the
  // output every path writes in full (require_full checks it, so it is not zero filled).
  struct StepRun {
    int64_t k;
    const Transform& t;
    const StepGeometry& geometry;
    const LocalTensor& cur;
    size_t me;
    size_t n;
    LocalTensor out;
  };

  [[noreturn]] void StepFail(const StepRun& s, const std::string& what) const {
    throw InternalError(DescribeStep(s.k, s.t) + ": " + what);
  }

  void RequireFull(const StepRun& s, int64_t got, int64_t want, int64_t who) const {
    if (got != want) {
      StepFail(s, "rank " + std::to_string(who) + " needs " + std::to_string(want) +
                      " elements but the group holds " + std::to_string(got) + " of them");
    }
  }

  LocalTensor Step(int64_t k, const Transform& t, const StepGeometry& geometry, const LocalTensor& cur,
                   bool shapes_current) {
    const size_t me = MemberIndex(geometry.group);
    StepRun s{k,
              t,
              geometry,
              cur,
              me,
              geometry.group.ranks.size(),
              LocalTensor::Uninitialized(geometry.after[me].local_shape, cur.dtype())};
    if (t.src.IsPartial()) return StepFromPartial(s);
    if (t.src.IsReplicate()) return StepFromReplicate(s);
    return StepFromShard(s, shapes_current);
  }

  // P -> R (all_reduce) or P -> S (reduce_scatter).
  LocalTensor StepFromPartial(StepRun& s) {
    const Transform& t = s.t;
    const Group& group = s.geometry.group;
    if (t.dst.IsPartial()) {
      throw Unsupported(DescribeStep(s.k, t) +
                        ": redistributing from one partial type to another is unsupported");
    }
    Reduction reduction{t.src.op, std::max<int64_t>(1, t.avg_scale)};
    if (t.dst.IsReplicate()) {
      if (s.geometry.after[s.me].local_shape != s.geometry.before[s.me].local_shape)
        StepFail(s, "all_reduce changes the local shape");
      Record(s.k, group, comm_->AllReduce(group, reduction, ViewOf(s.cur), MutableViewOf(s.out)), false);
      return std::move(s.out);
    }
    const StepPairs& pairs = s.geometry.pairs;
    std::vector<SendView> send;
    for (size_t j = 0; j < s.n; ++j) {
      const PairBoxes& p = pairs.send[j];
      RequireFull(s, p.count, NumElements(s.geometry.after[j].local_shape), group.ranks[j]);
      send.push_back(ViewOf(s.cur, p.holder));
    }
    Record(s.k, group,
           comm_->ReduceScatterV(group, reduction, std::move(send),
                                 MutableViewOf(s.out, pairs.send[s.me].other)),
           false);
    return std::move(s.out);
  }

  // R -> P (partition the value) or R -> S (a local chunk); no communication.
  LocalTensor StepFromReplicate(StepRun& s) {
    if (s.t.dst.IsPartial()) {
      s.out = s.cur;
      PartitionValue(s.out, s.t.dst.op, static_cast<int64_t>(s.me), static_cast<int64_t>(s.n));
      return std::move(s.out);
    }
    const PairBoxes& p = s.geometry.pairs.send[s.me];
    RequireFull(s, p.count, s.out.numel(), rank_);
    detail::CopyView(ViewOf(s.cur, p.holder), MutableViewOf(s.out, p.other));
    return std::move(s.out);
  }

  // Shard-like source: group members hold disjoint pieces; each receiver takes from every member
  // exactly the intersection of that member's piece with its own target piece (all_gather to R,
  // all_to_all to another shard).
  LocalTensor StepFromShard(StepRun& s, bool shapes_current) {
    const Transform& t = s.t;
    const Group& group = s.geometry.group;
    const StepPairs& pairs = s.geometry.pairs;
    if (t.dst.IsPartial()) {
      throw Unsupported(DescribeStep(s.k, t) + ": redistribute from " + t.src.ToString() + " to " +
                        t.dst.ToString() + " not supported yet");
    }
    std::vector<RecvView> recv;
    int64_t received = 0;
    for (size_t i = 0; i < s.n; ++i) {
      const PairBoxes& p = pairs.recv[i];
      received += p.count;
      recv.push_back(MutableViewOf(s.out, p.other));
    }
    RequireFull(s, received, s.out.numel(), rank_);
    if (t.dst.IsReplicate()) {
      for (size_t i = 0; i < s.n; ++i)
        RequireFull(s, recv[i].Count(), NumElements(s.geometry.before[i].local_shape), group.ranks[i]);
      Record(s.k, group, comm_->AllGatherV(group, ViewOf(s.cur), std::move(recv)), false);
      return std::move(s.out);
    }
    std::vector<SendView> send;
    for (size_t j = 0; j < s.n; ++j) send.push_back(ViewOf(s.cur, pairs.send[j].holder));
    if (!shapes_current) NegotiateShapes(s, send, recv);
    Record(s.k, group, comm_->AllToAllV(group, std::move(send), std::move(recv)), false);
    return std::move(s.out);
  }

  // Negotiated receive shapes (ShardTensor's fallback): one small all_to_all of per-dim extents
  // before the data. The layouts must agree with what peers announce.
  void NegotiateShapes(const StepRun& s, const std::vector<SendView>& send,
                       const std::vector<RecvView>& recv) {
    const Group& group = s.geometry.group;
    std::vector<std::vector<int64_t>> announce;
    for (const SendView& v : send) announce.push_back(DimSizes(v.boxes[0]));
    CollectiveStats stats;
    std::vector<std::vector<int64_t>> got = comm_->ExchangeShapes(group, std::move(announce), &stats);
    Record(s.k, group, stats, true);
    for (size_t i = 0; i < s.n; ++i) {
      if (got[i] != DimSizes(recv[i].boxes[0])) {
        StepFail(s, "rank " + std::to_string(group.ranks[i]) + " announces a chunk of " +
                        FormatShape(got[i]) + " but the layout expects " +
                        FormatShape(DimSizes(recv[i].boxes[0])));
      }
    }
  }

  Communicator* comm_;
  int64_t rank_;
  const TensorSpec& src_;
  const TensorSpec& dst_;
  const Plan& plan_;
  const ExecuteOptions& options_;
  RedistributeRecords* records_;
  const Mesh& mesh_;
  PlanLayouts layouts_;
};

}  // namespace

std::string_view ShapeModeName(ShapeMode mode) { return mode == ShapeMode::kKnown ? "known" : "infer"; }

LocalTensor Redistribute(Communicator& comm, int64_t rank, const LocalTensor& in, const TensorSpec& src,
                         const TensorSpec& dst, const Plan& plan, const ExecuteOptions& options) {
  if (rank != comm.rank()) {
    throw InvalidInput("redistribute: rank " + std::to_string(rank) + " runs on the communicator of rank " +
                       std::to_string(comm.rank()));
  }
  if (!(src.mesh == dst.mesh)) throw InvalidInput("redistribute: src and dst live on different meshes");
  if (src.shape != dst.shape || src.dtype != dst.dtype) {
    throw InvalidInput("redistribute: src is " + FormatShape(src.shape) + " " +
                       std::string(DTypeName(src.dtype)) + " but dst is " + FormatShape(dst.shape) + " " +
                       std::string(DTypeName(dst.dtype)));
  }
  if (src.chunking != dst.chunking) {
    throw Unsupported("redistribute: src chunks with " + std::string(ChunkRuleName(src.chunking)) +
                      " but dst with " + std::string(ChunkRuleName(dst.chunking)));
  }
  if (in.dtype() != src.dtype) {
    throw InvalidInput("redistribute: local tensor is " + std::string(DTypeName(in.dtype())) +
                       " but the spec says " + std::string(DTypeName(src.dtype)));
  }
  if (src.mesh.size() > comm.world_size()) {
    throw InvalidInput("redistribute: the mesh has " + std::to_string(src.mesh.size()) +
                       " ranks but the communicator only " + std::to_string(comm.world_size()));
  }
  if (!options.trace) return Executor(comm, rank, src, dst, plan, options).Run(in);
  RedistributeRecords records(src, dst, plan, options);
  records.Begin();
  try {
    LocalTensor out = Executor(comm, rank, src, dst, plan, options, &records).Run(in);
    records.End(true, "", in, &out);
    return out;
  } catch (const std::exception& e) {
    records.End(false, e.what(), in, nullptr);
    throw;
  }
}

}  // namespace shardscope::engine
