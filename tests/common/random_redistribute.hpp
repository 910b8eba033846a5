#pragma once
// Random redistribute cases for the property tests of every backend (local: tests/engine, MPI:
// tests/mpi, cuda/nccl: tests/gpu), and the case count they run (SHARDSCOPE_PROPERTY_CASES).
#include <algorithm>
#include <cstdint>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "shardscope/engine/core/shard_order.hpp"
#include "shardscope/engine/exec/executor.hpp"
#include "shardscope/engine/plan/planner.hpp"
#include "shardscope/error.hpp"
#include "test_knobs.hpp"

namespace shardscope::testing {

using namespace shardscope::engine;

/// SHARDSCOPE_PROPERTY_CASES, or `fallback` when unset; a bad value throws naming the knob.
inline int64_t PropertyCases(int64_t fallback = 2000) {
  return KnobInteger(knobs::PropertyCases()).value_or(fallback);
}

inline const char* PlannerName(PlannerChoice planner) {
  return planner == PlannerChoice::kAuto ? "auto" : planner == PlannerChoice::kGreedy ? "greedy" : "graph";
}

/// One random redistribute: specs, planner options, shape mode and the input tensor's seed.
struct Case {
  TensorSpec src;
  TensorSpec dst;
  PlanOptions plan_options;
  ShapeMode shapes = ShapeMode::kKnown;
  uint64_t seed = 0;

  std::string Describe() const {
    std::ostringstream out;
    out << "mesh " << src.mesh.ToString() << " flattened " << src.mesh.flattened().size() << " shape "
        << FormatShape(src.shape) << " " << DTypeName(src.dtype) << " " << FormatPlacements(src.placements);
    if (src.shard_order) out << " order " << FormatShardOrder(*src.shard_order);
    out << " -> " << FormatPlacements(dst.placements);
    if (dst.shard_order) out << " order " << FormatShardOrder(*dst.shard_order);
    out << " planner " << PlannerName(plan_options.planner) << " optimize " << plan_options.optimize
        << " shapes " << ShapeModeName(shapes) << " seed " << seed;
    return out.str();
  }
};

/// Draws the same cases for the same seed (no rank-dependent state: every MPI rank draws alike).
/// Every placement kind (S, literal and encoded _StridedShard, R, P(op)), shard orders, zero and
/// small extents, every dtype and reduce op, all planners and both shape modes.
class Generator {
 public:
  /// `meshes` empty: random meshes of 1-4 dims and up to 16 ranks (some flattened sub-meshes);
  /// otherwise one of `meshes` (the MPI and GPU suites' world sizes), half of them flattened.
  explicit Generator(uint64_t seed, std::vector<Shape> meshes = {})
      : rng_(seed), meshes_(std::move(meshes)) {}

  int64_t Uniform(int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng_); }
  bool Chance(double p) { return std::bernoulli_distribution(p)(rng_); }

  Mesh RandomMesh() {
    if (!meshes_.empty()) {
      Mesh mesh(meshes_[static_cast<size_t>(Uniform(0, static_cast<int64_t>(meshes_.size()) - 1))]);
      if (mesh.ndim() >= 2 && Chance(0.5)) mesh.RegisterAllFlattened();
      return mesh;
    }
    while (true) {
      int nd = static_cast<int>(Uniform(1, 4));
      Shape shape;
      for (int i = 0; i < nd; ++i) shape.push_back(Uniform(1, nd == 1 ? 8 : 4));
      if (NumElements(shape) > 16) continue;
      Mesh mesh(shape);
      if (nd >= 2 && Chance(0.6)) {
        if (Chance(0.5)) {
          mesh.RegisterAllFlattened();
        } else {
          for (int a = 0; a < nd; ++a)
            for (int b = a + 1; b < nd; ++b)
              if (Chance(0.5)) mesh.RegisterFlattened({a, b});
        }
      }
      return mesh;
    }
  }

  Shape RandomShape(const Mesh& mesh) {
    int nd = static_cast<int>(Uniform(0, 3));
    Shape shape;
    int64_t hi = std::min<int64_t>(9, mesh.size() + 2);
    for (int i = 0; i < nd; ++i) shape.push_back(Chance(0.1) ? 0 : Uniform(1, hi));
    return shape;
  }

  ReduceOp RandomOp() {
    static const ReduceOp ops[] = {ReduceOp::kSum, ReduceOp::kAvg, ReduceOp::kMin, ReduceOp::kMax,
                                   ReduceOp::kProduct};
    return ops[Uniform(0, 4)];
  }

  // A Shard, or (when allowed) sometimes a _StridedShard with a random split factor: such
  // placements are often not decodable into a shard order, which sends PyTorch's graph planner
  // back to greedy (R-new), a class of its own.
  Placement ShardLike(int tensor_ndim, bool allow_strided) {
    const int dim = static_cast<int>(Uniform(0, tensor_ndim - 1));
    if (allow_strided && Chance(0.15)) return Placement::StridedShard(dim, Uniform(2, 4));
    return Placement::Shard(dim);
  }

  // A random shard order, either kept as an order or encoded as _StridedShard placements
  // (PyTorch _convert_shard_order_to_StridedShard), so strided specs are always decodable.
  void RandomOrderOrStrided(const Mesh& mesh, Placements& placements, std::optional<ShardOrder>& order,
                            bool strided) {
    if (!Chance(strided ? 0.8 : 0.3)) return;
    ShardOrder o = DefaultShardOrder(placements);
    for (ShardOrderEntry& e : o) std::shuffle(e.mesh_dims.begin(), e.mesh_dims.end(), rng_);
    // Literal _StridedShards with an explicit order (PyTorch's use_strided_shard_as_shard_order
    // False), kept even when the order is the default one.
    if (std::any_of(placements.begin(), placements.end(),
                    [](const Placement& p) { return p.IsStridedShard(); }) &&
        Chance(0.5)) {
      order = o;
      return;
    }
    if (!strided) {
      order = o;
      return;
    }
    // The _StridedShard encoding describes the same layout as the order only for even splits
    // (uneven ones differ, PyTorch #168134); keep the order form when the layouts differ.
    Placements encoded = ShardOrderToStridedPlacements(placements, o, mesh);
    Shape probe = shape_;
    auto layouts = [&](const Placements& p, std::optional<ShardOrder> ord) {
      return ComputeLayouts(MakeSpec(mesh, p, std::move(ord), probe, DType::kF32, rule_, {}, "probe"));
    };
    std::vector<RankLayout> a = layouts(encoded, std::nullopt), b = layouts(placements, o);
    bool same = true;
    for (size_t r = 0; r < a.size(); ++r) same = same && a[r].indices == b[r].indices;
    if (same) {
      placements = encoded;
    } else {
      order = o;
    }
  }

  // src: any mix of R, S, _S and one Partial op (or sum with avg).
  Placements RandomSrc(const Mesh& mesh, int tensor_ndim, bool allow_strided, ReduceOp op, bool mix_avg) {
    Placements out;
    for (int md = 0; md < mesh.ndim(); ++md) {
      int64_t pick = Uniform(0, 9);
      if (pick < 3 || tensor_ndim == 0) {
        out.push_back(pick < 1 || tensor_ndim == 0
                          ? Placement::Partial(mix_avg && Chance(0.5) ? ReduceOp::kAvg : op)
                          : Placement::Replicate());
        if (tensor_ndim == 0 && Chance(0.5)) out.back() = Placement::Replicate();
      } else if (pick < 5) {
        out.push_back(Placement::Replicate());
      } else {
        out.push_back(ShardLike(tensor_ndim, allow_strided));
      }
    }
    return out;
  }

  // dst: Partial only where PyTorch allows it (kept from src, or from R with sum/avg/min/max).
  Placements RandomDst(const Placements& src, int tensor_ndim, bool allow_strided, ReduceOp op) {
    Placements out;
    bool src_has_partial =
        std::any_of(src.begin(), src.end(), [](const Placement& p) { return p.IsPartial(); });
    ReduceOp dst_op = src_has_partial ? op : RandomOp();
    if (dst_op == ReduceOp::kProduct) dst_op = ReduceOp::kSum;
    for (const Placement& s : src) {
      int64_t pick = Uniform(0, 9);
      if (s.IsPartial() && pick < 3) {
        out.push_back(s);
      } else if (s.IsReplicate() && pick < 2 && (!src_has_partial || op != ReduceOp::kProduct)) {
        out.push_back(Placement::Partial(dst_op));
      } else if (pick < 5 || tensor_ndim == 0) {
        out.push_back(Placement::Replicate());
      } else {
        out.push_back(ShardLike(tensor_ndim, allow_strided));
      }
    }
    return out;
  }

  Case Next() {
    Case c;
    Mesh mesh = RandomMesh();
    Shape shape = RandomShape(mesh);
    int tnd = static_cast<int>(shape.size());
    static const DType dtypes[] = {DType::kF32,  DType::kF64, DType::kF16,
                                   DType::kBF16, DType::kI32, DType::kI64};
    DType dtype = dtypes[Uniform(0, 5)];
    bool strided = Chance(0.3);
    ReduceOp op = RandomOp();
    bool mix_avg = op == ReduceOp::kSum && Chance(0.3);
    Placements src = RandomSrc(mesh, tnd, strided, op, mix_avg);
    Placements dst = RandomDst(src, tnd, strided, op);
    ChunkRule rule = Chance(0.2) ? ChunkRule::kPhysicsNemo : ChunkRule::kTorch;
    shape_ = shape;
    rule_ = rule;
    std::optional<ShardOrder> src_order, dst_order;
    RandomOrderOrStrided(mesh, src, src_order, strided);
    RandomOrderOrStrided(mesh, dst, dst_order, strided && Chance(0.5));
    c.src = MakeSpec(mesh, src, src_order, shape, dtype, rule, {}, "src");
    c.dst = MakeSpec(mesh, dst, dst_order, shape, dtype, rule, {}, "dst");
    // Forced greedy with a _StridedShard is weighted up: PyTorch plans it with the graph planner
    // whatever was asked (greedy only as the fallback for undecodable split factors), so MakePlan
    // must override the request, and plan only runnable fallbacks.
    const bool has_strided = c.src.HasStridedShard() || c.dst.HasStridedShard();
    int64_t planner = has_strided && Chance(0.4) ? 1 : Uniform(0, 2);
    c.plan_options.planner = planner == 0   ? PlannerChoice::kAuto
                             : planner == 1 ? PlannerChoice::kGreedy
                                            : PlannerChoice::kGraph;
    c.plan_options.optimize = Chance(0.7);
    // R -> P targets are PyTorch's internal path (ops, imported dumps); the public guard is
    // checked in make_plan_test.
    c.plan_options.internal_partial_target = true;
    c.shapes = Chance(0.5) ? ShapeMode::kKnown : ShapeMode::kInfer;
    c.seed = static_cast<uint64_t>(Uniform(0, 1 << 30));
    return c;
  }

 private:
  std::mt19937_64 rng_;
  std::vector<Shape> meshes_;
  Shape shape_;
  ChunkRule rule_ = ChunkRule::kTorch;
};

/// How one case went on one rank of a backend (RedistributeCase).
enum class CaseRun { kRan, kSkipped, kFailed };

/// Plans case `c` for `rank` and redistributes this rank's shard of `global` on `comm` into `got`:
/// kSkipped when MakePlan refuses the case or the executor finds it unsupported (refused alike on
/// every rank), kFailed with `error` set for any other Error.
inline CaseRun RedistributeCase(Communicator& comm, int64_t rank, const Case& c, const LocalTensor& global,
                                LocalTensor& got, std::string& error) {
  Plan plan;
  try {
    plan = MakePlan(c.src, c.dst, rank, c.plan_options);
  } catch (const Error&) {
    return CaseRun::kSkipped;
  }
  ExecuteOptions exec;
  exec.shapes = c.shapes;
  try {
    got = Redistribute(comm, rank, Distribute(global, c.src, rank), c.src, c.dst, plan, exec);
  } catch (const Error& e) {
    if (e.code() == ErrorCode::kUnsupported) return CaseRun::kSkipped;
    error = e.what();
    return CaseRun::kFailed;
  }
  return CaseRun::kRan;
}

/// Rank r's post of an all_gather over the 4 members of `world` whose counts disagree: rank 2
/// expects 3 elements from member 1, which sends 2. Every member must throw the same error (the
/// local backend's message) on every backend.
inline void PostMismatchedAllGather(Communicator& c, int64_t r, const Group& world) {
  LocalTensor in(Shape{2}, DType::kF32), out(Shape{8}, DType::kF32);
  std::vector<RecvView> recv;
  for (int64_t i = 0; i < 4; ++i) {
    Box b = FullBox(out.shape());
    b.dims[0] = {{2 * i, r == 2 && i == 1 ? 2 * i + 3 : 2 * i + 2}};
    recv.push_back(MutableViewOf(out, b));
  }
  c.AllGatherV(world, ViewOf(in), std::move(recv));
}

inline bool HasPartial(const TensorSpec& spec) {
  return std::any_of(spec.placements.begin(), spec.placements.end(),
                     [](const Placement& p) { return p.IsPartial(); });
}

}  // namespace shardscope::testing
