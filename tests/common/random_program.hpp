#pragma once
// Random programs for the program property tests (local backend: tests/engine, MPI:
// tests/mpi): a random mesh from `meshes`, four seeded input tensors with random placements
// (uneven and empty shards, P(sum) included), and a random chain of 2-6 ops and explicit
// redistributes whose shapes fit. Returns the program as scenario JSON text, so that the parser
// and its propagation run too. Deterministic in `seed`.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

namespace shardscope::testing {

using nlohmann::json;

struct Gen {
  std::mt19937_64 rng;
  explicit Gen(uint64_t seed) : rng(seed) {}
  int64_t Int(int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); }
  bool Coin(double p = 0.5) { return std::bernoulli_distribution(p)(rng); }
  template <class T>
  const T& Pick(const std::vector<T>& v) {
    return v[static_cast<size_t>(Int(0, static_cast<int64_t>(v.size()) - 1))];
  }
};

struct Tensor {
  std::string name;
  std::vector<int64_t> shape;
};

// Random placements for a tensor of `ndim` dims on a mesh of `mesh_ndim` dims.
inline json RandomPlacements(Gen& g, size_t mesh_ndim, size_t ndim, bool allow_partial) {
  json p = json::array();
  for (size_t md = 0; md < mesh_ndim; ++md) {
    const int64_t r = g.Int(0, 9);
    if (r < 3 || ndim == 0) {
      p.push_back(allow_partial && r == 0 ? "P(sum)" : "R");
    } else {
      p.push_back("S(" + std::to_string(g.Int(0, static_cast<int64_t>(ndim) - 1)) + ")");
    }
  }
  return p;
}

// What RandomOp drew: an op in `op`, nothing this time (no tensor fits), or none of its ops (the
// caller draws a layer_norm or a redistribute).
enum class Drawn { kOp, kSkip, kOther };

// The tensors of `pool` with at least `ndim_min` dims.
inline std::vector<Tensor> WithRank(const std::vector<Tensor>& pool, size_t ndim_min) {
  std::vector<Tensor> c;
  for (const Tensor& t : pool) {
    if (t.shape.size() >= ndim_min) c.push_back(t);
  }
  return c;
}

// A sum or mean (floating only) over one dim of a tensor of `pool`, keeping the dim or not.
inline Drawn RandomReduction(Gen& g, bool floating, const std::vector<Tensor>& pool, json& op,
                             std::vector<int64_t>& out_shape) {
  const auto c = WithRank(pool, 1);
  const Tensor x = g.Pick(c);
  const int64_t d = g.Int(0, static_cast<int64_t>(x.shape.size()) - 1);
  const bool keep = g.Coin();
  op = {{"op", floating && g.Coin() ? "mean" : "sum"},
        {"inputs", {x.name}},
        {"dims", {d - (g.Coin() ? 0 : static_cast<int64_t>(x.shape.size()))}},
        {"keepdim", keep}};
  if (op["op"] == "mean" && x.shape[static_cast<size_t>(d)] == 0) op["op"] = "sum";  // mean of nothing is NaN
  out_shape = x.shape;
  if (keep) {
    out_shape[static_cast<size_t>(d)] = 1;
  } else {
    out_shape.erase(out_shape.begin() + d);
  }
  return Drawn::kOp;
}

// A stack (`stack`) or cat of a tensor of `pool` with itself along a random dim.
inline Drawn RandomJoin(Gen& g, bool stack, const std::vector<Tensor>& pool, json& op,
                        std::vector<int64_t>& out_shape) {
  const Tensor x = g.Pick(pool);
  if (x.shape.empty()) return Drawn::kSkip;
  const auto nd = static_cast<int64_t>(x.shape.size());
  const int64_t dim = stack ? g.Int(-(nd + 1), nd) : g.Int(-nd, nd - 1);
  op = {{"op", stack ? "stack" : "cat"}, {"inputs", {x.name, x.name}}, {"dim", dim}};
  out_shape = x.shape;
  const int64_t d = dim < 0 ? dim + (stack ? nd + 1 : nd) : dim;
  if (stack) {
    out_shape.insert(out_shape.begin() + d, 2);
  } else {
    out_shape[static_cast<size_t>(d)] *= 2;
  }
  return Drawn::kOp;
}

// A conv of a tensor of `pool` along a random dim with a 3- or 5-tap random kernel.
inline Drawn RandomConv(Gen& g, const std::vector<Tensor>& pool, json& op, std::vector<int64_t>& out_shape) {
  const auto c = WithRank(pool, 1);
  const Tensor x = g.Pick(c);
  const int64_t taps = g.Coin() ? 3 : 5;
  json kernel = json::array();
  for (int64_t t = 0; t < taps; ++t) kernel.push_back(g.Int(-2, 3));
  op = {{"op", "conv"},
        {"inputs", {x.name}},
        {"dim", g.Int(0, static_cast<int64_t>(x.shape.size()) - 1)},
        {"kernel", kernel}};
  out_shape = x.shape;
  return Drawn::kOp;
}

// Op number `pick` (0..10) of RandomProgram on tensors of `pool`: the op's JSON (without its output)
// and its output shape.
inline Drawn RandomOp(Gen& g, int64_t pick, bool floating, const std::vector<Tensor>& pool, json& op,
                      std::vector<int64_t>& out_shape) {
  if (pick == 0) {  // mm of two compatible tensors from the pool
    std::vector<std::pair<Tensor, Tensor>> pairs;
    for (const Tensor& x : pool)
      for (const Tensor& y : pool)
        if (x.shape.size() == 2 && y.shape.size() == 2 && x.shape[1] == y.shape[0]) pairs.push_back({x, y});
    if (pairs.empty()) return Drawn::kSkip;
    const auto& [x, y] = g.Pick(pairs);
    op = {{"op", "mm"}, {"inputs", {x.name, y.name}}};
    out_shape = {x.shape[0], y.shape[1]};
    return Drawn::kOp;
  } else if (pick <= 2) {  // add / mul with the same shape or a broadcast vector
    const Tensor x = g.Pick(pool);
    std::vector<Tensor> partners;
    for (const Tensor& y : pool) {
      const bool same = y.shape == x.shape;
      const bool vec = y.shape.size() == 1 && !x.shape.empty() && y.shape[0] == x.shape.back();
      if (same || vec) partners.push_back(y);
    }
    if (partners.empty()) return Drawn::kSkip;
    const Tensor y = g.Pick(partners);
    op = {{"op", pick == 1 ? "add" : "mul"}, {"inputs", {x.name, y.name}}};
    out_shape = x.shape;
    return Drawn::kOp;
  } else if (pick == 3 && floating) {
    const Tensor x = g.Pick(pool);
    op = {{"op", "gelu"}, {"inputs", {x.name}}};
    out_shape = x.shape;
    return Drawn::kOp;
  } else if (pick == 4) {
    return RandomReduction(g, floating, pool, op, out_shape);
  } else if (pick == 5 && floating) {
    const auto c = WithRank(pool, 1);
    const Tensor x = g.Pick(c);
    op = {{"op", "softmax"}, {"inputs", {x.name}}, {"dim", -1}};
    out_shape = x.shape;
    return Drawn::kOp;
  } else if (pick == 6) {
    const auto c = WithRank(pool, 2);
    if (c.empty()) return Drawn::kSkip;
    const Tensor x = g.Pick(c);
    op = {{"op", "transpose"}, {"inputs", {x.name}}, {"dims", {0, -1}}};
    out_shape = x.shape;
    std::swap(out_shape.front(), out_shape.back());
    return Drawn::kOp;
  } else if (pick == 7) {
    std::vector<Tensor> c;
    for (const Tensor& t : pool) {
      if (t.shape.size() >= 2 && t.shape[0] > 0) c.push_back(t);
    }
    if (c.empty()) return Drawn::kSkip;
    const Tensor x = g.Pick(c);
    op = {{"op", "select"}, {"inputs", {x.name}}, {"dim", 0}, {"index", -g.Int(1, x.shape[0])}};
    out_shape.assign(x.shape.begin() + 1, x.shape.end());
    return Drawn::kOp;
  } else if (pick == 8 || pick == 9) {
    return RandomJoin(g, pick == 8, pool, op, out_shape);
  } else if (pick == 10) {
    return RandomConv(g, pool, op, out_shape);
  }

  return Drawn::kOther;
}

inline std::string RandomProgram(uint64_t seed, const std::vector<std::vector<int64_t>>& meshes) {
  Gen g(seed);
  const std::vector<int64_t> mesh = g.Pick(meshes);
  const bool floating = g.Coin(0.6);
  const std::string dtype = floating ? (g.Coin() ? "f32" : "f64") : (g.Coin() ? "i32" : "i64");
  json prog;
  prog["mesh"] = mesh;
  const int64_t m = g.Int(0, 7), k = g.Int(1, 7), n = g.Int(1, 6);
  std::vector<Tensor> pool;
  auto add_input = [&](const std::string& name, std::vector<int64_t> shape) {
    prog["tensors"][name] = {{"shape", shape},
                             {"dtype", dtype},
                             {"placements", RandomPlacements(g, mesh.size(), shape.size(), true)},
                             {"seed", g.Int(0, 1000)}};
    pool.push_back({name, shape});
  };
  add_input("a", {m, k});
  add_input("b", {k, n});
  add_input("c", {m, n});
  add_input("v", {n});
  json steps = json::array();
  int next = 0;
  auto fresh = [&] { return "t" + std::to_string(next++); };
  const int64_t count = g.Int(2, 6);
  for (int64_t s = 0; s < count; ++s) {
    const int64_t pick = g.Int(0, 12);
    json op;
    std::vector<int64_t> out_shape;
    const Drawn drawn = RandomOp(g, pick, floating, pool, op, out_shape);
    if (drawn == Drawn::kSkip) continue;
    if (drawn == Drawn::kOp) {
      // An op: falls through to name its output.
    } else if (pick == 11 && floating) {
      const auto c = WithRank(pool, 2);
      if (c.empty()) continue;
      const Tensor x = g.Pick(c);
      if (x.shape.back() == 0) continue;
      op = {{"op", "layer_norm"},
            {"inputs", {x.name, nullptr, nullptr}},
            {"outputs", {fresh(), fresh(), fresh()}}};
      steps.push_back(op);
      pool.push_back({op["outputs"][0], x.shape});
      continue;
    } else {  // explicit redistribute of something in the pool
      const Tensor x = g.Pick(pool);
      steps.push_back(
          {{"redistribute", x.name}, {"to", RandomPlacements(g, mesh.size(), x.shape.size(), false)}});
      continue;
    }
    if (op.is_null()) continue;
    op["output"] = fresh();
    steps.push_back(op);
    pool.push_back({op["output"], out_shape});
  }
  prog["steps"] = steps;
  return prog.dump();
}

}  // namespace shardscope::testing
