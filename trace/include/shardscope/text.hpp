#pragma once
// The small text formatters every layer uses: joined lists and fixed-point numbers. Lives in the
// trace library, the bottom layer (like error.hpp); header-only.

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace shardscope {

/// Items joined by `sep`, each written by `fn(item)` (which returns a string).
template <class Range, class Fn>
std::string JoinWith(const Range& items, std::string_view sep, Fn&& fn) {
  std::string out;
  bool first = true;
  for (const auto& item : items) {
    if (!first) out += sep;
    out += fn(item);
    first = false;
  }
  return out;
}

/// "a, b, c" (sep ", "), "S(0),R" (sep ",").
inline std::string Join(const std::vector<std::string>& items, std::string_view sep) {
  return JoinWith(items, sep, [](const std::string& s) -> const std::string& { return s; });
}

/// Appends `v` in decimal, as std::to_string writes it.
template <class Int, class = std::enable_if_t<std::is_integral_v<Int>>>
void AppendInt(std::string& out, Int v) {
  char buf[24];
  const auto end = std::to_chars(buf, buf + sizeof(buf), v).ptr;
  out.append(buf, end);
}

/// Appends JoinInts(items, sep) (below) without a temporary string.
template <class Int, class = std::enable_if_t<std::is_integral_v<Int>>>
void AppendJoinedInts(std::string& out, const std::vector<Int>& items, std::string_view sep) {
  for (size_t i = 0; i < items.size(); ++i) {
    if (i != 0) out += sep;
    AppendInt(out, items[i]);
  }
}

/// "0,1,2" (sep ","), "1, 2, 3" (sep ", ") for integers.
template <class Int, class = std::enable_if_t<std::is_integral_v<Int>>>
std::string JoinInts(const std::vector<Int>& items, std::string_view sep) {
  std::string out;
  AppendJoinedInts(out, items, sep);
  return out;
}

/// Appends Fixed(x, digits) (below) without a temporary string.
inline void AppendFixed(std::string& out, double x, int digits) {
  char buf[64];  // Fixed has always cut its text to 63 characters (e.g. 1e300): kept
  if (std::isfinite(x) && digits >= 0) {
    // to_chars with a precision is specified to write what printf does in the "C" locale.
    char full[400];  // DBL_MAX has 309 digits before the point
    const auto [end, ec] = std::to_chars(full, full + sizeof(full), x, std::chars_format::fixed, digits);
    if (ec == std::errc()) {
      out.append(full, std::min<size_t>(static_cast<size_t>(end - full), sizeof(buf) - 1));
      return;
    }
  }
  std::snprintf(buf, sizeof(buf), "%.*f", digits, x);  // inf and nan as printf spells them
  out += buf;
}

/// `x` with `digits` digits after the point: Fixed(1.5, 2) == "1.50".
inline std::string Fixed(double x, int digits) {
  std::string out;
  AppendFixed(out, x, digits);
  return out;
}

}  // namespace shardscope
