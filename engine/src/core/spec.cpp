#include "shardscope/engine/core/spec.hpp"

#include <charconv>
#include <limits>
#include <set>

#include "shardscope/error.hpp"
#include "shardscope/names.hpp"
#include "shardscope/text.hpp"

namespace shardscope::engine {

namespace {

struct DTypeInfo {
  DType value;
  std::string_view name;
  int size;
};

constexpr DTypeInfo kDTypes[] = {
    {DType::kF32, "f32", 4},   {DType::kF64, "f64", 8}, {DType::kF16, "f16", 2},
    {DType::kBF16, "bf16", 2}, {DType::kI32, "i32", 4}, {DType::kI64, "i64", 8},
};

// The other names a file may write (PyTorch's and C's).
constexpr Named<DType> kDTypeAliases[] = {
    {DType::kF32, "float32"}, {DType::kF32, "float"}, {DType::kF64, "float64"},   {DType::kF64, "double"},
    {DType::kF16, "float16"}, {DType::kF16, "half"},  {DType::kBF16, "bfloat16"}, {DType::kI32, "int32"},
    {DType::kI32, "int"},     {DType::kI64, "int64"}, {DType::kI64, "long"},
};

}  // namespace

std::string_view DTypeName(DType dtype) { return NameIn(kDTypes, dtype, "f32"); }

int DTypeSize(DType dtype) {
  const DTypeInfo* info = EntryIn(kDTypes, dtype);
  return info ? info->size : 4;
}

bool IsFloating(DType dtype) { return dtype != DType::kI32 && dtype != DType::kI64; }

DType ParseDType(std::string_view text, std::string_view what) {
  if (std::optional<DType> dtype = ParseIn(kDTypes, text)) return *dtype;
  if (std::optional<DType> dtype = ParseIn(kDTypeAliases, text)) return *dtype;
  throw InvalidInput(std::string(what) + ": unknown dtype '" + std::string(text) +
                     "' (expected f32, f64, f16, bf16, i32 or i64)");
}

std::string_view ChunkRuleName(ChunkRule rule) { return rule == ChunkRule::kTorch ? "torch" : "physicsnemo"; }

ChunkRule ParseChunkRule(std::string_view text, std::string_view what) {
  if (text == "torch") return ChunkRule::kTorch;
  if (text == "physicsnemo") return ChunkRule::kPhysicsNemo;
  throw InvalidInput(std::string(what) + ": unknown chunking '" + std::string(text) +
                     "' (expected torch or physicsnemo)");
}

Shape ParseShape(std::string_view text, std::string_view what, bool allow_zero) {
  Shape shape;
  if (text == "()" || text == "scalar") return shape;
  size_t start = 0;
  while (true) {
    size_t end = text.find('x', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view tok = text.substr(start, end - start);
    int64_t v = 0;
    auto [ptr, ec] = std::from_chars(tok.data(), tok.data() + tok.size(), v);
    if (tok.empty() || ec != std::errc() || ptr != tok.data() + tok.size()) {
      throw InvalidInput(std::string(what) + ": '" + std::string(text) + "' has a bad extent '" +
                         std::string(tok) + "' (expected e.g. 8x8x8)");
    }
    if (v < 0 || (!allow_zero && v == 0)) {
      throw InvalidInput(std::string(what) + ": extent " + std::to_string(v) + " in '" + std::string(text) +
                         "' must be " + (allow_zero ? ">= 0" : ">= 1"));
    }
    if (v > kMaxExtent) {
      throw InvalidInput(std::string(what) + ": extent " + std::to_string(v) + " in '" + std::string(text) +
                         "' is above 2^48 = " + std::to_string(kMaxExtent) +
                         ", the largest shardscope handles");
    }
    shape.push_back(v);
    if (end == text.size()) break;
    start = end + 1;
  }
  if (shape.size() > 16) throw InvalidInput(std::string(what) + ": more than 16 dims");
  return shape;
}

std::string FormatShape(const Shape& shape) { return shape.empty() ? "()" : JoinInts(shape, "x"); }

int64_t NumElements(const Shape& shape) {
  int64_t n = 1;
  for (int64_t e : shape) {
    if (e != 0 && n > std::numeric_limits<int64_t>::max() / e) {
      throw InvalidInput("shape " + FormatShape(shape) + " has more than 2^63 elements");
    }
    n *= e;
  }
  return n;
}

ShardOrder TensorSpec::EffectiveOrder() const {
  // The default order lists shard-like mesh dims left to right, which is also how a spec whose
  // _StridedShards encode the order (no explicit order) applies them.
  return shard_order ? *shard_order : DefaultShardOrder(placements);
}

bool TensorSpec::HasStridedShard() const {
  for (const auto& p : placements) {
    if (p.IsStridedShard()) return true;
  }
  return false;
}

int64_t TensorSpec::NumShards() const {
  int64_t n = 1;
  for (size_t md = 0; md < placements.size(); ++md) {
    if (placements[md].IsShardLike()) n *= mesh.size(static_cast<int>(md));
  }
  return n;
}

TensorSpec MakeSpec(Mesh mesh, Placements placements, std::optional<ShardOrder> order, Shape shape,
                    DType dtype, ChunkRule chunking, std::map<int, std::vector<int64_t>> explicit_sizes,
                    std::string_view what) {
  const std::string w(what);
  if (static_cast<int>(placements.size()) != mesh.ndim()) {
    throw InvalidInput(w + ": " + std::to_string(placements.size()) + " placements '" +
                       FormatPlacements(placements) + "' for a " + std::to_string(mesh.ndim()) +
                       "-d mesh (need one per mesh dim)");
  }
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] > kMaxExtent) {
      throw InvalidInput(w + ": extent " + std::to_string(shape[d]) + " of tensor dim " + std::to_string(d) +
                         " is above 2^48 = " + std::to_string(kMaxExtent) +
                         ", the largest shardscope handles");
    }
  }
  NumElements(shape);
  NormalizePlacements(placements, static_cast<int>(shape.size()), what);
  std::set<ReduceOp> ops;
  for (const auto& p : placements) {
    if (p.IsPartial()) ops.insert(p.op);
  }
  if (ops.size() > 1 && ops != std::set<ReduceOp>{ReduceOp::kSum, ReduceOp::kAvg}) {
    throw Unsupported(w + ": mixed Partial reduce ops '" + FormatPlacements(placements) +
                      "' are not supported (only sum with avg, as in PyTorch)");
  }
  bool strided = false;
  for (const auto& p : placements) strided = strided || p.IsStridedShard();
  if (order) {
    ValidateShardOrder(*order, placements, what);
    // With _StridedShards an explicit order is kept even when it is the default one: it means
    // PyTorch's use_strided_shard_as_shard_order=False (the _S placements are literal, applied in
    // this order), while no order means their split factors encode the order.
    if (!strided && *order == DefaultShardOrder(placements)) order.reset();
  }
  for (auto& [md, sizes] : explicit_sizes) {
    if (md < 0 || md >= mesh.ndim()) {
      throw InvalidInput(w + ": explicit sizes given for mesh dim " + std::to_string(md) + " of a " +
                         std::to_string(mesh.ndim()) + "-d mesh");
    }
    if (!placements[static_cast<size_t>(md)].IsShard()) {
      throw InvalidInput(w + ": explicit sizes given for mesh dim " + std::to_string(md) +
                         " whose placement " + placements[static_cast<size_t>(md)].ToString() +
                         " is not a Shard");
    }
    if (static_cast<int64_t>(sizes.size()) != mesh.size(md)) {
      throw InvalidInput(w + ": mesh dim " + std::to_string(md) + " has " + std::to_string(mesh.size(md)) +
                         " ranks but " + std::to_string(sizes.size()) + " explicit sizes");
    }
    for (int64_t s : sizes) {
      if (s < 0) throw InvalidInput(w + ": explicit size " + std::to_string(s) + " is negative");
    }
  }
  TensorSpec spec;
  spec.mesh = std::move(mesh);
  spec.placements = std::move(placements);
  spec.shard_order = std::move(order);
  spec.shape = std::move(shape);
  spec.dtype = dtype;
  spec.chunking = chunking;
  spec.explicit_sizes = std::move(explicit_sizes);
  return spec;
}

}  // namespace shardscope::engine
