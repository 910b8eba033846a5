// The rank palette (issue 18 item 3): ranks next to each other in rank order, and ranks next to
// each other along any mesh dim, never share a colour. "Distinct" is a CIE76 colour difference
// (Euclidean distance in CIELAB, D65 white, from sRGB) of at least kMinDeltaE: about 7x the
// just-noticeable difference of 2.3, so neighbouring cells read as different at a glance.
#include <catch2/catch.hpp>

#include <array>
#include <cmath>
#include <cstdint>
#include <vector>

#include "rank_palette.hpp"

namespace {

using shardscope::app::gui::PaletteModulus;
using shardscope::app::gui::RankColor;
using shardscope::app::gui::Rgb;

constexpr double kMinDeltaE = 15.0;

std::array<double, 3> Lab(Rgb c) {
  auto lin = [](uint8_t v) {
    double u = v / 255.0;
    return u <= 0.04045 ? u / 12.92 : std::pow((u + 0.055) / 1.055, 2.4);
  };
  const double r = lin(c.r), g = lin(c.g), b = lin(c.b);
  const double x = (0.4124 * r + 0.3576 * g + 0.1805 * b) / 0.95047;
  const double y = 0.2126 * r + 0.7152 * g + 0.0722 * b;
  const double z = (0.0193 * r + 0.1192 * g + 0.9505 * b) / 1.08883;
  auto f = [](double t) { return t > 0.008856 ? std::cbrt(t) : 7.787 * t + 16.0 / 116.0; };
  return {116 * f(y) - 16, 500 * (f(x) - f(y)), 200 * (f(y) - f(z))};
}

double DeltaE(Rgb a, Rgb b) {
  const auto la = Lab(a), lb = Lab(b);
  return std::sqrt((la[0] - lb[0]) * (la[0] - lb[0]) + (la[1] - lb[1]) * (la[1] - lb[1]) +
                   (la[2] - lb[2]) * (la[2] - lb[2]));
}

// Every pair of ranks that are neighbours in rank order or along one mesh dim (row-major mesh).
void CheckNeighbours(const std::vector<int64_t>& shape) {
  int64_t world = 1;
  for (int64_t s : shape) world *= s;
  std::vector<int64_t> stride(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;) stride[d - 1] = stride[d] * shape[d];
  for (int64_t r = 0; r < world; ++r) {
    if (r + 1 < world) {
      INFO("world " << world << ": r" << r << " and r" << r + 1);
      REQUIRE(DeltaE(RankColor(r, world), RankColor(r + 1, world)) >= kMinDeltaE);
    }
    for (size_t d = 0; d < shape.size(); ++d) {
      const int64_t coord = (r / stride[d]) % shape[d];
      if (coord + 1 >= shape[d]) continue;
      INFO("world " << world << " mesh dim " << d << ": r" << r << " and r" << r + stride[d]);
      REQUIRE(DeltaE(RankColor(r, world), RankColor(r + stride[d], world)) >= kMinDeltaE);
    }
  }
}

}  // namespace

TEST_CASE("rank palette: neighbours in rank order and along mesh dims never look alike", "[gui][palette]") {
  SECTION("the meshes of the issue: 64x64 (4096) and 128x128 (16,384) ranks") {
    CheckNeighbours({64, 64});
    CheckNeighbours({128, 128});
    CheckNeighbours({16, 16, 16});
  }
  SECTION("every mesh of up to 3 dims with sizes 1..13") {
    for (int64_t a = 1; a <= 13; ++a) {
      for (int64_t b = 1; b <= 13; ++b) {
        CheckNeighbours({a, b});
        for (int64_t c = 1; c <= 13; c += 3) CheckNeighbours({a, b, c});
      }
    }
  }
  SECTION("meshes whose sizes are multiples of the first moduli (11, 13)") {
    CheckNeighbours({11, 22});
    CheckNeighbours({13, 11, 4});
    CheckNeighbours({143, 2});
  }
  SECTION("up to 16 ranks every rank has its own colour") {
    for (int64_t world = 1; world <= 16; ++world) {
      for (int64_t a = 0; a < world; ++a) {
        for (int64_t b = a + 1; b < world; ++b)
          CHECK(DeltaE(RankColor(a, world), RankColor(b, world)) >= kMinDeltaE);
      }
    }
  }
  SECTION("the modulus never divides the world (so it divides no mesh stride)") {
    for (int64_t world = 17; world < 5000; ++world) {
      if (world % (11 * 13 * 17) == 0) continue;  // the documented exception
      INFO("world " << world);
      CHECK(world % PaletteModulus(world) != 0);
    }
  }
}
