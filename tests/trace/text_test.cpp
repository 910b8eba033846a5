// The text formatters of shardscope/text.hpp and shardscope/printable.hpp against their definitions:
// printf's "%.*f" and std::to_string for numbers, the escapes Printable documents.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "shardscope/printable.hpp"
#include "shardscope/text.hpp"

using shardscope::Fixed;

namespace {

std::string Printf(double x, int digits) {
  char buf[64];  // Fixed's documented 63-character cut
  std::snprintf(buf, sizeof(buf), "%.*f", digits, x);
  return buf;
}

}  // namespace

TEST_CASE("Fixed writes what printf's %.*f does", "[trace][text]") {
  CHECK(Fixed(1.5, 2) == "1.50");
  CHECK(Fixed(0.125, 2) == "0.12");  // exact binary tie: round half to even, as printf
  CHECK(Fixed(-0.0, 2) == "-0.00");
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (double x : {0.0, 0.005, 0.015, 2.675, 1e-300, 1e15, 1e22, 1e300, -1e300, inf, -inf, nan, -nan,
                   std::numeric_limits<double>::max(), std::numeric_limits<double>::denorm_min()}) {
    for (int digits : {0, 1, 2, 3}) CHECK(Fixed(x, digits) == Printf(x, digits));
  }
  std::mt19937_64 rng(33);
  for (int i = 0; i < 200000; ++i) {
    double x = 0;
    const uint64_t bits = rng();
    if (i % 2 == 0) {
      std::memcpy(&x, &bits, sizeof(x));  // any double, NaNs and infinities included
    } else {
      x = static_cast<double>(bits % 100000000) / 1000.0;  // microsecond-like figures
    }
    const int digits = static_cast<int>(i % 4);
    REQUIRE(Fixed(x, digits) == Printf(x, digits));
  }
}

TEST_CASE("JoinInts writes std::to_string of each", "[trace][text]") {
  const std::vector<int64_t> v = {0, -1, 42, std::numeric_limits<int64_t>::min(),
                                  std::numeric_limits<int64_t>::max()};
  CHECK(shardscope::JoinInts(v, ", ") == "0, -1, 42, -9223372036854775808, 9223372036854775807");
  CHECK(shardscope::JoinInts(std::vector<int>{}, ",").empty());
}

TEST_CASE("Printable escapes C0, DEL and UTF-8 C1 controls only", "[trace][text]") {
  using shardscope::Printable;
  CHECK(Printable("plain S(0) text") == "plain S(0) text");
  CHECK(Printable("a\x01 b\tc\nd\x7f") == "a\\x01 b\\x09c\\x0ad\\x7f");
  CHECK(Printable("line\n", /*keep_newlines=*/true) == "line\n");
  CHECK(Printable("\xc2\x85 \xc2\x9f") == "\\u0085 \\u009f");              // C1 controls
  CHECK(Printable("\xc2\xa0 \xc3\xa9 \xc2") == "\xc2\xa0 \xc3\xa9 \xc2");  // other UTF-8, a lone lead byte
  std::string appended = "x";
  shardscope::AppendPrintable(appended, "\x1b[0m");
  CHECK(appended == "x\\x1b[0m");
}
