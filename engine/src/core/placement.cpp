#include "shardscope/engine/core/placement.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <map>
#include <set>

#include "shardscope/engine/core/shard_order.hpp"
#include "shardscope/error.hpp"
#include "shardscope/names.hpp"

namespace shardscope::engine {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::string Quote(std::string_view what, std::string_view text) {
  return std::string(what) + ": '" + std::string(text) + "'";
}

bool ParseInt(std::string_view s, int64_t& out) {
  s = Trim(s);
  if (s.rfind("dim=", 0) == 0) s.remove_prefix(4);
  if (s.rfind("sf=", 0) == 0) s.remove_prefix(3);
  if (s.rfind("split_factor=", 0) == 0) s.remove_prefix(13);
  if (s.empty()) return false;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && ptr == s.data() + s.size();
}

}  // namespace

// "prod" is PyTorch's spelling, accepted when parsing.
constexpr Named<ReduceOp> kReduceOps[] = {
    {ReduceOp::kSum, "sum"}, {ReduceOp::kAvg, "avg"},         {ReduceOp::kMin, "min"},
    {ReduceOp::kMax, "max"}, {ReduceOp::kProduct, "product"}, {ReduceOp::kProduct, "prod"},
};

std::string_view ReduceOpName(ReduceOp op) { return NameIn(kReduceOps, op, "sum"); }

std::optional<ReduceOp> ParseReduceOp(std::string_view name) {
  name = Trim(name);
  if (name.size() >= 2 && (name.front() == '"' || name.front() == '\'') && name.back() == name.front()) {
    name = name.substr(1, name.size() - 2);
  }
  if (name.rfind("reduce_op=", 0) == 0) return ParseReduceOp(name.substr(10));
  return ParseIn(kReduceOps, name);
}

std::string Placement::ToString() const {
  switch (kind) {
    case PlacementKind::kReplicate:
      return "R";
    case PlacementKind::kShard:
      return "S(" + std::to_string(dim) + ")";
    case PlacementKind::kStridedShard:
      return "_S(" + std::to_string(dim) + ", " + std::to_string(split_factor) + ")";
    case PlacementKind::kPartial:
      return "P(" + std::string(ReduceOpName(op)) + ")";
  }
  return "?";
}

bool Placement::operator==(const Placement& o) const {
  if (kind != o.kind) return false;
  switch (kind) {
    case PlacementKind::kReplicate:
      return true;
    case PlacementKind::kShard:
      return dim == o.dim;
    case PlacementKind::kStridedShard:
      return dim == o.dim && split_factor == o.split_factor;
    case PlacementKind::kPartial:
      return op == o.op;
  }
  return false;
}

Placement ParsePlacement(std::string_view raw, std::string_view what) {
  std::string_view text = Trim(raw);
  if (text.empty())
    throw InvalidInput(std::string(what) + ": empty placement (expected S(d), _S(d, k), R or P(op))");
  size_t open = text.find('(');
  std::string_view head = Trim(text.substr(0, open));
  std::string_view args;
  if (open != std::string_view::npos) {
    if (text.back() != ')') throw InvalidInput(Quote(what, text) + " is missing its closing ')'");
    args = text.substr(open + 1, text.size() - open - 2);
  }
  auto need_args = [&](const char* form) {
    if (open == std::string_view::npos || Trim(args).empty()) {
      throw InvalidInput(Quote(what, text) + " needs arguments, e.g. " + form);
    }
  };
  if (head == "R" || head == "Replicate") {
    if (!Trim(args).empty()) throw InvalidInput(Quote(what, text) + ": Replicate takes no arguments");
    return Placement::Replicate();
  }
  if (head == "S" || head == "Shard") {
    need_args("S(0)");
    int64_t d = 0;
    if (!ParseInt(args, d) || d < -1024 || d > 1024) {
      throw InvalidInput(Quote(what, text) + ": the shard dim must be an integer");
    }
    return Placement::Shard(static_cast<int>(d));
  }
  if (head == "_S" || head == "_StridedShard" || head == "StridedShard") {
    need_args("_S(0, 2)");
    size_t comma = args.find(',');
    int64_t d = 0, sf = 0;
    if (comma == std::string_view::npos || !ParseInt(args.substr(0, comma), d) ||
        !ParseInt(args.substr(comma + 1), sf) || d < -1024 || d > 1024) {
      throw InvalidInput(Quote(what, text) + ": expected _S(dim, split_factor), e.g. _S(0, 2)");
    }
    if (sf < 1) throw InvalidInput(Quote(what, text) + ": split_factor must be >= 1");
    // PyTorch's split factor is a product of mesh extents, so at most the world size (2^20 here);
    // larger values are rejected before layout math allocates one entry per piece.
    if (sf > (int64_t{1} << 20)) throw InvalidInput(Quote(what, text) + ": split_factor must be <= 1048576");
    return Placement::StridedShard(static_cast<int>(d), sf);
  }
  if (head == "P" || head == "Partial") {
    if (open == std::string_view::npos || Trim(args).empty()) return Placement::Partial(ReduceOp::kSum);
    auto op = ParseReduceOp(args);
    if (!op) {
      throw InvalidInput(Quote(what, text) + ": unknown reduce op '" + std::string(Trim(args)) +
                         "' (expected sum, avg, min, max or product)");
    }
    return Placement::Partial(*op);
  }
  throw InvalidInput(Quote(what, text) + " is not a placement (expected S(d), _S(d, k), R or P(op))");
}

namespace {

// PyTorch's placement heads, longest first so "Shard(0)" is not read as "S" + "hard(0)" and the
// concatenated form splits where one placement ends ("RS(1)" is R then S(1)).
constexpr std::string_view kHeads[] = {
    "_StridedShard", "StridedShard", "Replicate", "Partial", "Shard", "_S", "R", "S", "P"};

struct PlacementToken {
  Placement placement;
  int position = -1;  ///< the "[k]" shard order suffix, -1 when absent
};

// One comma-free item: one placement or several concatenated ("S(0)[1]S(0)[0]R"), optionally
// quoted ('R', as in PyTorch's tuple of strings).
void ParseConcatenated(std::string_view item, std::string_view what, std::vector<PlacementToken>& out) {
  item = Trim(item);
  if (item.size() >= 2 && (item.front() == '\'' || item.front() == '"') && item.back() == item.front()) {
    item = Trim(item.substr(1, item.size() - 2));
  }
  if (item.empty()) out.push_back({ParsePlacement(item, what), -1});  // throws "empty placement"
  size_t pos = 0;
  while (pos < item.size()) {
    std::string_view rest = item.substr(pos);
    std::string_view head;
    for (std::string_view h : kHeads) {
      if (rest.substr(0, h.size()) == h) {
        head = h;
        break;
      }
    }
    if (head.empty()) ParsePlacement(rest, what);  // throws, naming the unknown token
    size_t end = pos + head.size();
    while (end < item.size() && item[end] == ' ') ++end;
    if (end < item.size() && item[end] == '(') {
      int depth = 0;
      for (; end < item.size(); ++end) {
        if (item[end] == '(') ++depth;
        if (item[end] == ')' && --depth == 0) break;
      }
      if (end == item.size()) ParsePlacement(rest, what);  // throws: missing ')'
      ++end;
    } else {
      end = pos + head.size();
    }
    PlacementToken token{ParsePlacement(item.substr(pos, end - pos), what), -1};
    while (end < item.size() && item[end] == ' ') ++end;
    if (end < item.size() && item[end] == '[') {
      size_t close = item.find(']', end);
      int64_t k = 0;
      if (close == std::string_view::npos || !ParseInt(item.substr(end + 1, close - end - 1), k) || k < 0 ||
          k > 1024) {
        throw InvalidInput(Quote(what, item) + ": a shard order position must be '[k]' with k >= 0");
      }
      if (!token.placement.IsShardLike()) {
        throw InvalidInput(Quote(what, item) + ": only a shard carries a shard order position ('" +
                           token.placement.ToString() + "[" + std::to_string(k) + "]')");
      }
      token.position = static_cast<int>(k);
      end = close + 1;
    }
    out.push_back(token);
    pos = end;
    while (pos < item.size() && item[pos] == ' ') ++pos;
  }
}

std::vector<PlacementToken> ParseTokens(std::string_view text, std::string_view what) {
  std::string_view body = Trim(text);
  // PyTorch's tuple repr "(Shard(dim=0), Replicate())" and the older bracket list "[S(0), R]".
  if (body.size() >= 2 &&
      ((body.front() == '(' && body.back() == ')') || (body.front() == '[' && body.back() == ']'))) {
    int depth = 0;
    bool wraps = true;
    for (size_t i = 0; i < body.size(); ++i) {
      if (body[i] == '(' || body[i] == '[') ++depth;
      if (body[i] == ')' || body[i] == ']') --depth;
      if (depth == 0 && i + 1 < body.size()) wraps = false;
    }
    if (wraps) body = body.substr(1, body.size() - 2);
  }
  std::vector<PlacementToken> out;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i <= body.size(); ++i) {
    char c = i < body.size() ? body[i] : ',';
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (depth < 0) throw InvalidInput(Quote(what, text) + " has an unmatched ')'");
    if (c == ',' && depth == 0) {
      ParseConcatenated(body.substr(start, i - start), what, out);
      start = i + 1;
    }
  }
  if (depth != 0) throw InvalidInput(Quote(what, text) + " has an unmatched '('");
  return out;
}

}  // namespace

PlacementsWithOrder ParsePlacementsWithOrder(std::string_view text, std::string_view what,
                                             OrderPositions positions) {
  std::vector<PlacementToken> tokens = ParseTokens(text, what);
  PlacementsWithOrder out;
  bool any_position = false;
  for (const auto& t : tokens) {
    out.placements.push_back(t.placement);
    any_position = any_position || t.position >= 0;
  }
  if (!any_position) return out;
  // PyTorch format_shard_order_str: "[k]" is mesh dim md's position in its tensor dim's order,
  // printed only for tensor dims sharded by more than one mesh dim; newer PyTorch prints a
  // _StridedShard without it.
  std::map<int, std::vector<std::pair<int, int>>> by_dim;  // tensor dim -> (position, mesh dim)
  for (size_t md = 0; md < tokens.size(); ++md) {
    if (tokens[md].placement.IsShardLike())
      by_dim[tokens[md].placement.dim].push_back({tokens[md].position, static_cast<int>(md)});
  }
  std::vector<std::vector<int>> lists;
  for (auto& [dim, entries] : by_dim) {
    if (dim < 0) throw InvalidInput(Quote(what, text) + ": shard order positions need non-negative dims");
    const auto bad = [&, dim = dim, n = entries.size()] {
      return InvalidInput(Quote(what, text) + ": the shard order positions of tensor dim " +
                          std::to_string(dim) + " must be [0].." + "[" + std::to_string(n - 1) +
                          "], one per mesh dim that shards it");
    };
    std::set<int> taken;
    for (const auto& e : entries) {
      if (e.first >= 0 && !taken.insert(e.first).second) throw bad();
    }
    // A _StridedShard without "[k]" takes the lowest free position (mesh dim order among several).
    int next_free = 0;
    for (auto& e : entries) {
      if (e.first >= 0 || entries.size() == 1) continue;
      if (!tokens[static_cast<size_t>(e.second)].placement.IsStridedShard()) throw bad();
      while (taken.count(next_free)) ++next_free;
      e.first = next_free;
      taken.insert(next_free);
    }
    std::sort(entries.begin(), entries.end());
    for (size_t k = 0; k < entries.size() && positions == OrderPositions::kExact; ++k) {
      if (entries.size() == 1 ? entries[k].first > 0 : entries[k].first != static_cast<int>(k)) throw bad();
    }
    if (static_cast<size_t>(dim) >= lists.size()) lists.resize(static_cast<size_t>(dim) + 1);
    for (const auto& e : entries) lists[static_cast<size_t>(dim)].push_back(e.second);
  }
  out.order = ListsToOrder(lists);
  return out;
}

Placements ParsePlacements(std::string_view text, std::string_view what) {
  PlacementsWithOrder parsed = ParsePlacementsWithOrder(text, what);
  if (parsed.order && !IsDefaultOrder(*parsed.order)) {
    throw InvalidInput(Quote(what, text) +
                       " spells a non-default shard order ([k] suffixes); give it where an "
                       "order is accepted (e.g. --from, a scenario's placements)");
  }
  return parsed.placements;
}

std::string FormatPlacements(const Placements& placements) {
  std::string s;
  for (size_t i = 0; i < placements.size(); ++i) s += (i ? "," : "") + placements[i].ToString();
  return s;
}

std::string ConcatPlacements(const Placements& placements) {
  std::string s;
  for (const auto& p : placements) s += p.ToString();
  return s;
}

void NormalizePlacements(Placements& placements, int tensor_ndim, std::string_view what) {
  for (auto& p : placements) {
    if (!p.IsShardLike()) continue;
    int d = p.dim;
    if (d < -tensor_ndim || d >= tensor_ndim) {
      throw InvalidInput(std::string(what) + ": '" + p.ToString() + "' shards dim " + std::to_string(d) +
                         " but the tensor has " + std::to_string(tensor_ndim) + " dims");
    }
    if (d < 0) p.dim = d + tensor_ndim;
  }
}

}  // namespace shardscope::engine
