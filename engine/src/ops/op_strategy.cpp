// Sharding propagation: the strategies an op admits for its inputs' placements and the one it
// chooses (PyTorch's op strategies; the rules are summarized in ops.hpp).
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "ops/op_dims.hpp"
#include "shardscope/engine/core/layout.hpp"
#include "shardscope/engine/ops/ops.hpp"
#include "shardscope/engine/plan/planner.hpp"
#include "shardscope/error.hpp"

namespace shardscope::engine {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// ---- strategies ----

// One strategy per mesh dim: a placement for each output, then each input.
struct DimStrategy {
  std::vector<std::optional<Placement>> out;
  std::vector<std::optional<Placement>> in;
};

int64_t NumShardsOfDim(const TensorSpec& spec, int64_t dim) {
  int64_t n = 1;
  for (size_t md = 0; md < spec.placements.size(); ++md) {
    if (spec.placements[md].IsShard(static_cast<int>(dim))) n *= spec.mesh.size(static_cast<int>(md));
  }
  return n;
}

// PyTorch is_tensor_shardable: every sharded dim has at least as many elements as shards.
bool Shardable(const Mesh& mesh, const Shape& shape, const Placements& placements) {
  std::vector<int64_t> shards(shape.size(), 1);
  for (size_t md = 0; md < placements.size(); ++md) {
    if (placements[md].IsShard())
      shards[static_cast<size_t>(placements[md].dim)] *= mesh.size(static_cast<int>(md));
  }
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shards[d] > 1 && shape[d] < shards[d]) return false;
  }
  return true;
}

class Propagator {
 public:
  Propagator(const OpCall& call, const std::vector<const TensorSpec*>& inputs, int devices_per_host)
      : call_(call), in_(inputs), devices_per_host_(devices_per_host) {}

  OpDecision Run() {
    Validate();
    const Mesh& mesh = first_->mesh;
    std::vector<std::optional<Shape>> out_shapes = OpOutputShapes(call_, InputShapes());
    out_shapes_ = out_shapes;
    switch (call_.kind) {
      case OpKind::kMm:
        Einsum({{'m', 'k'}, {'k', 'n'}}, {'m', 'n'});
        break;
      case OpKind::kBmm:
        Einsum({{'b', 'm', 'k'}, {'b', 'k', 'n'}}, {'b', 'm', 'n'});
        break;
      case OpKind::kLinear:
        Einsum({{'m', 'k'}, {'n', 'k'}}, {'m', 'n'});
        break;
      case OpKind::kAdd:
      case OpKind::kSub:
      case OpKind::kMul:
      case OpKind::kGelu:
        Pointwise();
        break;
      case OpKind::kStack:
      case OpKind::kCat:
        Concat();
        break;
      case OpKind::kConv:
        Conv();
        break;
      default:
        Follow();
        break;
    }
    PriceAndChoose();
    DescribeChoice(mesh, out_shapes);
    return std::move(decision_);
  }

 private:
  // Prices every candidate (the redistributes of its inputs) and, where the op searches,
  // chooses the cheapest; refuses a choice that needs S->P or P(a)->P(b).
  void PriceAndChoose() {
    for (OpStrategy& s : decision_.candidates) {
      s.cost_us = 0.0;
      for (size_t i = 0; i < in_.size(); ++i) {
        if (in_[i] == nullptr || !s.inputs[i]) continue;
        TensorSpec want = Spec(*s.inputs[i], in_[i]->shape, "input " + std::to_string(i));
        s.cost_us += RedistributeCostUs(*in_[i], want, devices_per_host_);
      }
    }
    if (choose_min_) {
      double best = kInf;
      for (size_t c = 0; c < decision_.candidates.size(); ++c) {
        if (decision_.candidates[c].cost_us < best) {
          best = decision_.candidates[c].cost_us;
          decision_.chosen = c;
        }
      }
      if (best == kInf) {
        throw Unsupported(detail::Where(call_) +
                          ": no sharding strategy is reachable from the inputs' placements (" + InputsText() +
                          "): every candidate needs S->P or P(a)->P(b)");
      }
    }
  }

  // The chosen strategy as specs of the inputs and outputs, and conv's halo mesh dims.
  void DescribeChoice(const Mesh& mesh, const std::vector<std::optional<Shape>>& out_shapes) {
    const OpStrategy& chosen = decision_.candidates[decision_.chosen];
    if (chosen.cost_us == kInf) {
      throw Unsupported(
          detail::Where(call_) + ": the strategy PyTorch's rule picks for inputs (" + InputsText() +
          ") needs S->P or P(a)->P(b), which redistribute never does implicitly; redistribute an "
          "input first");
    }
    for (size_t i = 0; i < in_.size(); ++i) {
      if (in_[i] == nullptr || !chosen.inputs[i]) {
        decision_.inputs.emplace_back();
      } else {
        decision_.inputs.push_back(Spec(*chosen.inputs[i], in_[i]->shape, "input " + std::to_string(i)));
      }
    }
    for (size_t o = 0; o < chosen.outputs.size(); ++o) {
      if (!chosen.outputs[o]) {
        decision_.outputs.emplace_back();
      } else {
        decision_.outputs.push_back(Spec(*chosen.outputs[o], *out_shapes[o], "output " + std::to_string(o)));
      }
    }
    if (call_.kind == OpKind::kConv) {
      const int64_t dim =
          detail::NormDim(call_, call_.dim, static_cast<int64_t>(first_->shape.size()), "dim");
      for (int md = 0; md < mesh.ndim(); ++md) {
        if (chosen.inputs[0]->at(static_cast<size_t>(md)).IsShard(static_cast<int>(dim)))
          decision_.halo_mesh_dims.push_back(md);
      }
    }
  }

  std::vector<const Shape*> InputShapes() const {
    std::vector<const Shape*> shapes;
    for (const TensorSpec* s : in_) shapes.push_back(s ? &s->shape : nullptr);
    return shapes;
  }

  std::string InputsText() const {
    std::string out;
    for (const TensorSpec* s : in_) {
      if (!out.empty()) out += ", ";
      out += s ? ConcatPlacements(s->placements) : "none";
    }
    return out;
  }

  void Validate() {
    detail::CheckArity(call_, in_.size());
    for (size_t i = 0; i < in_.size(); ++i) {
      const TensorSpec* s = in_[i];
      if (s == nullptr) {
        if (!detail::IsOptionalInput(call_.kind, i))
          detail::Bad(call_, "input " + std::to_string(i) + " is required");
        continue;
      }
      if (first_ == nullptr) first_ = s;
      const std::string which = "input " + std::to_string(i) + " (" + ConcatPlacements(s->placements) + ")";
      if (s->HasStridedShard()) {
        throw Unsupported(
            detail::Where(call_) + ": " + which +
            " has a _StridedShard; ops take Shard, Replicate and Partial inputs (redistribute it "
            "first)");
      }
      if (s->shard_order) {
        throw Unsupported(detail::Where(call_) + ": " + which +
                          " has a non-default shard order; redistribute it to the default order first");
      }
      if (!s->explicit_sizes.empty()) {
        throw Unsupported(detail::Where(call_) + ": " + which +
                          " has explicit per-rank sizes; ops need computed layouts");
      }
      if (!(s->mesh == first_->mesh))
        detail::Bad(call_, "input " + std::to_string(i) + " is on another mesh");
      if (s->dtype != first_->dtype) {
        detail::Bad(call_, "input " + std::to_string(i) + " is " + std::string(DTypeName(s->dtype)) +
                               " but input 0 is " + std::string(DTypeName(first_->dtype)));
      }
      if (s->chunking != first_->chunking) {
        detail::Bad(call_, "inputs mix chunking rules (" + std::string(ChunkRuleName(first_->chunking)) +
                               " and " + std::string(ChunkRuleName(s->chunking)) + ")");
      }
    }
    if (detail::NeedsFloat(call_.kind) && !IsFloating(first_->dtype)) {
      throw Unsupported(detail::Where(call_) + ": needs a floating-point dtype, got " +
                        std::string(DTypeName(first_->dtype)));
    }
    mesh_ndim_ = first_->mesh.ndim();
  }

  TensorSpec Spec(const Placements& placements, const Shape& shape, const std::string& what) const {
    return MakeSpec(first_->mesh, placements, std::nullopt, shape, first_->dtype, first_->chunking, {},
                    detail::Where(call_) + " " + what);
  }

  // Cartesian product of per-mesh-dim strategies (mesh dim 0 outermost), dropping candidates
  // whose inputs cannot be sharded when `check_shardable`.
  void Expand(const std::vector<DimStrategy>& per_dim, bool check_shardable) {
    const size_t k = per_dim.size();
    std::vector<size_t> idx(static_cast<size_t>(mesh_ndim_), 0);
    while (true) {
      OpStrategy s;
      s.inputs.assign(in_.size(), Placements{});
      s.outputs.assign(per_dim[0].out.size(), Placements{});
      for (int md = 0; md < mesh_ndim_; ++md) {
        const DimStrategy& d = per_dim[idx[static_cast<size_t>(md)]];
        for (size_t i = 0; i < in_.size(); ++i) {
          if (d.in[i]) s.inputs[i]->push_back(*d.in[i]);
        }
        for (size_t o = 0; o < d.out.size(); ++o) {
          if (d.out[o]) s.outputs[o]->push_back(*d.out[o]);
        }
      }
      for (size_t i = 0; i < in_.size(); ++i) {
        if (in_[i] == nullptr) s.inputs[i].reset();
      }
      for (size_t o = 0; o < s.outputs.size(); ++o) {
        if (!out_shapes_[o]) s.outputs[o].reset();
      }
      bool ok = true;
      if (check_shardable) {
        for (size_t i = 0; i < in_.size() && ok; ++i) {
          if (s.inputs[i]) ok = Shardable(first_->mesh, in_[i]->shape, *s.inputs[i]);
        }
      }
      if (ok) decision_.candidates.push_back(std::move(s));
      // Next index, last mesh dim fastest (itertools.product order).
      int md = mesh_ndim_ - 1;
      while (md >= 0 && ++idx[static_cast<size_t>(md)] == k) idx[static_cast<size_t>(md--)] = 0;
      if (md < 0) break;
    }
    if (decision_.candidates.empty()) {
      throw Unsupported(detail::Where(call_) + ": no strategy can shard these inputs on mesh " +
                        first_->mesh.ToString());
    }
  }

  // PyTorch gen_einsum_strategies for two inputs; dims are letters per input and output.
  void Einsum(const std::vector<std::vector<char>>& ins, const std::vector<char>& out) {
    std::vector<char> all;
    for (const auto& v : ins) all.insert(all.end(), v.begin(), v.end());
    std::sort(all.begin(), all.end());
    all.erase(std::unique(all.begin(), all.end()), all.end());  // sorted(dim_char_set)
    auto pos = [](const std::vector<char>& v, char c) -> int {
      auto it = std::find(v.begin(), v.end(), c);
      return it == v.end() ? -1 : static_cast<int>(it - v.begin());
    };
    std::vector<char> batch, contracting, lhs_only, rhs_only;
    for (char c : all) {
      if (pos(out, c) < 0) {
        contracting.push_back(c);
      } else if (pos(ins[0], c) >= 0 && pos(ins[1], c) >= 0) {
        batch.push_back(c);
      } else if (pos(ins[0], c) >= 0) {
        lhs_only.push_back(c);
      } else {
        rhs_only.push_back(c);
      }
    }
    auto shard = [&](const std::vector<char>& v, char c) -> Placement {
      return pos(v, c) < 0 ? Placement::Replicate() : Placement::Shard(pos(v, c));
    };
    std::vector<DimStrategy> per_dim;
    per_dim.push_back({{Placement::Replicate()}, {Placement::Replicate(), Placement::Replicate()}});
    for (char c : batch) per_dim.push_back({{shard(out, c)}, {shard(ins[0], c), shard(ins[1], c)}});
    for (char c : contracting)
      per_dim.push_back({{Placement::Partial()}, {shard(ins[0], c), shard(ins[1], c)}});
    for (char c : lhs_only) per_dim.push_back({{shard(out, c)}, {shard(ins[0], c), Placement::Replicate()}});
    for (char c : rhs_only) per_dim.push_back({{shard(out, c)}, {Placement::Replicate(), shard(ins[1], c)}});
    Expand(per_dim, true);
    choose_min_ = true;
    decision_.rule = "least redistribute cost over " + std::to_string(decision_.candidates.size()) +
                     " candidates, first on ties (PyTorch mm_like_strategy / _select_strategy)";
  }

  // The output placements that follow `follow` (pointwise) and the required inputs.
  OpStrategy PointwiseFrom(size_t follow) const {
    const TensorSpec& f = *in_[follow];
    const Shape& out_shape = *out_shapes_[0];
    const auto out_nd = static_cast<int64_t>(out_shape.size());
    const bool linear_add = call_.kind == OpKind::kAdd || call_.kind == OpKind::kSub;
    const bool linear_mul = call_.kind == OpKind::kMul;
    OpStrategy s;
    Placements out;
    for (const Placement& p : f.placements) {
      if (p.IsShard()) {
        out.push_back(
            Placement::Shard(static_cast<int>(p.dim + out_nd - static_cast<int64_t>(f.shape.size()))));
      } else if (p.IsPartial()) {
        out.push_back((linear_add || linear_mul) && p.IsLinearPartial() ? p : Placement::Replicate());
      } else {
        out.push_back(p);
      }
    }
    for (size_t i = 0; i < in_.size(); ++i) {
      const Shape& shape = in_[i]->shape;
      const auto nd = static_cast<int64_t>(shape.size());
      Placements req;
      for (const Placement& q : out) {
        if (q.IsShard()) {
          const int64_t d = q.dim - (out_nd - nd);
          const bool broadcast =
              d < 0 || (shape[static_cast<size_t>(d)] == 1 && out_shape[static_cast<size_t>(q.dim)] != 1);
          req.push_back(broadcast ? Placement::Replicate() : Placement::Shard(static_cast<int>(d)));
        } else if (q.IsPartial()) {
          req.push_back(linear_mul && i != follow ? Placement::Replicate() : q);
        } else {
          req.push_back(q);
        }
      }
      s.inputs.emplace_back(std::move(req));
    }
    s.outputs.emplace_back(std::move(out));
    return s;
  }

  void Pointwise() {
    // PyTorch follows the input with the most shards (the first on ties); the others are listed
    // as candidates too, with their costs, so the trace shows what following them would cost.
    size_t follow = 0;
    for (size_t i = 1; i < in_.size(); ++i) {
      if (in_[i]->NumShards() > in_[follow]->NumShards()) follow = i;
    }
    decision_.candidates.push_back(PointwiseFrom(follow));
    for (size_t i = 0; i < in_.size(); ++i) {
      if (i != follow) decision_.candidates.push_back(PointwiseFrom(i));
    }
    decision_.chosen = 0;
    decision_.rule = "follows input " + std::to_string(follow) +
                     ", the input with the most shards (PyTorch pointwise_strategy; no cost search)";
  }

  void Concat() {
    const bool stack = call_.kind == OpKind::kStack;
    const auto nd = static_cast<int64_t>(first_->shape.size());
    const int64_t dim = detail::NormDim(call_, call_.dim, stack ? nd + 1 : nd, "dim");
    size_t follow = 0;
    for (size_t i = 1; i < in_.size(); ++i) {
      if (in_[i]->NumShards() > in_[follow]->NumShards()) follow = i;
    }
    Placements req;
    Placements out;
    for (const Placement& p : in_[follow]->placements) {
      if (p.IsShard() && !stack && p.dim == dim) {
        req.push_back(Placement::Replicate());
        out.push_back(Placement::Replicate());
      } else if (p.IsShard() && stack && p.dim >= dim) {
        req.push_back(p);
        out.push_back(Placement::Shard(p.dim + 1));
      } else {
        req.push_back(p);
        out.push_back(p);
      }
    }
    OpStrategy s;
    for (size_t i = 0; i < in_.size(); ++i) s.inputs.emplace_back(req);
    s.outputs.emplace_back(out);
    decision_.candidates.push_back(std::move(s));
    decision_.rule = "inputs follow input " + std::to_string(follow) + ", the most sharded one" +
                     (stack ? std::string() : std::string(", with the cat dim replicated")) + " (PyTorch " +
                     (stack ? "stack" : "cat") + " strategy)";
  }

  void Conv() {
    const auto nd = static_cast<int64_t>(first_->shape.size());
    const int64_t dim = detail::NormDim(call_, call_.dim, nd, "dim");
    Placements keep;
    Placements replicate;
    bool sharded = false;
    for (const Placement& p : first_->placements) {
      Placement q = p.IsPartial() && !p.IsLinearPartial() ? Placement::Replicate() : p;
      keep.push_back(q);
      if (q.IsShard(static_cast<int>(dim))) {
        sharded = true;
        replicate.push_back(Placement::Replicate());
      } else {
        replicate.push_back(q);
      }
    }
    OpStrategy halo;
    halo.inputs.emplace_back(keep);
    halo.outputs.emplace_back(keep);
    decision_.candidates.push_back(std::move(halo));
    if (sharded) {
      OpStrategy rep;
      rep.inputs.emplace_back(replicate);
      rep.outputs.emplace_back(replicate);
      decision_.candidates.push_back(std::move(rep));
      decision_.rule = "keeps the spatial sharding and exchanges halos of " +
                       std::to_string(ConvHalo(call_)) +
                       " element(s) with the neighbours (ShardTensor domain parallelism); the replicate "
                       "candidate is listed for comparison";
    } else {
      decision_.rule = "the conv dim is not sharded: no halo exchange";
    }
  }

  // Ops whose inputs follow input 0 with some dims replicated (no search in PyTorch).
  void Follow() {
    const TensorSpec& x = *first_;
    OpStrategy s;
    switch (call_.kind) {
      case OpKind::kSum:
      case OpKind::kMean:
        s = FollowReduction(x);
        break;
      case OpKind::kSoftmax:
        s = FollowSoftmax(x);
        break;
      case OpKind::kTranspose:
      case OpKind::kPermute:
        s = FollowPermutation(x);
        break;
      case OpKind::kSelect:
        s = FollowSelect(x);
        break;
      case OpKind::kLayerNorm:
      case OpKind::kLayerNormBackward:
        s = FollowLayerNorm(x);
        break;
      default:
        detail::Bad(call_, "internal: no strategy rule");
    }
    decision_.candidates.push_back(std::move(s));
  }

  OpStrategy FollowReduction(const TensorSpec& x) {
    const int64_t nd = Ndim(x);
    const Placements& cur = x.placements;
    auto replicate_from = [&](int64_t axis, bool keep_linear_partial) {
      Placements req;
      for (const Placement& p : cur) {
        if ((p.IsShard() && p.dim >= axis) ||
            (p.IsPartial() && !(keep_linear_partial && p.IsLinearPartial()))) {
          req.push_back(Placement::Replicate());
        } else {
          req.push_back(p);
        }
      }
      return req;
    };
    const std::vector<int64_t> reduced = detail::ReducedDims(call_, nd);
    auto is_reduced = [&](int64_t d) { return std::binary_search(reduced.begin(), reduced.end(), d); };
    Placements req = replicate_from(nd, true);  // non-linear partials -> R
    // mean over unevenly sharded dims cannot be P(avg) of local means.
    bool even = true;
    double divisor_even = 1.0;
    double divisor_global = 1.0;
    std::vector<RankLayout> layouts;
    if (call_.kind == OpKind::kMean) {
      TensorSpec rs = Spec(req, x.shape, "input 0");
      layouts = ComputeLayouts(rs);
      for (int64_t d : reduced) {
        divisor_global *= static_cast<double>(x.shape[static_cast<size_t>(d)]);
        const int64_t local = layouts[0].local_shape[static_cast<size_t>(d)];
        divisor_even *= static_cast<double>(local);
        if (NumShardsOfDim(rs, d) > 1) {
          for (const RankLayout& l : layouts) even = even && l.local_shape[static_cast<size_t>(d)] == local;
        }
      }
    }
    Placements out;
    bool any_sharded_reduced = false;
    for (const Placement& p : req) {
      if (p.IsShard() && is_reduced(p.dim)) {
        any_sharded_reduced = true;
        out.push_back(
            Placement::Partial(call_.kind == OpKind::kSum || !even ? ReduceOp::kSum : ReduceOp::kAvg));
      } else if (p.IsShard()) {
        int64_t d = p.dim;
        if (!call_.keepdim) {
          d -= std::count_if(reduced.begin(), reduced.end(), [&](int64_t r) { return r < p.dim; });
        }
        out.push_back(Placement::Shard(static_cast<int>(d)));
      } else {
        out.push_back(p);
      }
    }
    if (call_.kind == OpKind::kMean) {
      decision_.mean_divisor = even ? divisor_even : divisor_global;
      if (!even && any_sharded_reduced) {
        decision_.note =
            "mean over an unevenly sharded dim: shardscope gives P(sum) of local sums divided by the "
            "global "
            "count; PyTorch gives P(avg) of local means, which is wrong when shards differ in size";
      }
    }
    return OneToOne(req, out,
                    "follows the input; sharded reduced dims become Partial (PyTorch reduction strategy)");
  }

  OpStrategy FollowSoftmax(const TensorSpec& x) {
    const int64_t dim = detail::NormDim(call_, call_.dim, Ndim(x), "dim");
    Placements req;
    for (const Placement& p : x.placements) {
      req.push_back(p.IsPartial() || p.IsShard(static_cast<int>(dim)) ? Placement::Replicate() : p);
    }
    return OneToOne(
        req, req,
        "follows the input with the softmax dim and partials replicated (PyTorch softmax strategy)");
  }

  OpStrategy FollowPermutation(const TensorSpec& x) {
    const std::vector<int64_t> perm = detail::Permutation(call_, Ndim(x));
    Placements out;
    for (const Placement& p : x.placements) {
      if (p.IsShard()) {
        const auto it = std::find(perm.begin(), perm.end(), static_cast<int64_t>(p.dim));
        out.push_back(Placement::Shard(static_cast<int>(it - perm.begin())));
      } else {
        out.push_back(p);
      }
    }
    return OneToOne(x.placements, out,
                    "shard dims follow the permutation (PyTorch view ops); no communication");
  }

  OpStrategy FollowSelect(const TensorSpec& x) {
    const int64_t dim = detail::NormDim(call_, call_.dim, Ndim(x), "dim");
    Placements req;
    Placements out;
    for (const Placement& p : x.placements) {
      if (p.IsShard(static_cast<int>(dim))) {
        req.push_back(Placement::Replicate());
        out.push_back(Placement::Replicate());
      } else if (p.IsShard() && p.dim > dim) {
        req.push_back(p);
        out.push_back(Placement::Shard(p.dim - 1));
      } else {
        req.push_back(p);
        out.push_back(p);
      }
    }
    return OneToOne(req, out,
                    "the selected dim is replicated, later shard dims move down (PyTorch select strategy)");
  }

  static int64_t Ndim(const TensorSpec& x) { return static_cast<int64_t>(x.shape.size()); }

  // The one strategy of a one-input, one-output op, with the rule it follows.
  OpStrategy OneToOne(const Placements& input, const Placements& output, const char* rule) {
    OpStrategy s;
    s.inputs.emplace_back(input);
    s.outputs.emplace_back(output);
    decision_.rule = rule;
    return s;
  }

  OpStrategy FollowLayerNorm(const TensorSpec& x) {
    OpStrategy s;
    const bool backward = call_.kind == OpKind::kLayerNormBackward;
    const TensorSpec& input = backward ? *in_[1] : x;
    const int64_t axis = detail::LayerNormAxis(call_, input.shape);
    Placements req;
    for (const Placement& p : input.placements) {
      req.push_back(p.IsPartial() || (p.IsShard() && p.dim >= axis) ? Placement::Replicate() : p);
    }
    Placements replicated(req.size(), Placement::Replicate());
    Placements param_grad;
    for (const Placement& p : req)
      param_grad.push_back(p.IsShard() ? Placement::Partial() : Placement::Replicate());
    if (!backward) {
      s.inputs = {req, replicated, replicated};
      s.outputs = {req, req, req};
      decision_.rule =
          "normalized dims and partials of the input are replicated, weight and bias replicated (PyTorch "
          "layer_norm_strategy)";
    } else {
      s.inputs = {req, req, req, req, replicated};
      s.outputs = {req, param_grad, param_grad};
      decision_.rule =
          "grad_out and the input follow the input with normalized dims replicated; "
          "grad_weight/grad_bias "
          "are P(sum) over mesh dims that shard leading dims; unrequested outputs have no sharding "
          "(PyTorch layer_norm_bwd_strategy with PR #133502)";
    }
    for (size_t i = 0; i < in_.size(); ++i) {
      if (in_[i] == nullptr) s.inputs[i].reset();
    }
    for (size_t o = 0; o < s.outputs.size(); ++o) {
      if (!out_shapes_[o]) s.outputs[o].reset();
    }
    return s;
  }

  const OpCall& call_;
  const std::vector<const TensorSpec*>& in_;
  int devices_per_host_;
  const TensorSpec* first_ = nullptr;
  int mesh_ndim_ = 0;
  bool choose_min_ = false;
  std::vector<std::optional<Shape>> out_shapes_;
  OpDecision decision_;
};

}  // namespace

OpDecision PropagateOp(const OpCall& call, const std::vector<const TensorSpec*>& inputs,
                       int devices_per_host) {
  return Propagator(call, inputs, devices_per_host).Run();
}

}  // namespace shardscope::engine