#include "rank_palette.hpp"

#include <array>
#include <cmath>

namespace shardscope::app::gui {
namespace {

// Tableau 10 followed by six of its light variants: distinguishable side by side and on the dark
// canvas at 8-16 ranks.
constexpr std::array<Rgb, 16> kTable = {{
    {31, 119, 180},
    {255, 127, 14},
    {44, 160, 44},
    {214, 39, 40},
    {148, 103, 189},
    {140, 86, 75},
    {227, 119, 194},
    {127, 127, 127},
    {188, 189, 34},
    {23, 190, 207},
    {174, 199, 232},
    {255, 187, 120},
    {152, 223, 138},
    {255, 152, 150},
    {197, 176, 213},
    {196, 156, 148},
}};

Rgb HsvToRgb(double h, double s, double v) {
  double c = v * s;
  double hp = std::fmod(h, 1.0) * 6.0;
  double x = c * (1.0 - std::fabs(std::fmod(hp, 2.0) - 1.0));
  double r = 0, g = 0, b = 0;
  if (hp < 1) {
    r = c, g = x;
  } else if (hp < 2) {
    r = x, g = c;
  } else if (hp < 3) {
    g = c, b = x;
  } else if (hp < 4) {
    g = x, b = c;
  } else if (hp < 5) {
    r = x, b = c;
  } else {
    r = c, b = x;
  }
  double m = v - c;
  auto to8 = [m](double f) { return static_cast<uint8_t>(std::lround((f + m) * 255.0)); };
  return {to8(r), to8(g), to8(b)};
}

}  // namespace

Rgb RankColor(int64_t rank, int64_t world) {
  if (world < 1) world = 1;
  int64_t r = ((rank % world) + world) % world;
  if (world <= static_cast<int64_t>(kTable.size())) return kTable[static_cast<size_t>(r)];
  // Beyond 16 ranks no table stays distinguishable; a hue ramp keeps neighbours apart by
  // 1/world of a turn and labels carry the identity.
  return HsvToRgb(static_cast<double>(r) / static_cast<double>(world) * 0.85, 0.62, 0.88);
}

uint32_t PackAbgr(Rgb color, uint8_t alpha) {
  return (static_cast<uint32_t>(alpha) << 24) | (static_cast<uint32_t>(color.b) << 16) |
         (static_cast<uint32_t>(color.g) << 8) | static_cast<uint32_t>(color.r);
}

}  // namespace shardscope::app::gui
