#pragma once
// Totals over trace numbers that never overflow: byte counts and durations summed over many events
// (each value is bounded by the reader, their number is not), shared by the trace tools and the GUI.

#include <cstdint>
#include <vector>

namespace shardscope::trace {

/// a + b, clamped to the int64 range instead of overflowing.
inline int64_t SaturatingAdd(int64_t a, int64_t b) {
  int64_t out = 0;
  if (__builtin_add_overflow(a, b, &out)) return b > 0 ? INT64_MAX : INT64_MIN;
  return out;
}

/// The sum of a collective's per-peer byte counts (saturating).
inline int64_t SumBytes(const std::vector<int64_t>& v) {
  int64_t s = 0;
  for (int64_t x : v) s = SaturatingAdd(s, x);
  return s;
}

}  // namespace shardscope::trace
