#pragma once
// The one rank colour palette of the GUI (and of its screenshot tests): the same rank has the same
// colour in every panel. Distinct colours up to 16 ranks; beyond, a cycle in which ranks next to each
// other in rank order or along any mesh dim never share a colour.

#include <cstdint>

namespace shardscope::app::gui {

/// An 8-bit sRGB colour, alpha always opaque.
struct Rgb {
  uint8_t r = 0, g = 0, b = 0;
  bool operator==(const Rgb&) const = default;
};

/// Number of distinct colours RankColor cycles through in a world of `world` ranks: world itself up
/// to 16, else the first of 11, 13, 17 that does not divide world (so no mesh stride is a multiple).
int64_t PaletteModulus(int64_t world);

/// Colour of `rank` in a world of `world` ranks: a fixed table entry per rank when world <= 16,
/// else entry rank mod PaletteModulus(world). Pure and deterministic; out-of-range ranks wrap.
Rgb RankColor(int64_t rank, int64_t world);

/// Packs a colour as ImGui's ImU32 (ABGR), with the given alpha.
uint32_t PackAbgr(Rgb color, uint8_t alpha = 255);

/// Background of the error panel; deliberately unlike any rank colour so tests can find it.
inline constexpr Rgb kErrorPanelColor{110, 18, 36};
/// Marker of a differing row or step in the diff view (a stripe beside the textual marker); unlike
/// any rank colour and the error panel so tests can find it.
inline constexpr Rgb kDiffColor{240, 58, 136};
/// Background tint of a differing row or step in the diff view (the text stays readable on it).
inline constexpr Rgb kDiffTintColor{78, 30, 52};
/// Background of layout canvases outside the tensor and of cells no rank holds.
inline constexpr Rgb kCanvasColor{28, 30, 36};

}  // namespace shardscope::app::gui
