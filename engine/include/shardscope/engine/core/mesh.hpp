#pragma once
// Device mesh [PyTorch DeviceMesh]: an N-d grid of ranks in row-major order, optional dim
// names, and explicitly registered flattened sub-meshes (merged collectives need one, exactly
// as in PyTorch, which never creates a flattened mesh on its own).

#include <cstdint>
#include <string>
#include <vector>

namespace shardscope::engine {

using Shape = std::vector<int64_t>;

/// An N-d device mesh. Value type; cheap to copy for meshes of a few dims. Thread-compatible.
class Mesh {
 public:
  Mesh() = default;
  /// Builds a mesh; throws Error(kInvalidInput) for an empty shape, a size < 1, mismatched or
  /// duplicate names, or more than 2^31 ranks.
  explicit Mesh(Shape shape, std::vector<std::string> dim_names = {});

  int ndim() const { return static_cast<int>(shape_.size()); }
  int64_t size() const { return world_; }
  int64_t size(int mesh_dim) const { return shape_.at(static_cast<size_t>(mesh_dim)); }
  const Shape& shape() const { return shape_; }
  const std::vector<std::string>& dim_names() const { return dim_names_; }
  bool has_dim_names() const { return !dim_names_.empty(); }

  /// Row-major coordinate of `rank`; throws Error(kInvalidInput) when out of range.
  std::vector<int64_t> Coordinate(int64_t rank) const;
  /// Rank at `coord` (row-major).
  int64_t RankOf(const std::vector<int64_t>& coord) const;
  /// The ranks that share every coordinate of `rank` except those on `mesh_dims`, ordered
  /// row-major over `mesh_dims` taken in ascending order (the flattened group of PyTorch).
  std::vector<int64_t> Group(int64_t rank, const std::vector<int>& mesh_dims) const;
  /// Index of `rank` inside Group(rank, mesh_dims).
  int64_t GroupIndex(int64_t rank, const std::vector<int>& mesh_dims) const;
  /// Product of the sizes of `mesh_dims`.
  int64_t GroupSize(const std::vector<int>& mesh_dims) const;

  /// Registers a flattened sub-mesh over `mesh_dims` (>= 2 distinct dims, sorted on entry).
  void RegisterFlattened(std::vector<int> mesh_dims);
  /// Registers every ascending subset of >= 2 dims (the CLI's `--flatten all`).
  void RegisterAllFlattened();
  /// True when a flattened sub-mesh over exactly these dims (ascending) was registered.
  bool HasFlattened(const std::vector<int>& sorted_mesh_dims) const;
  const std::vector<std::vector<int>>& flattened() const { return flattened_; }

  /// Mesh dim index for a name or a decimal index string; throws Error(kInvalidInput).
  int DimIndex(const std::string& name_or_index) const;
  /// "2x2x2" (names appended as "(dp,tp)" when present).
  std::string ToString() const;

  bool operator==(const Mesh& other) const = default;

 private:
  Shape shape_;
  std::vector<std::string> dim_names_;
  std::vector<std::vector<int>> flattened_;
  int64_t world_ = 0;
};

}  // namespace shardscope::engine
