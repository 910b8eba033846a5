// Property: for random meshes, shapes, placements, orders, planners and dtypes,
// Redistribute(Distribute(X, src), dst) == Distribute(X, dst) on every rank, bitwise. When dst has
// Partial dims the shards are a different (equally valid) decomposition, so FullTensor is
// compared instead: exact for integers and for every dtype unless an R->P(sum) step divided by
// n (then within a few ulps of the dtype, see PartitionTolerance). SHARDSCOPE_PROPERTY_CASES sets the count.

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "shardscope/engine/comm/local_backend.hpp"
#include "shardscope/engine/exec/executor.hpp"
#include "shardscope/engine/plan/planner.hpp"
#include "shardscope/error.hpp"

using namespace shardscope;
using namespace shardscope::engine;

namespace {

constexpr int64_t kDefaultCases = 2000;

int64_t CaseCount() {
  const char* env = std::getenv("SHARDSCOPE_PROPERTY_CASES");
  if (env && *env) {
    char* end = nullptr;
    long long n = std::strtoll(env, &end, 10);
    if (end && *end == '\0' && n > 0) return n;
  }
  return kDefaultCases;
}

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
    out << " planner " << static_cast<int>(plan_options.planner) << " optimize " << plan_options.optimize
        << " shapes " << ShapeModeName(shapes) << " seed " << seed;
    return out.str();
  }
};

class Generator {
 public:
  explicit Generator(uint64_t seed) : rng_(seed) {}

  int64_t Uniform(int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng_); }
  bool Chance(double p) { return std::bernoulli_distribution(p)(rng_); }

  Mesh RandomMesh() {
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
    // Forced greedy with a _StridedShard is weighted up: PyTorch never plans it greedily when
    // the split factors decode, so MakePlan must refuse it, and plan only runnable fallbacks.
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
  Shape shape_;
  ChunkRule rule_ = ChunkRule::kTorch;
};

bool HasPartial(const TensorSpec& spec) {
  return std::any_of(spec.placements.begin(), spec.placements.end(),
                     [](const Placement& p) { return p.IsPartial(); });
}

bool Divides(const Plan& plan) {
  return std::any_of(plan.optimized.begin(), plan.optimized.end(), [](const Transform& t) {
    return t.src.IsReplicate() && t.dst.IsPartial() && t.dst.op == ReduceOp::kSum;
  });
}

enum class Outcome { kPassed, kSkipped, kRefusedStridedGreedy, kPlannerError };

bool Contains(const std::string& s, const char* what) { return s.find(what) != std::string::npos; }

// Runs one case; returns kSkipped when MakePlan refuses it, throws on execution errors.
Outcome RunCase(const Case& c, std::string& failure) {
  const int64_t n = c.src.mesh.size();
  std::vector<Plan> plans;
  try {
    for (int64_t r = 0; r < n; ++r) plans.push_back(MakePlan(c.src, c.dst, r, c.plan_options));
  } catch (const Error& e) {
    if (e.code() == ErrorCode::kUnsupported) {
      // Forced greedy with _StridedShard: refused with PyTorch's reason (graph planner), or a
      // fallback greedy plan the executor could not run, refused before anything printed it.
      const bool strided = c.src.HasStridedShard() || c.dst.HasStridedShard();
      if (strided && (Contains(e.what(), "never plans _StridedShard placements with the greedy planner") ||
                      Contains(e.what(), "cannot run exactly"))) {
        return Outcome::kRefusedStridedGreedy;
      }
      return Outcome::kSkipped;
    }
    // A planner defect (reported to the planner's owner), not an executor one: counted and shown.
    failure = std::string("MakePlan threw: ") + e.what();
    return Outcome::kPlannerError;
  }
  LocalTensor global = SeededTensor(c.src.shape, c.src.dtype, c.seed);
  std::vector<LocalTensor> out(static_cast<size_t>(n));
  LocalWorld::Run(n, [&](Communicator& comm, int64_t rank) {
    ExecuteOptions options;
    options.shapes = c.shapes;
    LocalTensor in = Distribute(global, c.src, rank);
    out[static_cast<size_t>(rank)] =
        Redistribute(comm, rank, in, c.src, c.dst, plans[static_cast<size_t>(rank)], options);
  });
  if (!HasPartial(c.dst)) {
    for (int64_t r = 0; r < n; ++r) {
      if (!out[static_cast<size_t>(r)].BitwiseEqual(Distribute(global, c.dst, r))) {
        failure = "rank " + std::to_string(r) + " differs from Distribute(X, dst); plan " + plans[0].notation;
        return Outcome::kPassed;
      }
    }
    return Outcome::kPassed;
  }
  LocalTensor full = FullTensor(out, c.dst);
  bool exact = !IsFloating(c.src.dtype) || !Divides(plans[0]);
  if (exact) {
    if (!full.BitwiseEqual(global)) failure = "FullTensor differs bitwise; plan " + plans[0].notation;
    return Outcome::kPassed;
  }
  double tol = PartitionTolerance(c.src.dtype);
  for (int64_t i = 0; i < global.numel(); ++i) {
    double want = global.GetDouble(i);
    double got = full.GetDouble(i);
    if (std::fabs(got - want) > tol * std::max(1.0, std::fabs(want))) {
      failure = "FullTensor element " + std::to_string(i) + " is " + std::to_string(got) + ", want " +
                std::to_string(want) + "; plan " + plans[0].notation;
      return Outcome::kPassed;
    }
  }
  return Outcome::kPassed;
}

}  // namespace

TEST_CASE("redistribute(distribute(X, src), dst) == distribute(X, dst) over random cases",
          "[engine][executor][property]") {
  const int64_t cases = CaseCount();
  Generator gen(20260814);
  int64_t ran = 0, skipped = 0, failures = 0, planner_errors = 0;
  int64_t greedy_strided_ran = 0, greedy_strided_refused = 0, ordered_strided_ran = 0;
  for (int64_t k = 0; k < cases; ++k) {
    Case c = gen.Next();
    std::string failure;
    try {
      Outcome outcome = RunCase(c, failure);
      if (outcome == Outcome::kSkipped) {
        ++skipped;
        continue;
      }
      if (outcome == Outcome::kRefusedStridedGreedy) {
        ++greedy_strided_refused;
        continue;
      }
      if (outcome == Outcome::kPlannerError) {
        if (++planner_errors <= 3) WARN("case " << k << ": " << c.Describe() << "\n  " << failure);
        continue;
      }
    } catch (const Error& e) {
      failure = std::string("threw: ") + e.what();
    }
    ++ran;
    if (c.plan_options.planner == PlannerChoice::kGreedy &&
        (c.src.HasStridedShard() || c.dst.HasStridedShard()))
      ++greedy_strided_ran;
    auto ordered_strided = [](const TensorSpec& s) {
      return s.HasStridedShard() && s.shard_order.has_value();
    };
    if (ordered_strided(c.src) || ordered_strided(c.dst)) ++ordered_strided_ran;
    if (!failure.empty()) {
      ++failures;
      if (failures <= 10) {
        INFO("case " << k << ": " << c.Describe() << "\n  " << failure);
        CHECK(false);
      }
    }
  }
  WARN("ran " << ran << ", skipped " << skipped << " (MakePlan unsupported), planner errors "
              << planner_errors << ", failed " << failures << "; forced greedy with _StridedShard: ran "
              << greedy_strided_ran << ", refused " << greedy_strided_refused
              << "; literal _StridedShard with an explicit order: ran " << ordered_strided_ran);
  // The forced-greedy strided class (issue 16) is reached by default, both ways.
  if (cases >= 1000) {
    CHECK(greedy_strided_refused > 0);
    CHECK(greedy_strided_ran > 0);
    CHECK(ordered_strided_ran > 0);
  }
  CHECK(failures == 0);
  // MakePlan must never fail with an internal error on a spec it accepted.
  CHECK(planner_errors == 0);
  // Most generated cases must be executable, or the property says little.
  CHECK(ran >= (cases - greedy_strided_refused) * 3 / 4);
}
