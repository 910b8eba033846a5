#include "shardscope/engine/core/mesh.hpp"

#include <algorithm>
#include <set>

#include "shardscope/error.hpp"

namespace shardscope::engine {

Mesh::Mesh(Shape shape, std::vector<std::string> dim_names)
    : shape_(std::move(shape)), dim_names_(std::move(dim_names)) {
  if (shape_.empty()) throw InvalidInput("mesh: needs at least one dim");
  world_ = 1;
  for (size_t i = 0; i < shape_.size(); ++i) {
    if (shape_[i] < 1) {
      throw InvalidInput("mesh: dim " + std::to_string(i) + " has size " + std::to_string(shape_[i]) +
                         "; sizes must be >= 1");
    }
    if (world_ > (int64_t{1} << 31) / shape_[i]) throw InvalidInput("mesh: more than 2^31 ranks");
    world_ *= shape_[i];
  }
  if (!dim_names_.empty()) {
    if (dim_names_.size() != shape_.size()) {
      throw InvalidInput("mesh names: " + std::to_string(dim_names_.size()) + " names for a " +
                         std::to_string(shape_.size()) + "-d mesh");
    }
    std::set<std::string> seen;
    for (const auto& n : dim_names_) {
      if (n.empty()) throw InvalidInput("mesh names: empty name");
      if (!seen.insert(n).second) throw InvalidInput("mesh names: '" + n + "' appears twice");
    }
  }
}

std::vector<int64_t> Mesh::Coordinate(int64_t rank) const {
  if (rank < 0 || rank >= world_) {
    throw InvalidInput("rank " + std::to_string(rank) + " is outside the mesh of " + std::to_string(world_) +
                       " ranks");
  }
  std::vector<int64_t> coord(shape_.size());
  for (int i = ndim() - 1; i >= 0; --i) {
    coord[static_cast<size_t>(i)] = rank % shape_[static_cast<size_t>(i)];
    rank /= shape_[static_cast<size_t>(i)];
  }
  return coord;
}

int64_t Mesh::RankOf(const std::vector<int64_t>& coord) const {
  int64_t rank = 0;
  for (size_t i = 0; i < shape_.size(); ++i) rank = rank * shape_[i] + coord[i];
  return rank;
}

std::vector<int64_t> Mesh::Group(int64_t rank, const std::vector<int>& mesh_dims) const {
  std::vector<int> dims = mesh_dims;
  std::sort(dims.begin(), dims.end());
  std::vector<int64_t> coord = Coordinate(rank);
  int64_t count = GroupSize(dims);
  std::vector<int64_t> ranks;
  ranks.reserve(static_cast<size_t>(count));
  for (int64_t k = 0; k < count; ++k) {
    int64_t rem = k;
    for (int i = static_cast<int>(dims.size()) - 1; i >= 0; --i) {
      int md = dims[static_cast<size_t>(i)];
      coord[static_cast<size_t>(md)] = rem % size(md);
      rem /= size(md);
    }
    ranks.push_back(RankOf(coord));
  }
  return ranks;
}

int64_t Mesh::GroupIndex(int64_t rank, const std::vector<int>& mesh_dims) const {
  std::vector<int> dims = mesh_dims;
  std::sort(dims.begin(), dims.end());
  std::vector<int64_t> coord = Coordinate(rank);
  int64_t index = 0;
  for (int md : dims) index = index * size(md) + coord[static_cast<size_t>(md)];
  return index;
}

int64_t Mesh::GroupSize(const std::vector<int>& mesh_dims) const {
  int64_t n = 1;
  for (int md : mesh_dims) n *= size(md);
  return n;
}

void Mesh::RegisterFlattened(std::vector<int> mesh_dims) {
  std::sort(mesh_dims.begin(), mesh_dims.end());
  if (mesh_dims.size() < 2) throw InvalidInput("flatten: a flattened mesh needs at least 2 mesh dims");
  for (size_t i = 0; i < mesh_dims.size(); ++i) {
    if (mesh_dims[i] < 0 || mesh_dims[i] >= ndim()) {
      throw InvalidInput("flatten: mesh dim " + std::to_string(mesh_dims[i]) + " is out of range for a " +
                         std::to_string(ndim()) + "-d mesh");
    }
    if (i > 0 && mesh_dims[i] == mesh_dims[i - 1]) {
      throw InvalidInput("flatten: mesh dim " + std::to_string(mesh_dims[i]) + " listed twice");
    }
  }
  if (!HasFlattened(mesh_dims)) flattened_.push_back(std::move(mesh_dims));
}

void Mesh::RegisterAllFlattened() {
  int n = ndim();
  for (uint32_t mask = 1; mask < (1u << n); ++mask) {
    std::vector<int> dims;
    for (int i = 0; i < n; ++i) {
      if (mask & (1u << i)) dims.push_back(i);
    }
    if (dims.size() >= 2) RegisterFlattened(dims);
  }
}

bool Mesh::HasFlattened(const std::vector<int>& sorted_mesh_dims) const {
  return std::find(flattened_.begin(), flattened_.end(), sorted_mesh_dims) != flattened_.end();
}

int Mesh::DimIndex(const std::string& name_or_index) const {
  for (size_t i = 0; i < dim_names_.size(); ++i) {
    if (dim_names_[i] == name_or_index) return static_cast<int>(i);
  }
  if (!name_or_index.empty() && std::all_of(name_or_index.begin(), name_or_index.end(), ::isdigit) &&
      name_or_index.size() < 6) {
    int v = std::stoi(name_or_index);
    if (v < ndim()) return v;
  }
  throw InvalidInput("mesh dim '" + name_or_index + "' is neither a dim name nor an index below " +
                     std::to_string(ndim()));
}

std::string Mesh::ToString() const {
  std::string s;
  for (size_t i = 0; i < shape_.size(); ++i) s += (i ? "x" : "") + std::to_string(shape_[i]);
  if (!dim_names_.empty()) {
    s += "(";
    for (size_t i = 0; i < dim_names_.size(); ++i) s += (i ? "," : "") + dim_names_[i];
    s += ")";
  }
  return s;
}

}  // namespace shardscope::engine
