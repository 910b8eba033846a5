#pragma once
// Which index labels an axis of the layout canvas can carry without overlapping (GL-free).

#include <cstdint>
#include <functional>
#include <vector>

namespace shardscope::app::gui {

/// One label of an axis: the element index it names and the pixels [lo, hi) it covers along the axis.
struct AxisLabel {
  int64_t value = 0;
  float lo = 0, hi = 0;
};

/// Labels for the element indices `breaks` (ascending) of an axis where index i lies at
/// origin + i * scale. A label is `extent(value)` pixels long along the axis, centred on its index.
/// The last break is always labelled; the others, from the first on, when they keep at least `gap`
/// pixels from every label placed and from the last one. Never two labels overlap.
std::vector<AxisLabel> PlaceAxisLabels(const std::vector<int64_t>& breaks, float origin, float scale,
                                       const std::function<float(int64_t)>& extent, float gap);

}  // namespace shardscope::app::gui
