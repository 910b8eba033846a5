#include "shardscope/engine/core/shard_order.hpp"

#include <algorithm>
#include <charconv>

#include "shardscope/error.hpp"

namespace shardscope::engine {
namespace {

bool ParseNonNegative(std::string_view s, int& out) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  if (s.empty()) return false;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && ptr == s.data() + s.size() && out >= 0 && out < 4096;
}

}  // namespace

ShardOrder DefaultShardOrder(const Placements& placements) {
  // Grouped by sorting (dim, mesh dim) pairs, not by indexing a list with the dim: callers may pass
  // placements not yet checked against a tensor (an imported dump's S(2147483647) or S(-1)), and
  // memory must stay O(placements) whatever the dims say.
  std::vector<std::pair<int, int>> shards;  // (tensor dim, mesh dim)
  for (size_t md = 0; md < placements.size(); ++md) {
    if (placements[md].IsShardLike()) shards.emplace_back(placements[md].dim, static_cast<int>(md));
  }
  std::stable_sort(shards.begin(), shards.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  ShardOrder order;
  for (const auto& [dim, md] : shards) {
    if (order.empty() || order.back().tensor_dim != dim) order.push_back({dim, {}});
    order.back().mesh_dims.push_back(md);
  }
  return order;
}

bool IsDefaultOrder(const ShardOrder& order) {
  for (const auto& e : order) {
    for (size_t i = 1; i < e.mesh_dims.size(); ++i) {
      if (e.mesh_dims[i] <= e.mesh_dims[i - 1]) return false;
    }
  }
  return true;
}

ShardOrder ParseShardOrder(std::string_view text, std::string_view what) {
  std::vector<std::vector<int>> lists;
  auto fail = [&](const std::string& why) {
    return InvalidInput(std::string(what) + ": '" + std::string(text) + "' " + why +
                        " (expected tensor_dim:mesh_dim,mesh_dim;... e.g. 0:1,0;1:2)");
  };
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(';', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view entry = text.substr(start, end - start);
    start = end + 1;
    if (entry.find_first_not_of(' ') == std::string_view::npos) {
      if (end == text.size()) break;
      continue;
    }
    size_t colon = entry.find(':');
    int td = 0;
    if (colon == std::string_view::npos || !ParseNonNegative(entry.substr(0, colon), td)) {
      throw fail("entry '" + std::string(entry) + "' has no tensor dim before ':'");
    }
    if (static_cast<size_t>(td) >= lists.size()) lists.resize(static_cast<size_t>(td) + 1);
    if (!lists[static_cast<size_t>(td)].empty())
      throw fail("lists tensor dim " + std::to_string(td) + " twice");
    std::string_view dims = entry.substr(colon + 1);
    size_t ds = 0;
    while (ds <= dims.size()) {
      size_t de = dims.find(',', ds);
      if (de == std::string_view::npos) de = dims.size();
      int md = 0;
      if (!ParseNonNegative(dims.substr(ds, de - ds), md)) {
        throw fail("has a bad mesh dim '" + std::string(dims.substr(ds, de - ds)) + "'");
      }
      lists[static_cast<size_t>(td)].push_back(md);
      ds = de + 1;
    }
    if (end == text.size()) break;
  }
  return ListsToOrder(lists);
}

std::string FormatShardOrder(const ShardOrder& order) {
  std::string s;
  for (size_t i = 0; i < order.size(); ++i) {
    s += (i ? ";" : "") + std::to_string(order[i].tensor_dim) + ":";
    for (size_t k = 0; k < order[i].mesh_dims.size(); ++k) {
      s += (k ? "," : "") + std::to_string(order[i].mesh_dims[k]);
    }
  }
  return s;
}

void ValidateShardOrder(const ShardOrder& order, const Placements& placements, std::string_view what) {
  std::vector<int> seen(placements.size(), 0);
  for (const auto& e : order) {
    for (int md : e.mesh_dims) {
      if (md < 0 || static_cast<size_t>(md) >= placements.size()) {
        throw InvalidInput(std::string(what) + ": mesh dim " + std::to_string(md) + " is out of range for " +
                           std::to_string(placements.size()) + " placements");
      }
      const Placement& p = placements[static_cast<size_t>(md)];
      if (!p.IsShardLike() || p.dim != e.tensor_dim) {
        throw InvalidInput(std::string(what) + ": order puts mesh dim " + std::to_string(md) +
                           " on tensor dim " + std::to_string(e.tensor_dim) + " but its placement is " +
                           p.ToString());
      }
      if (seen[static_cast<size_t>(md)]++) {
        throw InvalidInput(std::string(what) + ": mesh dim " + std::to_string(md) + " listed twice");
      }
    }
  }
  for (size_t md = 0; md < placements.size(); ++md) {
    if (placements[md].IsShardLike() && !seen[md]) {
      throw InvalidInput(std::string(what) + ": mesh dim " + std::to_string(md) + " is " +
                         placements[md].ToString() + " but the order does not list it");
    }
  }
}

std::string FormatShardOrderStr(const Placements& placements, const ShardOrder& order) {
  std::string s;
  for (size_t md = 0; md < placements.size(); ++md) {
    const Placement& p = placements[md];
    s += p.ToString();
    if (!p.IsShardLike()) continue;
    for (const auto& e : order) {
      if (e.tensor_dim != p.dim || e.mesh_dims.size() <= 1) continue;
      auto it = std::find(e.mesh_dims.begin(), e.mesh_dims.end(), static_cast<int>(md));
      if (it != e.mesh_dims.end()) s += "[" + std::to_string(it - e.mesh_dims.begin()) + "]";
    }
  }
  return s;
}

namespace {

// An error in PyTorch's shard order notation, at a column of `text`.
Error NotationError(std::string_view text, std::string_view what, size_t column, const std::string& why) {
  return InvalidInput(std::string(what) + ": shard order '" + std::string(text) + "' " + why + " at column " +
                      std::to_string(column + 1) + " (expected PyTorch's notation, e.g. S(0)[1]S(0)[0]R)");
}

// The notation's tokens: a placement per mesh dim and its [k] position, if written.
struct ShardOrderTokens {
  Placements placements;
  std::vector<std::optional<int>> positions;
};

// Tokens: R, P, P(op), S(d), _S(d, sf), each optionally followed by [k].
ShardOrderTokens TokenizeShardOrderStr(std::string_view text, std::string_view what) {
  ShardOrderTokens tokens;
  size_t i = 0;
  while (i < text.size()) {
    const size_t start = i;
    const char c = text[i];
    if (c == ' ' || c == ',') {
      ++i;
      continue;
    }
    if (c == 'R') {
      ++i;
    } else if (c == 'S' || c == 'P' || c == '_') {
      const size_t open = text.find('(', i);
      const size_t close = text.find(')', i);
      const bool has_args = open != std::string_view::npos && close != std::string_view::npos &&
                            open < close && open == i + (c == '_' ? 2 : 1);
      if (has_args) {
        i = close + 1;
      } else if (c == 'P') {
        ++i;
      } else {
        throw NotationError(text, what, i, "has an unterminated placement");
      }
    } else {
      throw NotationError(text, what, i, "has an unexpected '" + std::string(1, c) + "'");
    }
    tokens.placements.push_back(ParsePlacement(text.substr(start, i - start), what));
    std::optional<int> pos;
    if (i < text.size() && text[i] == '[') {
      const size_t close = text.find(']', i);
      int k = 0;
      if (close == std::string_view::npos || !ParseNonNegative(text.substr(i + 1, close - i - 1), k)) {
        throw NotationError(text, what, i, "has a bad position");
      }
      pos = k;
      i = close + 1;
    }
    tokens.positions.push_back(pos);
  }
  return tokens;
}

// The mesh dims sharding each tensor dim, in the order the positions give, checked against
// `placements`.
std::vector<std::vector<int>> OrderListsOf(std::string_view text, std::string_view what,
                                           const Placements& placements, const Placements& parsed,
                                           const std::vector<std::optional<int>>& positions) {
  std::vector<std::vector<int>> lists;
  for (size_t md = 0; md < placements.size(); ++md) {
    if (!(parsed[md] == placements[md])) {
      throw NotationError(text, what, 0,
                          "names " + parsed[md].ToString() + " on mesh dim " + std::to_string(md) +
                              " where the placements have " + placements[md].ToString());
    }
    if (!placements[md].IsShardLike()) continue;
    if (placements[md].dim < 0)
      throw NotationError(text, what, 0, "needs non-negative shard dims (normalize them first)");
    const auto td = static_cast<size_t>(placements[md].dim);
    if (td >= lists.size()) lists.resize(td + 1);
    lists[td].push_back(static_cast<int>(md));
  }
  for (auto& list : lists) {
    if (list.size() <= 1) continue;
    std::vector<int> ordered(list.size(), -1);
    for (int md : list) {
      const auto& pos = positions[static_cast<size_t>(md)];
      if (!pos || *pos >= static_cast<int>(list.size()) || ordered[static_cast<size_t>(*pos)] != -1) {
        throw NotationError(text, what, 0,
                            "gives mesh dim " + std::to_string(md) + " no valid position among the " +
                                std::to_string(list.size()) + " mesh dims sharding tensor dim " +
                                std::to_string(placements[static_cast<size_t>(md)].dim));
      }
      ordered[static_cast<size_t>(*pos)] = md;
    }
    list = std::move(ordered);
  }
  return lists;
}

}  // namespace

std::optional<ShardOrder> ParseShardOrderStr(std::string_view text, const Placements& placements,
                                             std::string_view what) {
  if (text.find_first_not_of(' ') == std::string_view::npos) return std::nullopt;
  // Traces written before the notation stored "tensor_dim:mesh_dim,...": still readable.
  if (text.find(':') != std::string_view::npos) {
    ShardOrder legacy = ParseShardOrder(text, what);
    ValidateShardOrder(legacy, placements, what);
    return legacy;
  }
  const ShardOrderTokens tokens = TokenizeShardOrderStr(text, what);
  if (tokens.placements.size() != placements.size()) {
    throw NotationError(text, what, text.size() - 1,
                        "has " + std::to_string(tokens.placements.size()) + " placements but " +
                            std::to_string(placements.size()) + " were expected");
  }
  return ListsToOrder(OrderListsOf(text, what, placements, tokens.placements, tokens.positions));
}

std::vector<std::vector<int>> OrderToLists(const ShardOrder& order, int tensor_ndim) {
  std::vector<std::vector<int>> lists(static_cast<size_t>(std::max(tensor_ndim, 0)));
  for (const auto& e : order) {
    if (static_cast<size_t>(e.tensor_dim) >= lists.size())
      lists.resize(static_cast<size_t>(e.tensor_dim) + 1);
    lists[static_cast<size_t>(e.tensor_dim)] = e.mesh_dims;
  }
  return lists;
}

ShardOrder ListsToOrder(const std::vector<std::vector<int>>& lists) {
  ShardOrder order;
  for (size_t td = 0; td < lists.size(); ++td) {
    if (!lists[td].empty()) order.push_back({static_cast<int>(td), lists[td]});
  }
  return order;
}

Placements ShardOrderToStridedPlacements(const Placements& placements, const ShardOrder& order,
                                         const Mesh& mesh) {
  Placements out = placements;
  for (const auto& e : order) {
    for (size_t idx = 0; idx < e.mesh_dims.size(); ++idx) {
      int md = e.mesh_dims[idx];
      int64_t sf = 1;
      for (size_t j = 0; j < idx; ++j) {
        if (e.mesh_dims[j] > md) sf *= mesh.size(e.mesh_dims[j]);
      }
      out[static_cast<size_t>(md)] =
          sf == 1 ? Placement::Shard(e.tensor_dim) : Placement::StridedShard(e.tensor_dim, sf);
    }
  }
  return out;
}

std::optional<std::pair<Placements, ShardOrder>> StridedPlacementsToShardOrder(const Placements& placements,
                                                                               const Mesh& mesh) {
  // Walk mesh dims right to left; every dim already placed is a higher mesh dim, so the prefix
  // product at a position equals the split factor it would have been given (SPEC).
  std::vector<std::vector<int>> lists;
  Placements plain = placements;
  for (int md = static_cast<int>(placements.size()) - 1; md >= 0; --md) {
    const Placement& p = placements[static_cast<size_t>(md)];
    if (!p.IsShardLike()) continue;
    if (static_cast<size_t>(p.dim) >= lists.size()) lists.resize(static_cast<size_t>(p.dim) + 1);
    auto& list = lists[static_cast<size_t>(p.dim)];
    int64_t sf = p.IsStridedShard() ? p.split_factor : 1;
    int64_t prefix = 1;
    bool placed = false;
    for (size_t k = 0; k <= list.size(); ++k) {
      if (prefix == sf) {
        list.insert(list.begin() + static_cast<std::ptrdiff_t>(k), md);
        placed = true;
        break;
      }
      if (k < list.size()) prefix *= mesh.size(list[k]);
    }
    if (!placed) return std::nullopt;
    plain[static_cast<size_t>(md)] = Placement::Shard(p.dim);
  }
  return std::make_pair(plain, ListsToOrder(lists));
}

}  // namespace shardscope::engine
