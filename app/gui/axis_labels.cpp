#include "axis_labels.hpp"

namespace shardscope::app::gui {

std::vector<AxisLabel> PlaceAxisLabels(const std::vector<int64_t>& breaks, float origin, float scale,
                                       const std::function<float(int64_t)>& extent, float gap) {
  std::vector<AxisLabel> out;
  if (breaks.empty()) return out;
  auto label = [&](int64_t v) {
    const float at = origin + static_cast<float>(v) * scale, e = extent(v);
    return AxisLabel{v, at - e / 2, at + e / 2};
  };
  const AxisLabel last = label(breaks.back());
  for (size_t i = 0; i + 1 < breaks.size(); ++i) {
    const AxisLabel l = label(breaks[i]);
    if (l.hi + gap > last.lo) continue;
    if (!out.empty() && out.back().hi + gap > l.lo) continue;
    out.push_back(l);
  }
  out.push_back(last);
  return out;
}

}  // namespace shardscope::app::gui
