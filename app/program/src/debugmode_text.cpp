// Text helpers of the DebugMode reader: splitting at top level, tensor arguments ("dt$0: f32[8,
// 8]| S(0)") and PyTorch's plan notation. Every form is from the reference's section 1
// (torch.utils._debug_mode _utils.py / _calls.py as of 2026).
#include "debugmode_internal.hpp"

#include <cctype>
#include <charconv>

#include "shardscope/engine/core/spec.hpp"
#include "shardscope/error.hpp"

namespace shardscope::program {
namespace detail {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::string_view Unquote(std::string_view s) {
  s = Trim(s);
  if (s.size() >= 2 && (s.front() == '\'' || s.front() == '"') && s.back() == s.front()) {
    return Trim(s.substr(1, s.size() - 2));
  }
  return s;
}

bool ParseInt64(std::string_view s, int64_t& out) {
  s = Unquote(s);
  if (s.empty()) return false;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && ptr == s.data() + s.size();
}

namespace {

// Walks `text` keeping track of quotes and bracket depth: calls at(i, depth) at every character
// outside a quoted string, with the depth before that character, and returns the first i where
// it answers true (npos if none).
template <class At>
size_t ScanTopLevel(std::string_view text, At&& at) {
  int depth = 0;
  char quote = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (quote != 0) {
      if (c == quote) quote = 0;
      continue;
    }
    if (at(i, depth)) return i;
    if (c == '\'' || c == '"') {
      quote = c;
    } else if (c == '(' || c == '[' || c == '{') {
      ++depth;
    } else if ((c == ')' || c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return std::string_view::npos;
}

}  // namespace

std::vector<std::string_view> SplitTopLevel(std::string_view text, char sep) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  ScanTopLevel(text, [&](size_t i, int depth) {
    if (depth == 0 && text[i] == sep) {
      parts.push_back(Trim(text.substr(start, i - start)));
      start = i + 1;
    }
    return false;
  });
  std::string_view last = Trim(text.substr(start));
  if (!last.empty() || !parts.empty()) parts.push_back(last);
  return parts;
}

size_t FindTopLevel(std::string_view text, std::string_view needle) {
  return ScanTopLevel(
      text, [&](size_t i, int depth) { return depth == 0 && text.substr(i, needle.size()) == needle; });
}

std::optional<Call> SplitCall(std::string_view text) {
  text = Trim(text);
  if (text.empty() || text.back() != ')') return std::nullopt;
  // The argument list is the parenthesis group that closes at the end; the name before it may
  // itself hold spaces and quotes ("<method 'sum' of 'torch._C.TensorBase' objects>").
  int depth = 0;
  for (size_t i = text.size(); i-- > 0;) {
    char c = text[i];
    if (c == ')' || c == ']' || c == '}') ++depth;
    if (c == '(' || c == '[' || c == '{') {
      if (--depth == 0) {
        if (c != '(' || i == 0) return std::nullopt;
        return Call{Trim(text.substr(0, i)), text.substr(i + 1, text.size() - i - 2)};
      }
    }
  }
  return std::nullopt;
}

std::string ConcatText(const engine::Placements& placements, const std::optional<engine::ShardOrder>& order) {
  // With a _StridedShard the order lives in the split factors; PyTorch prints no "[k]" then.
  for (const auto& p : placements) {
    if (p.IsStridedShard()) return engine::ConcatPlacements(placements);
  }
  return engine::FormatShardOrderStr(placements, order ? *order : engine::DefaultShardOrder(placements));
}

}  // namespace detail

using detail::Trim;

std::optional<DumpTensor> ParseDumpTensor(std::string_view text) {
  text = detail::Unquote(text);
  DumpTensor t;
  size_t pos = 0;
  for (std::string_view prefix : {"dt", "ft", "t"}) {
    if (text.substr(0, prefix.size()) == prefix) {
      t.prefix = std::string(prefix);
      pos = prefix.size();
      break;
    }
  }
  if (t.prefix.empty()) return std::nullopt;
  if (pos < text.size() && text[pos] == '$') {
    size_t end = pos + 1;
    while (end < text.size() && std::isdigit(static_cast<unsigned char>(text[end]))) ++end;
    t.id = std::string(text.substr(pos, end - pos));
    pos = end;
  }
  if (pos >= text.size() || text[pos] != ':') return std::nullopt;
  ++pos;
  while (pos < text.size() && text[pos] == ' ') ++pos;
  size_t open = text.find('[', pos);
  if (open == std::string_view::npos) return std::nullopt;
  t.dtype = std::string(text.substr(pos, open - pos));
  if (t.dtype.empty() || t.dtype.size() > 16) return std::nullopt;
  for (char c : t.dtype) {
    if (!std::isalnum(static_cast<unsigned char>(c))) return std::nullopt;
  }
  size_t close = text.find(']', open);
  if (close == std::string_view::npos) return std::nullopt;
  std::string_view dims = Trim(text.substr(open + 1, close - open - 1));
  if (!dims.empty()) {
    for (std::string_view d : detail::SplitTopLevel(dims, ',')) {
      int64_t v = 0;
      if (!detail::ParseInt64(d, v) || v < 0 || v > engine::kMaxExtent) return std::nullopt;
      if (t.shape.size() >= 64) return std::nullopt;
      t.shape.push_back(v);
    }
  }
  std::string_view rest = Trim(text.substr(close + 1));
  if (!rest.empty() && rest.front() == '{') {  // attribute suffix {a1=x, a2=y}
    size_t end = detail::FindTopLevel(rest.substr(1), "}");
    rest = end == std::string_view::npos ? std::string_view{} : Trim(rest.substr(end + 2));
  }
  if (rest.empty()) return t;
  std::string_view placements;
  if (rest.front() == '|') {
    placements = Trim(rest.substr(1));
  } else if (rest.substr(0, 3) == "DM(") {
    // Older form: "DM(8)[S(0)]", the mesh shape then a bracket list of placements.
    size_t mesh_close = rest.find(')');
    if (mesh_close == std::string_view::npos) return std::nullopt;
    for (std::string_view d : detail::SplitTopLevel(rest.substr(3, mesh_close - 3), ',')) {
      int64_t v = 0;
      if (!detail::ParseInt64(d, v) || v < 1 || v > (int64_t{1} << 20) || t.printed_mesh.size() >= 16)
        return std::nullopt;
      t.printed_mesh.push_back(v);
    }
    placements = Trim(rest.substr(mesh_close + 1));
  } else {
    return std::nullopt;
  }
  t.has_placements = true;
  t.placements_text = std::string(placements);
  engine::PlacementsWithOrder parsed = engine::ParsePlacementsWithOrder(placements, "placements");
  t.placements = std::move(parsed.placements);
  t.order = std::move(parsed.order);
  return t;
}

NotationPlan ParseNotation(std::string_view notation, std::string_view what) {
  NotationPlan plan;
  std::string_view text = Trim(notation);
  size_t start = 0;
  int depth = 0;
  for (size_t i = 0; i <= text.size(); ++i) {
    bool end = i == text.size();
    if (!end && text[i] == '(') ++depth;
    if (!end && text[i] == ')') --depth;
    bool flat = !end && depth == 0 && text.substr(i, 3) == "-->";
    bool arrow = !end && depth == 0 && !flat && text.substr(i, 2) == "->";
    if (!end && !flat && !arrow) continue;
    std::string_view state = Trim(text.substr(start, i - start));
    if (state.empty()) {
      throw InvalidInput(std::string(what) + ": '" + std::string(text) + "' has an empty state");
    }
    // PyTorch's plan string: positions may count mesh dims a _StridedShard left behind.
    plan.states.push_back(engine::ParsePlacementsWithOrder(state, what, engine::OrderPositions::kRelative));
    if (end) break;
    plan.flattened.push_back(flat);
    start = i + (flat ? 3 : 2);
    i = start - 1;
  }
  for (const auto& s : plan.states) {
    if (s.placements.size() != plan.states.front().placements.size()) {
      throw InvalidInput(std::string(what) + ": '" + std::string(text) +
                         "' has states with different numbers of placements");
    }
  }
  return plan;
}

}  // namespace shardscope::program
