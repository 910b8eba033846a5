#pragma once
// The small text formatters every layer uses: joined lists and fixed-point numbers. Lives in the
// trace library, the bottom layer (like error.hpp); header-only.

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

/// "0,1,2" (sep ","), "1, 2, 3" (sep ", ") for integers.
template <class Int, class = std::enable_if_t<std::is_integral_v<Int>>>
std::string JoinInts(const std::vector<Int>& items, std::string_view sep) {
  return JoinWith(items, sep, [](Int v) { return std::to_string(v); });
}

/// `x` with `digits` digits after the point: Fixed(1.5, 2) == "1.50".
inline std::string Fixed(double x, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*f", digits, x);
  return buf;
}

}  // namespace shardscope
