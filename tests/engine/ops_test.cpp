// Op sharding strategies and propagation, against rules derived by hand from PyTorch's
// strategy functions (gen_einsum_strategies, pointwise_strategy, reduction, softmax, view ops,
// layer_norm(_bwd)_strategy with PR #133502) and ShardTensor's halo rule; see ops.hpp.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "shardscope/engine/core/layout.hpp"
#include "shardscope/engine/ops/op_executor.hpp"
#include "shardscope/engine/ops/ops.hpp"
#include "shardscope/engine/plan/planner.hpp"
#include "shardscope/error.hpp"

using namespace shardscope;
using namespace shardscope::engine;

namespace {

TensorSpec Spec(const Mesh& mesh, const std::string& placements, Shape shape, DType dtype = DType::kF32) {
  return MakeSpec(mesh, ParsePlacements(placements, "test"), std::nullopt, std::move(shape), dtype,
                  ChunkRule::kTorch, {}, "test");
}

OpCall Call(OpKind kind, size_t inputs, size_t outputs = 1) {
  OpCall c;
  c.kind = kind;
  for (size_t i = 0; i < inputs; ++i) c.inputs.push_back("in" + std::to_string(i));
  for (size_t i = 0; i < outputs; ++i) c.outputs.push_back("out" + std::to_string(i));
  return c;
}

std::string Str(const std::optional<Placements>& p) { return p ? FormatPlacements(*p) : "none"; }
std::string OutStr(const OpDecision& d, size_t o = 0) {
  return d.outputs[o] ? FormatPlacements(d.outputs[o]->placements) : "none";
}
std::string InStr(const OpDecision& d, size_t i) {
  return d.inputs[i] ? FormatPlacements(d.inputs[i]->placements) : "none";
}

// PyTorch allgather_cost for one mesh dim of n devices on one host: 6.6 + (n-1)*0.6 + b*(n-1)/n/87.7e-6.
double AllGatherUs(double gigabytes, int n) {
  return 6.6 + (n - 1) * 0.6 + gigabytes * (n - 1) / n / 87.7 * 1e6;
}

}  // namespace

TEST_CASE("mm: candidates in PyTorch's einsum order and the least-cost choice", "[ops]") {
  Mesh mesh({4});
  TensorSpec x = Spec(mesh, "S(0)", {64, 32});
  TensorSpec w = Spec(mesh, "R", {32, 16});
  OpDecision d = PropagateOp(Call(OpKind::kMm, 2), {&x, &w}, 8);
  // mk,kn->mn: [R | R, R], contracting k [P | S(1), S(0)], lhs m [S(0) | S(0), R], rhs n [S(1) | R, S(1)].
  REQUIRE(d.candidates.size() == 4);
  CHECK(Str(d.candidates[0].outputs[0]) == "R");
  CHECK(Str(d.candidates[1].outputs[0]) == "P(sum)");
  CHECK(Str(d.candidates[1].inputs[0]) == "S(1)");
  CHECK(Str(d.candidates[1].inputs[1]) == "S(0)");
  CHECK(Str(d.candidates[2].outputs[0]) == "S(0)");
  CHECK(Str(d.candidates[3].inputs[1]) == "S(1)");
  // x is S(0): keeping it costs 0; w is replicated, so any target costs 0 (redistribute_cost's shortcut).
  CHECK(d.chosen == 2);
  CHECK(d.candidates[2].cost_us == 0.0);
  // Candidate 0 all_gathers x: local bytes 64*32*4/4, times 4 after the gather.
  const double b = 64.0 * 32 * 4 / 4 / (1024.0 * 1024 * 1024);
  CHECK(d.candidates[0].cost_us == Approx(AllGatherUs(b * 4, 4)));
  // Candidate 1 turns S(0) into S(1): all_gather cost on the shard plus PyTorch's 1 us penalty.
  CHECK(d.candidates[1].cost_us == Approx(AllGatherUs(b, 4) + 1.0));
  CHECK(OutStr(d) == "S(0)");
  CHECK(d.outputs[0]->shape == Shape{64, 16});
}

TEST_CASE("mm: S(1) x S(0) contracts to P(sum); R x S(1) gives S(1)", "[ops]") {
  Mesh mesh({2});
  TensorSpec x = Spec(mesh, "S(1)", {8, 6});
  TensorSpec w = Spec(mesh, "S(0)", {6, 4});
  OpDecision d = PropagateOp(Call(OpKind::kMm, 2), {&x, &w}, 8);
  CHECK(d.chosen == 1);
  CHECK(OutStr(d) == "P(sum)");
  TensorSpec xr = Spec(mesh, "R", {8, 6});
  TensorSpec w1 = Spec(mesh, "S(1)", {6, 4});
  OpDecision d2 = PropagateOp(Call(OpKind::kMm, 2), {&xr, &w1}, 8);
  // x is replicated (cost 0 for any target) and w keeps S(1) only under the rhs-free strategy.
  CHECK(d2.chosen == 3);
  CHECK(OutStr(d2) == "S(1)");
}

TEST_CASE("mm on a 2-d mesh: cartesian product with mesh dim 0 outermost", "[ops]") {
  Mesh mesh({2, 2});
  TensorSpec x = Spec(mesh, "S(0),R", {8, 6});
  TensorSpec w = Spec(mesh, "R,S(1)", {6, 4});
  OpDecision d = PropagateOp(Call(OpKind::kMm, 2), {&x, &w}, 8);
  REQUIRE(d.candidates.size() == 16);
  // Only (lhs-free on mesh dim 0, rhs-free on mesh dim 1) keeps both inputs: index 2*4 + 3.
  CHECK(d.chosen == 11);
  CHECK(OutStr(d) == "S(0),S(1)");
  CHECK(InStr(d, 0) == "S(0),R");
  CHECK(InStr(d, 1) == "R,S(1)");
}

TEST_CASE("mm drops candidates whose inputs cannot be sharded (is_tensor_shardable)", "[ops]") {
  Mesh mesh({4});
  TensorSpec x = Spec(mesh, "R", {2, 8});  // m = 2 < 4 shards
  TensorSpec w = Spec(mesh, "R", {8, 8});
  OpDecision d = PropagateOp(Call(OpKind::kMm, 2), {&x, &w}, 8);
  REQUIRE(d.candidates.size() == 3);  // [R], contracting, rhs-free
  for (const auto& c : d.candidates) CHECK(Str(c.inputs[0]) != "S(0)");
}

TEST_CASE("linear and bmm follow the same einsum rules", "[ops]") {
  Mesh mesh({2});
  TensorSpec x = Spec(mesh, "R", {4, 6});
  TensorSpec w = Spec(mesh, "S(0)", {10, 6});  // weight [N, K] sharded on N (column parallel)
  OpDecision d = PropagateOp(Call(OpKind::kLinear, 2), {&x, &w}, 8);
  CHECK(OutStr(d) == "S(1)");
  CHECK(d.outputs[0]->shape == Shape{4, 10});
  TensorSpec a = Spec(mesh, "S(0)", {4, 3, 5});
  TensorSpec b = Spec(mesh, "S(0)", {4, 5, 2});
  OpDecision e = PropagateOp(Call(OpKind::kBmm, 2), {&a, &b}, 8);
  // Batch dim b first after [R]: [S(0) | S(0), S(0)] costs nothing here.
  CHECK(e.chosen == 1);
  CHECK(OutStr(e) == "S(0)");
}

TEST_CASE("pointwise: follows the most sharded input, broadcasting maps dims", "[ops]") {
  Mesh mesh({2});
  TensorSpec a = Spec(mesh, "S(0)", {8});
  TensorSpec b = Spec(mesh, "R", {4, 8});
  OpDecision d = PropagateOp(Call(OpKind::kAdd, 2), {&a, &b}, 8);
  CHECK(OutStr(d) == "S(1)");  // a's dim 0 is the output's dim 1
  CHECK(InStr(d, 0) == "S(0)");
  CHECK(InStr(d, 1) == "S(1)");
  CHECK(d.outputs[0]->shape == Shape{4, 8});
  // A size-1 dim that broadcasts is replicated, not sharded.
  TensorSpec c = Spec(mesh, "S(0)", {4, 8});
  TensorSpec r = Spec(mesh, "R", {1, 8});
  OpDecision e = PropagateOp(Call(OpKind::kMul, 2), {&c, &r}, 8);
  CHECK(OutStr(e) == "S(0)");
  CHECK(InStr(e, 1) == "R");
}

TEST_CASE("pointwise partials: add keeps P(sum), mul keeps one, gelu replicates", "[ops]") {
  Mesh mesh({2});
  TensorSpec p = Spec(mesh, "P(sum)", {4});
  TensorSpec r = Spec(mesh, "R", {4});
  OpDecision add = PropagateOp(Call(OpKind::kAdd, 2), {&p, &r}, 8);
  CHECK(OutStr(add) == "P(sum)");
  CHECK(InStr(add, 1) == "P(sum)");  // R -> P is local
  OpDecision mul = PropagateOp(Call(OpKind::kMul, 2), {&p, &r}, 8);
  CHECK(OutStr(mul) == "P(sum)");
  CHECK(InStr(mul, 1) == "R");  // (sum a_i) * b = sum (a_i * b)
  TensorSpec p2 = Spec(mesh, "P(sum)", {4});
  OpDecision mul2 = PropagateOp(Call(OpKind::kMul, 2), {&p, &p2}, 8);
  CHECK(InStr(mul2, 1) == "R");  // a product of two partial sums is not a partial sum
  OpDecision gelu = PropagateOp(Call(OpKind::kGelu, 1), {&p}, 8);
  CHECK(OutStr(gelu) == "R");
  CHECK(InStr(gelu, 0) == "R");
}

TEST_CASE("sum and mean: sharded reduced dims become Partial", "[ops]") {
  Mesh mesh({2});
  TensorSpec x = Spec(mesh, "S(0)", {8, 6});
  OpCall sum0 = Call(OpKind::kSum, 1);
  sum0.dims = {0};
  OpDecision d = PropagateOp(sum0, {&x}, 8);
  CHECK(OutStr(d) == "P(sum)");
  CHECK(d.outputs[0]->shape == Shape{6});
  OpCall sum1 = sum0;
  sum1.dims = {-1};
  CHECK(OutStr(PropagateOp(sum1, {&x}, 8)) == "S(0)");
  TensorSpec y = Spec(mesh, "S(1)", {8, 6});
  OpCall sum_keep = sum0;
  sum_keep.keepdim = true;
  OpDecision k = PropagateOp(sum_keep, {&y}, 8);
  CHECK(OutStr(k) == "S(1)");
  CHECK(k.outputs[0]->shape == Shape{1, 6});
  OpCall sum_drop = sum0;  // dims [0] without keepdim: S(1) moves to S(0)
  CHECK(OutStr(PropagateOp(sum_drop, {&y}, 8)) == "S(0)");
  // mean over an even shard: P(avg) of local means (local extent 4).
  OpCall mean = sum0;
  mean.kind = OpKind::kMean;
  OpDecision m = PropagateOp(mean, {&x}, 8);
  CHECK(OutStr(m) == "P(avg)");
  CHECK(m.mean_divisor == 4.0);
  CHECK(m.note.empty());
  // Uneven (7 over 2 is 4, 3): P(sum) of local sums over the global count, and a note.
  TensorSpec u = Spec(mesh, "S(0)", {7, 6});
  OpDecision mu = PropagateOp(mean, {&u}, 8);
  CHECK(OutStr(mu) == "P(sum)");
  CHECK(mu.mean_divisor == 7.0);
  CHECK_FALSE(mu.note.empty());
}

TEST_CASE("softmax, transpose, permute and select placements", "[ops]") {
  Mesh mesh({2, 2});
  TensorSpec x = Spec(mesh, "S(0),S(2)", {4, 6, 8});
  OpCall sm = Call(OpKind::kSoftmax, 1);
  sm.dim = -1;
  OpDecision s = PropagateOp(sm, {&x}, 8);
  CHECK(InStr(s, 0) == "S(0),R");
  CHECK(OutStr(s) == "S(0),R");
  OpCall tr = Call(OpKind::kTranspose, 1);
  tr.dims = {0, 2};
  CHECK(OutStr(PropagateOp(tr, {&x}, 8)) == "S(2),S(0)");
  OpCall pm = Call(OpKind::kPermute, 1);
  pm.dims = {2, 0, 1};  // new dim 0 is old 2, new 1 is old 0
  OpDecision p = PropagateOp(pm, {&x}, 8);
  CHECK(OutStr(p) == "S(1),S(0)");
  CHECK(p.outputs[0]->shape == Shape{8, 4, 6});
  OpCall sel = Call(OpKind::kSelect, 1);
  sel.dim = -2;  // dim 1; S(2) moves to S(1)
  sel.index = -1;
  OpDecision e = PropagateOp(sel, {&x}, 8);
  CHECK(OutStr(e) == "S(0),S(1)");
  CHECK(e.outputs[0]->shape == Shape{4, 8});
  sel.dim = 0;
  OpDecision f = PropagateOp(sel, {&x}, 8);
  CHECK(InStr(f, 0) == "R,S(2)");
  CHECK(OutStr(f) == "R,S(1)");
}

TEST_CASE("stack and cat normalize negative dims (ShardTensor PR 2210's relabeling bug)", "[ops]") {
  Mesh mesh({2});
  TensorSpec a = Spec(mesh, "S(1)", {4, 6});
  TensorSpec b = Spec(mesh, "S(1)", {4, 6});
  OpCall st = Call(OpKind::kStack, 2);
  st.dim = -1;  // new last dim (2): S(1) stays S(1)
  OpDecision s = PropagateOp(st, {&a, &b}, 8);
  CHECK(OutStr(s) == "S(1)");
  CHECK(s.outputs[0]->shape == Shape{4, 6, 2});
  st.dim = -3;  // dim 0: S(1) becomes S(2)
  CHECK(OutStr(PropagateOp(st, {&a, &b}, 8)) == "S(2)");
  OpCall cat = Call(OpKind::kCat, 2);
  cat.dim = -1;
  OpDecision c = PropagateOp(cat, {&a, &b}, 8);
  CHECK(OutStr(c) == "R");  // the cat dim is replicated
  CHECK(c.outputs[0]->shape == Shape{4, 12});
}

TEST_CASE("layer_norm: normalized dims replicated, stats follow leading shards", "[ops]") {
  Mesh mesh({2, 2});
  TensorSpec x = Spec(mesh, "S(0),S(2)", {4, 8, 16});
  TensorSpec w = Spec(mesh, "R,R", {16});
  OpCall ln = Call(OpKind::kLayerNorm, 3, 3);
  ln.inputs[2] = "";
  OpDecision d = PropagateOp(ln, {&x, &w, nullptr}, 8);
  CHECK(InStr(d, 0) == "S(0),R");
  CHECK(InStr(d, 1) == "R,R");
  CHECK(InStr(d, 2) == "none");
  CHECK(OutStr(d, 0) == "S(0),R");
  CHECK(OutStr(d, 1) == "S(0),R");
  CHECK(d.outputs[1]->shape == Shape{4, 8, 1});
}

TEST_CASE("layer_norm_backward: every output_mask keeps inputs aligned (PyTorch PR 133502)", "[ops]") {
  Mesh mesh({2, 2});
  const Shape shape{4, 8, 16};
  TensorSpec g = Spec(mesh, "S(0),R", shape);
  TensorSpec x = Spec(mesh, "S(0),R", shape);
  TensorSpec mean = Spec(mesh, "S(0),R", {4, 8, 1});
  TensorSpec rstd = Spec(mesh, "S(0),R", {4, 8, 1});
  TensorSpec w = Spec(mesh, "R,R", {16});
  for (int mask = 0; mask < 8; ++mask) {
    for (bool with_weight : {true, false}) {
      OpCall c = Call(OpKind::kLayerNormBackward, 5, 3);
      c.output_mask = {(mask & 1) != 0, (mask & 2) != 0, (mask & 4) != 0};
      if (!with_weight) c.inputs[4] = "";
      DYNAMIC_SECTION("mask " << mask << " weight " << with_weight) {
        if (c.output_mask[1] && !with_weight) {
          CHECK_THROWS_WITH(PropagateOp(c, {&g, &x, &mean, &rstd, nullptr}, 8),
                            Catch::Contains("grad_weight but there is no weight"));
          continue;
        }
        OpDecision d = PropagateOp(c, {&g, &x, &mean, &rstd, with_weight ? &w : nullptr}, 8);
        REQUIRE(d.inputs.size() == 5);
        CHECK(InStr(d, 0) == "S(0),R");
        CHECK(InStr(d, 1) == "S(0),R");
        CHECK(InStr(d, 2) == "S(0),R");
        CHECK(InStr(d, 3) == "S(0),R");
        CHECK(InStr(d, 4) == (with_weight ? "R,R" : "none"));
        CHECK(OutStr(d, 0) == (c.output_mask[0] ? "S(0),R" : "none"));
        // Mesh dim 0 shards the leading dim: parameter grads are partial sums there.
        CHECK(OutStr(d, 1) == (c.output_mask[1] ? "P(sum),R" : "none"));
        CHECK(OutStr(d, 2) == (c.output_mask[2] ? "P(sum),R" : "none"));
      }
    }
  }
}

TEST_CASE("conv keeps the spatial shard and exchanges halos", "[ops]") {
  Mesh mesh({2, 2});
  TensorSpec x = Spec(mesh, "S(1),S(2)", {3, 8, 8});
  OpCall c = Call(OpKind::kConv, 1);
  c.dim = 1;
  c.kernel = {1, 2, 1};
  OpDecision d = PropagateOp(c, {&x}, 8);
  CHECK(d.chosen == 0);
  REQUIRE(d.candidates.size() == 2);
  CHECK(Str(d.candidates[1].inputs[0]) == "R,S(2)");
  CHECK(OutStr(d) == "S(1),S(2)");
  CHECK(d.halo_mesh_dims == std::vector<int>{0});
  CHECK(ConvHalo(c) == 1);
}

TEST_CASE("ops: bad input is one clear error", "[ops]") {
  Mesh mesh({2});
  TensorSpec a = Spec(mesh, "R", {4, 5});
  TensorSpec b = Spec(mesh, "R", {6, 3});
  CHECK_THROWS_WITH(PropagateOp(Call(OpKind::kMm, 2), {&a, &b}, 8), Catch::Contains("mm: inner dims differ"));
  TensorSpec strided = MakeSpec(mesh, {Placement::StridedShard(0, 2)}, std::nullopt, {8, 4}, DType::kF32,
                                ChunkRule::kTorch, {}, "t");
  try {
    PropagateOp(Call(OpKind::kGelu, 1), {&strided}, 8);
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(e.code() == ErrorCode::kUnsupported);
    CHECK_THAT(e.what(), Catch::Contains("_StridedShard"));
  }
  TensorSpec ints = Spec(mesh, "R", {4}, DType::kI32);
  CHECK_THROWS_WITH(PropagateOp(Call(OpKind::kSoftmax, 1), {&ints}, 8), Catch::Contains("floating-point"));
  OpCall sel = Call(OpKind::kSelect, 1);
  sel.dim = 0;
  sel.index = 4;
  CHECK_THROWS_WITH(PropagateOp(sel, {&a}, 8), Catch::Contains("index=4 is out of range"));
  OpCall perm = Call(OpKind::kPermute, 1);
  perm.dims = {0, 0};
  CHECK_THROWS_WITH(PropagateOp(perm, {&a}, 8), Catch::Contains("not a permutation"));
  // add(P(sum), S(0)) follows the sharded input (2 shards vs 1): P(sum) -> S(0) is a reduce_scatter.
  TensorSpec p = Spec(mesh, "P(sum)", {4});
  TensorSpec s = Spec(mesh, "S(0)", {4});
  OpDecision ps = PropagateOp(Call(OpKind::kAdd, 2), {&p, &s}, 8);
  CHECK(OutStr(ps) == "S(0)");
  CHECK(InStr(ps, 0) == "S(0)");
  // On a 2x2 mesh with a tie (2 shards each) add follows input 0, whose P(sum) on mesh dim 0
  // would need input 1's S(0) to become P(sum): S->P is never chosen implicitly.
  Mesh mesh2({2, 2});
  TensorSpec p2 = Spec(mesh2, "P(sum),S(0)", {4});
  TensorSpec s2 = Spec(mesh2, "S(0),R", {4});
  CHECK_THROWS_WITH(PropagateOp(Call(OpKind::kAdd, 2), {&p2, &s2}, 8), Catch::Contains("S->P"));
}

TEST_CASE("RedistributeCostUs follows PyTorch redistribute_cost", "[ops][cost]") {
  Mesh mesh({4});
  TensorSpec r = Spec(mesh, "R", {64, 32});
  TensorSpec s0 = Spec(mesh, "S(0)", {64, 32});
  TensorSpec p = Spec(mesh, "P(sum)", {64, 32});
  CHECK(RedistributeCostUs(r, s0, 8) == 0.0);  // fully replicated source
  CHECK(RedistributeCostUs(s0, s0, 8) == 0.0);
  const double b = 64.0 * 32 * 4 / 4 / (1024.0 * 1024 * 1024);
  CHECK(RedistributeCostUs(s0, r, 8) == Approx(AllGatherUs(4 * b, 4)));
  // P -> R: allreduce_cost = 6.6 + 2(n-1)*0.6 + b*2(n-1)/n/87.7e-6 on the full (unsharded) bytes.
  const double full = 64.0 * 32 * 4 / (1024.0 * 1024 * 1024);
  CHECK(RedistributeCostUs(p, r, 8) == Approx(6.6 + 6 * 0.6 + full * 6 / 4 / 87.7 * 1e6));
  CHECK(RedistributeCostUs(s0, p, 8) == std::numeric_limits<double>::infinity());
}

TEST_CASE("ComputeOp kernels on small hand-computed tensors", "[ops][kernels]") {
  auto tensor = [](Shape shape, std::vector<double> v, DType dtype = DType::kF64) {
    LocalTensor t(std::move(shape), dtype);
    for (size_t i = 0; i < v.size(); ++i) t.SetDouble(static_cast<int64_t>(i), v[i]);
    return t;
  };
  auto values = [](const LocalTensor& t) {
    std::vector<double> v;
    for (int64_t i = 0; i < t.numel(); ++i) v.push_back(t.GetDouble(i));
    return v;
  };
  LocalTensor a = tensor({2, 3}, {1, 2, 3, 4, 5, 6});
  LocalTensor b = tensor({3, 2}, {1, 0, 0, 1, 1, 1});
  CHECK(values(*ComputeOp(Call(OpKind::kMm, 2), {&a, &b})[0]) == std::vector<double>{4, 5, 10, 11});
  LocalTensor w = tensor({2, 3}, {1, 0, 0, 0, 0, 1});  // linear: x @ w^T picks columns 0 and 2
  CHECK(values(*ComputeOp(Call(OpKind::kLinear, 2), {&a, &w})[0]) == std::vector<double>{1, 3, 4, 6});
  OpCall sum = Call(OpKind::kSum, 1);
  sum.dims = {0};
  CHECK(values(*ComputeOp(sum, {&a})[0]) == std::vector<double>{5, 7, 9});
  OpCall tr = Call(OpKind::kTranspose, 1);
  tr.dims = {0, 1};
  CHECK(values(*ComputeOp(tr, {&a})[0]) == std::vector<double>{1, 4, 2, 5, 3, 6});
  OpCall cat = Call(OpKind::kCat, 2);
  cat.dim = 1;
  CHECK(values(*ComputeOp(cat, {&a, &a})[0]) == std::vector<double>{1, 2, 3, 1, 2, 3, 4, 5, 6, 4, 5, 6});
  OpCall stack = Call(OpKind::kStack, 2);
  stack.dim = -1;
  CHECK(values(*ComputeOp(stack, {&a, &a})[0]) == std::vector<double>{1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6});
  OpCall sel = Call(OpKind::kSelect, 1);
  sel.dim = 1;
  sel.index = -1;
  CHECK(values(*ComputeOp(sel, {&a})[0]) == std::vector<double>{3, 6});
  // conv [1, 2, 1] along dim 1 with zero padding: row 1,2,3 -> 1*0+2*1+1*2=4, 1+4+3=8, 2+6+0=8.
  OpCall conv = Call(OpKind::kConv, 1);
  conv.dim = 1;
  conv.kernel = {1, 2, 1};
  CHECK(values(ConvGlobal(conv, a)) == std::vector<double>{4, 8, 8, 13, 20, 17});
  // softmax of [0, ln 3] is [1/4, 3/4].
  LocalTensor s = tensor({2}, {0, std::log(3.0)});
  OpCall sm = Call(OpKind::kSoftmax, 1);
  sm.dim = 0;
  std::vector<double> soft = values(*ComputeOp(sm, {&s})[0]);
  CHECK(soft[0] == Approx(0.25));
  CHECK(soft[1] == Approx(0.75));
  // layer_norm of [1, 3]: mean 2, var 1, rstd 1/sqrt(1+eps) -> about [-1, 1].
  LocalTensor row = tensor({1, 2}, {1, 3});
  OpCall ln = Call(OpKind::kLayerNorm, 3, 3);
  ln.eps = 0;
  std::vector<std::optional<LocalTensor>> out = ComputeOp(ln, {&row, nullptr, nullptr});
  CHECK(values(*out[0]) == std::vector<double>{-1, 1});
  CHECK(values(*out[1]) == std::vector<double>{2});
  CHECK(values(*out[2]) == std::vector<double>{1});
  // Integers round once: mean is not allowed, but sum of i32 is exact.
  LocalTensor ints = tensor({3}, {1, -2, 7}, DType::kI32);
  OpCall all = Call(OpKind::kSum, 1);
  CHECK(ComputeOp(all, {&ints})[0]->GetDouble(0) == 6);
}

TEST_CASE("layer_norm_backward kernel matches finite differences", "[ops][kernels]") {
  // d/dx of sum(g * layer_norm(x) * w) by central differences, in f64.
  const Shape shape{2, 3};
  LocalTensor x(shape, DType::kF64), g(shape, DType::kF64), w(Shape{3}, DType::kF64);
  const double xs[] = {0.5, -1.0, 2.0, 1.5, 0.25, -0.75};
  const double gs[] = {1.0, -2.0, 0.5, 0.3, 0.7, -1.1};
  const double ws[] = {1.5, -0.5, 2.0};
  for (int i = 0; i < 6; ++i) {
    x.SetDouble(i, xs[i]);
    g.SetDouble(i, gs[i]);
  }
  for (int i = 0; i < 3; ++i) w.SetDouble(i, ws[i]);
  OpCall fwd = Call(OpKind::kLayerNorm, 3, 3);
  fwd.inputs[2] = "";
  auto loss = [&](const LocalTensor& xx) {
    LocalTensor y = *ComputeOp(fwd, {&xx, &w, nullptr})[0];
    double l = 0;
    for (int i = 0; i < 6; ++i) l += y.GetDouble(i) * gs[i];
    return l;
  };
  std::vector<std::optional<LocalTensor>> f = ComputeOp(fwd, {&x, &w, nullptr});
  OpCall bwd = Call(OpKind::kLayerNormBackward, 5, 3);
  bwd.output_mask = {true, true, true};
  std::vector<std::optional<LocalTensor>> gr = ComputeOp(bwd, {&g, &x, &*f[1], &*f[2], &w});
  for (int i = 0; i < 6; ++i) {
    LocalTensor up = x, down = x;
    up.SetDouble(i, xs[i] + 1e-6);
    down.SetDouble(i, xs[i] - 1e-6);
    CHECK(gr[0]->GetDouble(i) == Approx((loss(up) - loss(down)) / 2e-6).epsilon(1e-5));
  }
  // grad_bias = column sums of g; grad_weight = column sums of g * xhat.
  CHECK(gr[2]->GetDouble(0) == Approx(1.3));
  CHECK(gr[2]->GetDouble(2) == Approx(-0.6));
  double gw0 = 0;
  for (int r = 0; r < 2; ++r) gw0 += gs[r * 3] * (f[0]->GetDouble(r * 3) / ws[0]);
  CHECK(gr[1]->GetDouble(0) == Approx(gw0));
}
