#include <algorithm>
#include <charconv>
#include <ostream>
#include <set>
#include <string_view>

#include "commands.hpp"
#include "shardscope/engine/core/placement.hpp"
#include "shardscope/engine/core/shard_order.hpp"
#include "shardscope/error.hpp"
#include "shardscope/text.hpp"

namespace shardscope::app {
namespace {

std::vector<std::string> SplitOn(std::string_view text, char sep) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    size_t end = text.find(sep, start);
    if (end == std::string_view::npos) end = text.size();
    parts.emplace_back(text.substr(start, end - start));
    if (end == text.size()) break;
    start = end + 1;
  }
  return parts;
}

// Engine messages about a mesh start with their own subject ("mesh: ", "flatten: "); the CLI
// names the flag instead so the user knows which argument to fix.
std::string WithoutPrefix(const std::string& message, std::string_view prefix) {
  if (message.rfind(prefix, 0) == 0) return message.substr(prefix.size());
  return message;
}

}  // namespace

engine::Mesh BuildMesh(const MeshArgs& args) {
  engine::Shape shape = engine::ParseShape(args.mesh, "--mesh", /*allow_zero=*/false);
  if (shape.empty()) throw InvalidInput("--mesh: '" + args.mesh + "' has no dims (expected e.g. 2x4)");
  std::vector<std::string> names;
  if (!args.mesh_names.empty()) {
    names = SplitOn(args.mesh_names, ',');
    if (names.size() != shape.size()) {
      throw InvalidInput("--mesh-names: '" + args.mesh_names + "' gives " + std::to_string(names.size()) +
                         " names for the " + std::to_string(shape.size()) + "-d mesh '" + args.mesh + "'");
    }
    std::set<std::string> seen;
    for (const auto& n : names) {
      if (n.empty()) throw InvalidInput("--mesh-names: '" + args.mesh_names + "' has an empty name");
      if (!seen.insert(n).second) throw InvalidInput("--mesh-names: '" + n + "' appears twice");
    }
  }
  engine::Mesh mesh = [&] {
    try {
      return engine::Mesh(shape, names);
    } catch (const Error& e) {
      throw Error(e.code(), "--mesh: '" + args.mesh + "': " + WithoutPrefix(e.what(), "mesh: "));
    }
  }();
  if (args.flatten == "none" || args.flatten.empty()) return mesh;
  if (args.flatten == "all") {
    mesh.RegisterAllFlattened();
    return mesh;
  }
  for (const std::string& entry : SplitOn(args.flatten, ';')) {
    std::vector<int> dims;
    for (const std::string& tok : SplitOn(entry, ',')) {
      try {
        dims.push_back(mesh.DimIndex(tok));
      } catch (const Error& e) {
        throw Error(e.code(), "--flatten: '" + tok + "' in '" + args.flatten + "': " + e.what());
      }
    }
    try {
      mesh.RegisterFlattened(dims);
    } catch (const Error& e) {
      throw Error(e.code(), "--flatten: '" + entry + "': " + WithoutPrefix(e.what(), "flatten: "));
    }
  }
  return mesh;
}

engine::TensorSpec BuildSpec(const engine::Mesh& mesh, const TensorArgs& tensor,
                             const std::string& placements, const std::string& what, const std::string& order,
                             const std::string& order_flag) {
  engine::Shape shape = engine::ParseShape(tensor.shape, "--shape");
  try {
    engine::NumElements(shape);
  } catch (const Error& e) {
    throw Error(e.code(), "--shape: '" + tensor.shape + "' has more than 2^63 elements");
  }
  engine::DType dtype = engine::ParseDType(tensor.dtype, "--dtype");
  engine::ChunkRule chunking = engine::ParseChunkRule(tensor.chunking, "--chunking");
  // PyTorch's printed form carries its order ("S(0)[1]S(0)[0]R"); an order flag must agree with it.
  engine::PlacementsWithOrder with_order = engine::ParsePlacementsWithOrder(placements, what);
  engine::Placements parsed = with_order.placements;
  std::optional<engine::ShardOrder> shard_order = with_order.order;
  if (!order.empty()) {
    shard_order = engine::ParseShardOrder(order, order_flag);
    if (with_order.order && *with_order.order != *shard_order) {
      throw InvalidInput(order_flag + ": '" + order + "' contradicts the order that " + what + " '" +
                         placements + "' spells (" + engine::FormatShardOrder(*with_order.order) + ")");
    }
  }
  if (shard_order && static_cast<int>(parsed.size()) == mesh.ndim()) {
    // Validate the order against the placements here so the message names the order flag;
    // MakeSpec would name the placements flag.
    engine::Placements normalized = parsed;
    engine::NormalizePlacements(normalized, static_cast<int>(shape.size()), what);
    for (const auto& entry : *shard_order) {
      if (entry.tensor_dim < 0 || entry.tensor_dim >= static_cast<int>(shape.size())) {
        throw InvalidInput(order_flag + ": '" + order + "' orders tensor dim " +
                           std::to_string(entry.tensor_dim) + " but the tensor has " +
                           std::to_string(shape.size()) + " dims");
      }
    }
    engine::ValidateShardOrder(*shard_order, normalized, order_flag);
  }
  return engine::MakeSpec(mesh, std::move(parsed), std::move(shard_order), std::move(shape), dtype, chunking,
                          {}, what);
}

std::string AutoRanksNote(const std::string& text, size_t shown, int64_t mesh_size) {
  if (text != "auto" || static_cast<int64_t>(shown) == mesh_size) return "";
  return "(" + std::to_string(shown) + " of " + std::to_string(mesh_size) + " ranks shown: ranks 0-" +
         std::to_string(kAutoRankHead - 1) + " and " + std::to_string(mesh_size - 1) +
         "; --ranks all prints every rank, --ranks 0-3,8 chooses)\n";
}

std::vector<int64_t> ParseRankList(const std::string& text, int64_t mesh_size, const std::string& flag) {
  std::vector<int64_t> ranks;
  if (text == "auto" && mesh_size > kAutoRankLimit) {
    for (int64_t r = 0; r < kAutoRankHead; ++r) ranks.push_back(r);
    ranks.push_back(mesh_size - 1);
    return ranks;
  }
  if (text == "all" || text == "auto") {
    for (int64_t r = 0; r < mesh_size; ++r) ranks.push_back(r);
    return ranks;
  }
  const std::string expected =
      " (expected auto, all, or ranks and ranges like 0-3,8 within 0.." + std::to_string(mesh_size - 1) + ")";
  if (text.empty()) throw InvalidInput(flag + ": empty list" + expected);
  auto number = [&](std::string_view part, std::string_view token) {
    int64_t value = -1;
    auto [end, ec] = std::from_chars(token.data(), token.data() + token.size(), value);
    if (token.empty() || ec != std::errc() || end != token.data() + token.size() || value < 0) {
      throw InvalidInput(flag + ": '" + std::string(part) + "' is not a rank or range" + expected);
    }
    if (value >= mesh_size) {
      throw InvalidInput(flag + ": rank " + std::to_string(value) + " is outside the mesh of " +
                         std::to_string(mesh_size) + " ranks" + expected);
    }
    return value;
  };
  for (const std::string& part : SplitOn(text, ',')) {
    const size_t dash = part.find('-');
    const int64_t first = number(part, std::string_view(part).substr(0, dash));
    const int64_t last =
        dash == std::string::npos ? first : number(part, std::string_view(part).substr(dash + 1));
    if (last < first || (!ranks.empty() && first <= ranks.back())) {
      throw InvalidInput(flag + ": '" + part + "' is not ascending after the ranks before it" + expected);
    }
    for (int64_t r = first; r <= last; ++r) ranks.push_back(r);
  }
  return ranks;
}

std::string FormatMeshDims(const engine::Mesh& mesh, const std::vector<int>& mesh_dims) {
  std::string s;
  for (size_t i = 0; i < mesh_dims.size(); ++i) {
    if (i) s += ",";
    int md = mesh_dims[i];
    s += mesh.has_dim_names() ? mesh.dim_names()[static_cast<size_t>(md)] : std::to_string(md);
  }
  return s;
}

std::string CoordHeader(const engine::Mesh& mesh) {
  if (!mesh.has_dim_names()) return "coord";
  return "coord (" + Join(mesh.dim_names(), ",") + ")";
}

std::string FormatTuple(const std::vector<int64_t>& values) { return "(" + JoinInts(values, ",") + ")"; }

std::string FormatCoord(const std::vector<int64_t>& coord) { return FormatTuple(coord); }

void TextTable::Print(std::ostream& out, const std::string& indent) const {
  std::vector<size_t> widths(header_.size(), 0);
  auto measure = [&](const std::vector<std::string>& row) {
    for (size_t c = 0; c < row.size() && c < widths.size(); ++c)
      widths[c] = std::max(widths[c], row[c].size());
  };
  measure(header_);
  for (const auto& r : rows_) measure(r);
  auto print = [&](const std::vector<std::string>& row) {
    std::string line = indent;
    for (size_t c = 0; c < row.size() && c < widths.size(); ++c) {
      line += row[c];
      if (c + 1 < row.size()) line += std::string(widths[c] - row[c].size() + 2, ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out << line << '\n';
  };
  print(header_);
  for (const auto& r : rows_) print(r);
}

}  // namespace shardscope::app
