// PyTorch DTensorRedistributePlanner.generate_graph_based_transform_infos (R-new): Dijkstra over
// DistState = (placements, shard order) with get_next_state's edges and
// one_step_redistribute_cost as the edge weight.

#include <algorithm>
#include <array>
#include <cstring>
#include <queue>
#include <string>
#include <utility>

#include "plan/planner_internal.hpp"
#include "shardscope/engine/core/layout.hpp"
#include "shardscope/engine/plan/planner.hpp"
#include "shardscope/error.hpp"

namespace shardscope::engine {
namespace {

constexpr int kMaxMeshDims = 8;
constexpr int kMaxTensorDims = 16;
// A bound on pushed states so a pathological request fails with a message instead of eating
// the machine (PyTorch's own bound is (N+2)*M*M! states, unbounded in practice).
constexpr size_t kMaxPushedStates = size_t{1} << 22;

// One byte per mesh dim: 0 = R, 1 + op = P(op), kShardBase + d = S(d), kStridedBase + k = the
// k-th literal _StridedShard: first the target's (PyTorch's strided_shard_placements_in_target,
// the only ones cases 9, 10 and 11 create), then any other the source holds.
constexpr uint8_t kCodeReplicate = 0;
constexpr uint8_t kPartialBase = 1;
constexpr uint8_t kShardBase = 8;
constexpr uint8_t kStridedBase = kShardBase + kMaxTensorDims;
constexpr uint8_t kNoPosition = 0xFF;

bool IsPartialCode(uint8_t c) { return c >= kPartialBase && c < kShardBase; }
bool IsShardCode(uint8_t c) { return c >= kShardBase && c < kStridedBase; }
bool IsStridedCode(uint8_t c) { return c >= kStridedBase; }

// DistState in 16 bytes. The shard order is stored as each shard-like mesh dim's position in
// its tensor dim's list; with the tensor dim taken from the placement this is a bijection with
// PyTorch's (placements, ShardOrder) pair, so equality and hashing match DistState's.
struct State {
  std::array<uint8_t, kMaxMeshDims> code{};
  std::array<uint8_t, kMaxMeshDims> pos{};
  bool operator==(const State& o) const { return std::memcmp(this, &o, sizeof(State)) == 0; }
};
static_assert(sizeof(State) == 2 * kMaxMeshDims, "State must have no padding for memcmp");

uint64_t HashState(const State& s) {
  uint64_t a = 0;
  uint64_t b = 0;
  std::memcpy(&a, s.code.data(), sizeof(a));
  std::memcpy(&b, s.pos.data(), sizeof(b));
  uint64_t h = a * 0x9E3779B97F4A7C15ULL ^ (b + 0x632BE59BD9B4E019ULL + (a << 6) + (a >> 2));
  h ^= h >> 31;
  h *= 0xBF58476D1CE4E5B9ULL;
  h ^= h >> 29;
  return h;
}

// Open-addressing table of the states seen by the search: PyTorch's visited set, plus the
// cheapest cost any push of the state carried (see the search loop for why that is safe).
class StateTable {
 public:
  struct Slot {
    State key;
    double best_cost = 0.0;
    bool used = false;
    bool visited = false;
  };

  StateTable() : slots_(kInitialSize), mask_(kInitialSize - 1) {}

  /// The slot of `s`, inserted (used, not visited, best_cost unset) when new. The reference is
  /// valid until the next call.
  Slot& Get(const State& s, bool& inserted) {
    if (2 * (size_ + 1) > slots_.size()) Grow();
    Slot& slot = Probe(s);
    inserted = !slot.used;
    if (inserted) {
      slot.used = true;
      slot.key = s;
      ++size_;
    }
    return slot;
  }

 private:
  static constexpr size_t kInitialSize = 1024;

  Slot& Probe(const State& s) {
    for (size_t i = HashState(s) & mask_;; i = (i + 1) & mask_) {
      Slot& slot = slots_[i];
      if (!slot.used || slot.key == s) return slot;
    }
  }

  void Grow() {
    std::vector<Slot> old(slots_.size() * 2);
    old.swap(slots_);
    mask_ = slots_.size() - 1;
    for (const Slot& slot : old) {
      if (slot.used) Probe(slot.key) = slot;
    }
  }

  std::vector<Slot> slots_;
  size_t mask_;
  size_t size_ = 0;
};

// The per-tensor-dim shard order lists of a state (PyTorch's _ShardOrder_to_dict).
struct OrderLists {
  std::array<std::array<uint8_t, kMaxMeshDims>, kMaxTensorDims> dims{};
  std::array<uint8_t, kMaxTensorDims> len{};
};

class GraphSearch {
 public:
  GraphSearch(const TensorSpec& spec, const PlanOptions& options, Placements strided, size_t strided_targets,
              std::vector<ReduceOp> partial_ops)
      : mesh_(spec.mesh),
        mesh_ndim_(spec.mesh.ndim()),
        tensor_ndim_(static_cast<int>(spec.shape.size())),
        topo_(BuildMeshTopo(spec.mesh, options.devices_per_host)),
        bytes_(static_cast<double>(DTypeSize(spec.dtype)) * static_cast<double>(NumElements(spec.shape))),
        strided_(std::move(strided)),
        strided_targets_(strided_targets),
        partial_ops_(std::move(partial_ops)) {}

  State Encode(const Placements& placements, const ShardOrder& order, const char* side) const {
    ValidateShardOrder(order, placements, std::string("graph planner: ") + side);
    State s;
    s.pos.fill(kNoPosition);
    for (int md = 0; md < mesh_ndim_; ++md)
      s.code[static_cast<size_t>(md)] = CodeOf(placements[static_cast<size_t>(md)], side);
    for (const auto& e : order) {
      for (size_t k = 0; k < e.mesh_dims.size(); ++k)
        s.pos[static_cast<size_t>(e.mesh_dims[k])] = static_cast<uint8_t>(k);
    }
    return s;
  }

  Placement Decode(uint8_t code) const {
    if (code == kCodeReplicate) return Placement::Replicate();
    if (IsPartialCode(code)) return Placement::Partial(static_cast<ReduceOp>(code - kPartialBase));
    if (IsShardCode(code)) return Placement::Shard(code - kShardBase);
    return strided_[static_cast<size_t>(code - kStridedBase)];
  }

  OrderLists ListsOf(const State& s) const {
    OrderLists l;
    for (int md = 0; md < mesh_ndim_; ++md) {
      const uint8_t c = s.code[static_cast<size_t>(md)];
      if (!IsShardCode(c) && !IsStridedCode(c)) continue;
      const auto td = static_cast<size_t>(TensorDimOf(c));
      l.dims[td][s.pos[static_cast<size_t>(md)]] = static_cast<uint8_t>(md);
      ++l.len[td];
    }
    return l;
  }

  Placements PlacementsOf(const State& s) const {
    Placements p;
    for (int md = 0; md < mesh_ndim_; ++md) p.push_back(Decode(s.code[static_cast<size_t>(md)]));
    return p;
  }

  ShardOrder OrderOf(const State& s) const {
    OrderLists l = ListsOf(s);
    ShardOrder order;
    for (int td = 0; td < tensor_ndim_; ++td) {
      if (l.len[static_cast<size_t>(td)] == 0) continue;
      ShardOrderEntry e{td, {}};
      for (int k = 0; k < l.len[static_cast<size_t>(td)]; ++k)
        e.mesh_dims.push_back(l.dims[static_cast<size_t>(td)][static_cast<size_t>(k)]);
      order.push_back(std::move(e));
    }
    return order;
  }

  // comm_bytes_gb of state_to_spec(state): the local bytes under its shard-like placements.
  double Gigabytes(const State& state) const {
    int64_t num_shards = 1;
    for (int i = 0; i < mesh_ndim_; ++i) {
      const uint8_t c = state.code[static_cast<size_t>(i)];
      if (IsShardCode(c) || IsStridedCode(c)) num_shards *= mesh_.size(i);
    }
    return bytes_ / static_cast<double>(num_shards) / (1024.0 * 1024.0 * 1024.0);
  }

  // one_step_redistribute_cost(state_to_spec(from), state_to_spec(to)) for a single changed
  // mesh dim: the transition cost from `from`'s local bytes.
  double EdgeCost(const State& from, double gigabytes, int md, uint8_t to_code) const {
    return TransitionCostUs(Decode(from.code[static_cast<size_t>(md)]), Decode(to_code), topo_, md,
                            gigabytes);
  }

  // PyTorch get_next_state: cases in its order, each emitted state with its edge cost. Every
  // edge changes exactly one mesh dim to a placement that no other case gives that dim, so no
  // state repeats within one expansion and the dict's "first position, last cost" rule is moot.
  template <typename Emit>
  void Expand(const State& cur, Emit&& emit) const {
    const OrderLists l = ListsOf(cur);
    const double gigabytes = Gigabytes(cur);
    auto code_at = [&](int md) { return cur.code[static_cast<size_t>(md)]; };

    // Case 1: S(a)->S(b), b != a (all_to_all): only the newest mesh dim of a's order moves, and
    // it becomes the newest of b's (IsShardCode skips _StridedShard).
    ForEachNewest(
        cur, l, [](uint8_t c) { return IsShardCode(c); },
        [&](int a, int md) {
          for (int b = 0; b < tensor_ndim_; ++b) {
            if (b == a) continue;
            State next = cur;
            next.code[static_cast<size_t>(md)] = static_cast<uint8_t>(kShardBase + b);
            next.pos[static_cast<size_t>(md)] = l.len[static_cast<size_t>(b)];
            emit(next, md, EdgeCost(cur, gigabytes, md, next.code[static_cast<size_t>(md)]));
          }
        });
    // Case 2: S->R (all_gather) of the newest mesh dim of each order entry.
    EmitGatherNewest(
        cur, l, gigabytes, [](uint8_t c) { return IsShardCode(c); }, emit);
    // Case 3: P->R (all_reduce); the order is unchanged.
    for (int md = 0; md < mesh_ndim_; ++md) {
      if (IsPartialCode(code_at(md))) EmitSet(cur, gigabytes, md, kCodeReplicate, kNoPosition, emit);
    }
    // Case 4: R->S(b) (local chunk), appended as the newest of b's order.
    EmitShardEveryDim(
        cur, l, gigabytes, [](uint8_t c) { return c == kCodeReplicate; }, emit);
    // Case 5: P->S(b) (reduce_scatter), likewise.
    EmitShardEveryDim(
        cur, l, gigabytes, [](uint8_t c) { return IsPartialCode(c); }, emit);
    // Case 6: R->P(op) (local) for the reduce ops of this redistribute, skipping a mixed set
    // other than {sum, avg}.
    for (int md = 0; md < mesh_ndim_; ++md) {
      if (code_at(md) != kCodeReplicate) continue;
      for (ReduceOp op : partial_ops_) {
        unsigned mask = 1u << static_cast<unsigned>(op);
        for (int i = 0; i < mesh_ndim_; ++i) {
          if (i != md && IsPartialCode(code_at(i))) mask |= 1u << (code_at(i) - kPartialBase);
        }
        const unsigned sum_avg =
            (1u << static_cast<unsigned>(ReduceOp::kSum)) | (1u << static_cast<unsigned>(ReduceOp::kAvg));
        const bool mixed = (mask & (mask - 1)) != 0;
        if (mixed && mask != sum_avg) continue;
        EmitSet(cur, gigabytes, md, static_cast<uint8_t>(kPartialBase + static_cast<unsigned>(op)),
                kNoPosition, emit);
      }
    }
    // Case 7: _S(a)->S(b), b != a (all_to_all): the newest mesh dim of a's order, a
    // _StridedShard, becomes the newest of b's as a plain Shard (SS(a)[..., x] -> S(b)[..., x]).
    ForEachNewest(
        cur, l, [](uint8_t c) { return IsStridedCode(c); },
        [&](int a, int md) {
          for (int b = 0; b < tensor_ndim_; ++b) {
            if (b == a) continue;
            EmitSet(cur, gigabytes, md, static_cast<uint8_t>(kShardBase + b), l.len[static_cast<size_t>(b)],
                    emit);
          }
        });
    // Case 8: _S->R (all_gather) of the newest mesh dim of each order entry.
    EmitGatherNewest(
        cur, l, gigabytes, [](uint8_t c) { return IsStridedCode(c); }, emit);
    if (strided_targets_ == 0) return;
    // Case 9: S(a)->_S(b), b != a (all_to_all), with a target's (dim, split_factor): the newest
    // mesh dim of a's order becomes the newest of b's (S(a)[..., x] -> SS(b)[..., x]).
    ForEachNewest(
        cur, l, [](uint8_t c) { return IsShardCode(c); },
        [&](int a, int md) {
          for (size_t k = 0; k < strided_targets_; ++k) {
            const int b = strided_[k].dim;
            if (b == a) continue;
            EmitSet(cur, gigabytes, md, static_cast<uint8_t>(kStridedBase + k), l.len[static_cast<size_t>(b)],
                    emit);
          }
        });
    // Case 10: P->_S (reduce_scatter) with a target's (dim, split_factor), appended as the newest
    // of that dim's order.
    for (int md = 0; md < mesh_ndim_; ++md) {
      if (!IsPartialCode(code_at(md))) continue;
      for (size_t k = 0; k < strided_targets_; ++k) {
        const int td = strided_[k].dim;
        EmitSet(cur, gigabytes, md, static_cast<uint8_t>(kStridedBase + k), l.len[static_cast<size_t>(td)],
                emit);
      }
    }
    // Case 11: R->_S with a target's (dim, split_factor).
    for (int md = 0; md < mesh_ndim_; ++md) {
      if (code_at(md) != kCodeReplicate) continue;
      for (size_t k = 0; k < strided_targets_; ++k) {
        const int td = strided_[k].dim;
        EmitSet(cur, gigabytes, md, static_cast<uint8_t>(kStridedBase + k), l.len[static_cast<size_t>(td)],
                emit);
      }
    }
  }

  // PyTorch get_logical_shape: the full shape with every sharding mesh dim of `state`'s order
  // except `md` applied per tensor dim in order, using this rank's coordinate.
  Shape LogicalShape(const State& state, int md, const std::vector<int64_t>& coord, const TensorSpec& src,
                     const TensorSpec& dst, const ShardOrder& src_order, const ShardOrder& dst_order) const {
    Shape shape = src.shape;
    const OrderLists l = ListsOf(state);
    for (int td = 0; td < tensor_ndim_; ++td) {
      const auto& dims = l.dims[static_cast<size_t>(td)];
      const int n = l.len[static_cast<size_t>(td)];
      int64_t& extent = shape[static_cast<size_t>(td)];
      for (int k = 0; k < n; ++k) {
        const int mdim = dims[static_cast<size_t>(k)];
        if (mdim == md) continue;
        const uint8_t c = state.code[static_cast<size_t>(mdim)];
        const int64_t index = coord[static_cast<size_t>(mdim)];
        if (IsStridedCode(c)) {
          const Placement& p = strided_[static_cast<size_t>(c - kStridedBase)];
          extent = IndexSetSize(
              StridedShardPositions(extent, mesh_.size(mdim), index, p.split_factor, src.chunking));
          continue;
        }
        // A spec's explicit per-rank sizes describe a split only where the state splits the
        // same extent as that spec: the same mesh dims precede this one in the tensor dim's
        // order. Elsewhere the source's chunk rule applies.
        const TensorSpec* rule = &src;
        if (!SamePrefix(src_order, td, dims, k) && SamePrefix(dst_order, td, dims, k)) rule = &dst;
        extent = detail::ShardExtent(*rule, mdim, extent, index);
      }
    }
    return shape;
  }

 private:
  // X->R (all_gather) of the newest mesh dim of each order entry, where that dim's code is of
  // the kind `is_kind` accepts.
  template <typename IsKind, typename Emit>
  void EmitGatherNewest(const State& cur, const OrderLists& l, double gigabytes, IsKind is_kind,
                        Emit& emit) const {
    ForEachNewest(cur, l, is_kind,
                  [&](int, int md) { EmitSet(cur, gigabytes, md, kCodeReplicate, kNoPosition, emit); });
  }

  // fn(a, md) for each tensor dim a whose order's newest mesh dim md holds a code `is_kind`
  // accepts, in tensor dim order.
  template <typename IsKind, typename Fn>
  void ForEachNewest(const State& cur, const OrderLists& l, IsKind is_kind, Fn&& fn) const {
    for (int a = 0; a < tensor_ndim_; ++a) {
      const uint8_t n = l.len[static_cast<size_t>(a)];
      if (n == 0) continue;
      const int md = l.dims[static_cast<size_t>(a)][n - 1];
      if (is_kind(cur.code[static_cast<size_t>(md)])) fn(a, md);
    }
  }

  // X->S(b) for every tensor dim b, appended as the newest of b's order, on each mesh dim whose
  // code is of the kind `is_kind` accepts.
  template <typename IsKind, typename Emit>
  void EmitShardEveryDim(const State& cur, const OrderLists& l, double gigabytes, IsKind is_kind,
                         Emit& emit) const {
    for (int md = 0; md < mesh_ndim_; ++md) {
      if (!is_kind(cur.code[static_cast<size_t>(md)])) continue;
      for (int b = 0; b < tensor_ndim_; ++b) {
        EmitSet(cur, gigabytes, md, static_cast<uint8_t>(kShardBase + b), l.len[static_cast<size_t>(b)],
                emit);
      }
    }
  }

  template <typename Emit>
  void EmitSet(const State& cur, double gigabytes, int md, uint8_t code, uint8_t pos, Emit& emit) const {
    State next = cur;
    next.code[static_cast<size_t>(md)] = code;
    next.pos[static_cast<size_t>(md)] = pos;
    emit(next, md, EdgeCost(cur, gigabytes, md, code));
  }

  int TensorDimOf(uint8_t code) const {
    if (IsShardCode(code)) return code - kShardBase;
    return strided_[static_cast<size_t>(code - kStridedBase)].dim;
  }

  uint8_t CodeOf(const Placement& p, const char* side) const {
    switch (p.kind) {
      case PlacementKind::kReplicate:
        return kCodeReplicate;
      case PlacementKind::kPartial:
        return static_cast<uint8_t>(kPartialBase + static_cast<unsigned>(p.op));
      case PlacementKind::kShard:
        return static_cast<uint8_t>(kShardBase + p.dim);
      case PlacementKind::kStridedShard:
        break;
    }
    for (size_t k = 0; k < strided_.size(); ++k) {
      if (strided_[k] == p) return static_cast<uint8_t>(kStridedBase + k);
    }
    throw InternalError(std::string("graph planner: ") + side + " placement " + p.ToString() +
                        " survived shard-order normalization");
  }

  static bool SamePrefix(const ShardOrder& order, int td, const std::array<uint8_t, kMaxMeshDims>& dims,
                         int k) {
    for (const auto& e : order) {
      if (e.tensor_dim != td) continue;
      if (static_cast<int>(e.mesh_dims.size()) <= k) return false;
      for (int i = 0; i <= k; ++i) {
        if (e.mesh_dims[static_cast<size_t>(i)] != dims[static_cast<size_t>(i)]) return false;
      }
      return true;
    }
    return false;
  }

  const Mesh& mesh_;
  int mesh_ndim_;
  int tensor_ndim_;
  MeshTopo topo_;
  double bytes_;
  Placements strided_;      // every literal _StridedShard of either spec, targets first
  size_t strided_targets_;  // how many of strided_ come from the target
  std::vector<ReduceOp> partial_ops_;
};

// _try_normalize_spec: a spec holding _StridedShards without an explicit order is turned into
// plain Shards plus the decoded order (use_strided_shard_as_shard_order); others keep their
// placements, literal _StridedShards included, and their (effective) order.
std::pair<Placements, ShardOrder> NormalizeForGraph(const TensorSpec& spec, const char* side) {
  if (!spec.HasStridedShard() || spec.shard_order) return {spec.placements, spec.EffectiveOrder()};
  auto decoded = StridedPlacementsToShardOrder(spec.placements, spec.mesh);
  if (!decoded) {
    // MakePlan falls back to greedy on this, as R-new does on _StridedShardNotDecodableError.
    throw StridedShardNotDecodable(
        std::string("graph planner: ") + side + " placements '" + FormatPlacements(spec.placements) +
        "' are not decodable into a shard order on a " + spec.mesh.ToString() + " mesh");
  }
  return std::move(*decoded);
}

struct Node {
  State state;
  int32_t parent;
  int mesh_dim;  // the mesh dim the edge into this node changed
  double cost;
  double edge_cost;
};

// Appends the _StridedShard placements of `placements` that `targets` does not hold yet.
void AddStridedTargets(const Placements& placements, Placements& targets) {
  for (const Placement& p : placements) {
    if (p.IsStridedShard() && std::find(targets.begin(), targets.end(), p) == targets.end()) {
      targets.push_back(p);
    }
  }
}

// The reduce ops of the Partial placements on either side, in ReduceOp order.
std::vector<ReduceOp> PartialOps(const Placements& src, const Placements& dst) {
  std::vector<ReduceOp> partial_ops;
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAvg, ReduceOp::kMin, ReduceOp::kMax, ReduceOp::kProduct}) {
    auto has_op = [op](const Placement& p) { return p.IsPartial() && p.op == op; };
    if (std::any_of(src.begin(), src.end(), has_op) || std::any_of(dst.begin(), dst.end(), has_op)) {
      partial_ops.push_back(op);
    }
  }
  return partial_ops;
}

// find_min_cost_path: a heap of (cost, push counter), so equal costs pop in push order; the
// goal is tested on pop, before the visited check. Each push keeps its own predecessor, which
// is PyTorch's per-entry path. A push whose state was already pushed at a cost <= this one is
// dropped: PyTorch would push it, but the earlier entry pops first (lower cost, or equal cost
// and lower counter) and leaves the state visited, so the dropped entry could never be used.
// Fills `nodes` (node 0 is the start) and returns the goal's node, or -1 when it is unreachable.
int32_t FindMinCostPath(const GraphSearch& search, const State& start, const State& goal,
                        std::vector<Node>& nodes) {
  nodes.reserve(1024);
  nodes.push_back({start, -1, -1, 0.0, 0.0});
  using Entry = std::pair<double, int32_t>;
  std::vector<Entry> heap_storage;
  heap_storage.reserve(1024);
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> heap(std::greater<Entry>{},
                                                                           std::move(heap_storage));
  heap.push({0.0, 0});
  StateTable table;
  bool inserted = false;
  table.Get(start, inserted).best_cost = 0.0;
  while (!heap.empty()) {
    const auto [cost, index] = heap.top();
    heap.pop();
    const State current = nodes[static_cast<size_t>(index)].state;
    if (current == goal) return index;
    StateTable::Slot& slot = table.Get(current, inserted);
    if (slot.visited) continue;
    slot.visited = true;
    search.Expand(current, [&](const State& next, int md, double edge) {
      StateTable::Slot& seen = table.Get(next, inserted);
      const double next_cost = cost + edge;
      if (!inserted && (seen.visited || seen.best_cost <= next_cost)) return;
      seen.best_cost = next_cost;
      if (nodes.size() >= kMaxPushedStates) {
        throw Unsupported("graph planner: search exceeded " + std::to_string(kMaxPushedStates) +
                          " states; use the greedy planner");
      }
      nodes.push_back({next, index, md, next_cost, edge});
      heap.push({next_cost, static_cast<int32_t>(nodes.size() - 1)});
    });
  }
  return -1;
}

}  // namespace

bool GraphFallsBackToGreedy(const Error& e) {
  return dynamic_cast<const StridedShardNotDecodable*>(&e) != nullptr;
}

std::vector<Transform> PlanGraph(const TensorSpec& src, const TensorSpec& dst, int64_t rank,
                                 const PlanOptions& options) {
  detail::CheckPlannable(src, dst, "graph planner");
  const Mesh& mesh = src.mesh;
  if (mesh.ndim() > kMaxMeshDims || src.shape.size() > static_cast<size_t>(kMaxTensorDims)) {
    throw Unsupported("graph planner: a " + std::to_string(mesh.ndim()) + "-d mesh with a " +
                      std::to_string(src.shape.size()) + "-d tensor is beyond its limits (" +
                      std::to_string(kMaxMeshDims) + " mesh dims, " + std::to_string(kMaxTensorDims) +
                      " tensor dims); use the greedy planner");
  }
  const std::vector<int64_t> coord = mesh.Coordinate(rank);
  auto [src_placements, src_order] = NormalizeForGraph(src, "source");
  auto [dst_placements, dst_order] = NormalizeForGraph(dst, "target");

  // strided_shard_placements_in_target / partial_reduce_ops_in_target, gathered from this
  // redistribute only. PyTorch keeps them on a planner cached per (mesh, tensor meta), so they
  // can also hold leftovers of earlier calls, and it iterates the op set in string-hash order;
  // we use ReduceOp order (it only breaks exact cost ties between sum and avg).
  Placements strided_targets;
  AddStridedTargets(dst_placements, strided_targets);
  const size_t num_targets = strided_targets.size();
  AddStridedTargets(src_placements, strided_targets);
  if (strided_targets.size() > static_cast<size_t>(0xFF - kStridedBase)) {
    throw Unsupported("graph planner: too many distinct _StridedShard placements");
  }
  std::vector<ReduceOp> partial_ops = PartialOps(src_placements, dst_placements);

  GraphSearch search(src, options, std::move(strided_targets), num_targets, std::move(partial_ops));
  const State start = search.Encode(src_placements, src_order, "source");
  const State goal = search.Encode(dst_placements, dst_order, "target");

  std::vector<Node> nodes;
  const int32_t found = FindMinCostPath(search, start, goal, nodes);
  if (found < 0) {
    throw Unsupported("graph planner: no path from " + FormatShardOrderStr(src_placements, src_order) +
                      " to " + FormatShardOrderStr(dst_placements, dst_order));
  }

  std::vector<int32_t> path;
  for (int32_t i = found; i > 0; i = nodes[static_cast<size_t>(i)].parent) path.push_back(i);
  std::reverse(path.begin(), path.end());
  std::vector<Transform> out;
  out.reserve(path.size());
  State cur = start;
  for (int32_t i : path) {
    const Node& node = nodes[static_cast<size_t>(i)];
    const int md = node.mesh_dim;
    Transform t;
    t.mesh_dims = {md};
    t.src = search.Decode(cur.code[static_cast<size_t>(md)]);
    t.dst = search.Decode(node.state.code[static_cast<size_t>(md)]);
    t.logical_shape = search.LogicalShape(cur, md, coord, src, dst, src_order, dst_order);
    t.comm = CommKindOf(t.src, t.dst);
    t.cost_us = node.edge_cost;
    out.push_back(std::move(t));
    cur = node.state;
  }
  return out;
}

}  // namespace shardscope::engine
