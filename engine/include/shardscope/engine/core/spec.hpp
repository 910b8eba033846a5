#pragma once
// TensorSpec [PyTorch DTensorSpec]: mesh, placements, shard order, global shape, dtype, and the
// chunking rule that decides per-rank extents (torch.chunk as DTensor, ShardTensor's
// compute_split_shapes, or explicit per-rank sizes).

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "shardscope/engine/core/mesh.hpp"
#include "shardscope/engine/core/placement.hpp"
#include "shardscope/engine/core/shard_order.hpp"

namespace shardscope::engine {

enum class DType { kF32, kF64, kF16, kBF16, kI32, kI64 };
/// "f32", "f64", "f16", "bf16", "i32", "i64".
std::string_view DTypeName(DType dtype);
/// Bytes per element.
int DTypeSize(DType dtype);
/// Parses a dtype name (also "float32", "float", "half", "bfloat16", "int32", "int64", ...);
/// throws Error(kInvalidInput) naming `what`.
DType ParseDType(std::string_view text, std::string_view what);
bool IsFloating(DType dtype);

/// How an extent is split over n ranks.
enum class ChunkRule {
  kTorch,        ///< torch.chunk: ceil(L/n) each, trailing ranks may be empty (DTensor)
  kPhysicsNemo,  ///< ShardTensor compute_split_shapes: 5 over 4 is 1,1,1,2
};
std::string_view ChunkRuleName(ChunkRule rule);
ChunkRule ParseChunkRule(std::string_view text, std::string_view what);

/// Parses "8x8x8" (a zero extent is allowed, "0x8"); throws Error(kInvalidInput) naming `what`.
/// `allow_zero` false rejects extents < 1 (meshes).
Shape ParseShape(std::string_view text, std::string_view what, bool allow_zero = true);
/// "8x8x8"; "()" for a 0-d shape.
std::string FormatShape(const Shape& shape);
/// Product of extents; throws Error(kInvalidInput) if it overflows int64.
int64_t NumElements(const Shape& shape);

/// The largest tensor extent shardscope accepts, 2^48 (also the trace format's limit): layouts
/// compute chunk sizes and offsets in int64 with room for up to 2^20 ranks.
inline constexpr int64_t kMaxExtent = int64_t{1} << 48;

/// A sharded tensor's distribution. Build through MakeSpec, which validates and normalizes.
struct TensorSpec {
  Mesh mesh;
  Placements placements;
  /// The shard order; empty optional for the default order. With StridedShards, empty means
  /// the split factors encode the order (PyTorch use_strided_shard_as_shard_order=True) and a
  /// given order (even the default one) means the _S placements are literal, applied in it.
  std::optional<ShardOrder> shard_order;
  Shape shape;
  DType dtype = DType::kF32;
  ChunkRule chunking = ChunkRule::kTorch;
  /// Explicit per-rank extents (ShardTensor's sharding_shapes), keyed by mesh dim: the extent
  /// of the sharded tensor dim at each coordinate of that mesh dim. Overrides `chunking` there.
  std::map<int, std::vector<int64_t>> explicit_sizes;

  /// The order actually in effect: shard_order, or the default order (shard-like mesh dims left
  /// to right, which is also how StridedShards without an order are applied).
  ShardOrder EffectiveOrder() const;
  bool HasStridedShard() const;
  /// Product of mesh sizes over shard-like placements (PyTorch num_shards).
  int64_t NumShards() const;
  bool operator==(const TensorSpec&) const = default;
};

/// Validates and normalizes (negative dims, order consistency, explicit sizes); `what` names
/// the source in errors ("--from"). Throws Error(kInvalidInput) or Error(kUnsupported) (mixed
/// Partial ops other than sum+avg).
TensorSpec MakeSpec(Mesh mesh, Placements placements, std::optional<ShardOrder> order, Shape shape,
                    DType dtype, ChunkRule chunking, std::map<int, std::vector<int64_t>> explicit_sizes,
                    std::string_view what);

}  // namespace shardscope::engine
