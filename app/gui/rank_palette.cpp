#include "rank_palette.hpp"

#include <algorithm>
#include <array>

namespace shardscope::app::gui {
namespace {

// Tableau 10 followed by six of its light variants and a yellow: distinguishable side by side and
// on the dark canvas (every pair at least 16 CIE76 Delta E apart, tested).
constexpr std::array<Rgb, 17> kTable = {{
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
    {255, 230, 60},
}};

// Moduli of the cyclic palette beyond 16 ranks, each a prime no larger than kTable.
constexpr std::array<int64_t, 3> kModuli = {11, 13, 17};

}  // namespace

int64_t PaletteModulus(int64_t world) {
  if (world <= 16) return std::max<int64_t>(world, 1);
  for (int64_t p : kModuli) {
    if (world % p != 0) return p;
  }
  return kModuli.back();  // world a multiple of 11 * 13 * 17: strides of 17 repeat a colour
}

Rgb RankColor(int64_t rank, int64_t world) {
  if (world < 1) world = 1;
  const int64_t r = ((rank % world) + world) % world;
  // Beyond 16 ranks no set of distinct colours stays distinguishable, so colours cycle with a
  // prime period p that does not divide world. Every mesh stride divides world, hence is no
  // multiple of p: ranks next in rank order or next along any mesh dim never share a colour.
  // Labels and tooltips carry the identity.
  return kTable[static_cast<size_t>(r % PaletteModulus(world))];
}

uint32_t PackAbgr(Rgb color, uint8_t alpha) {
  return (static_cast<uint32_t>(alpha) << 24) | (static_cast<uint32_t>(color.b) << 16) |
         (static_cast<uint32_t>(color.g) << 8) | static_cast<uint32_t>(color.r);
}

}  // namespace shardscope::app::gui
