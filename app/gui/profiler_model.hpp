#pragma once
// The profiler view's lanes as data (GL-free, so tests build them without a display): for a trace
// read from PyTorch profiler (Kineto) files, per rank a CPU-op lane (ops nested by time, one row per
// depth) and a GPU-kernel lane (its collectives' kernels), each collective joined to its members on
// the other ranks through trace::AnalyzeKineto's match, the rank that arrived last (the straggler)
// and every rank's wait, and the ProfilerStep#N boundaries. docs/gui.md, "Profiler traces".

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "shardscope/trace/kineto.hpp"
#include "shardscope/trace/model.hpp"

namespace shardscope::app::gui {

/// True when `op` carries no sharding decision: no candidate strategies, no inputs or outputs, and
/// no failure: a name and a time span, which is all a profiler's CPU op is. The engine's ops and
/// DebugMode-imported ones carry their candidates (a DebugMode op its one recorded strategy).
bool IsPlainOp(const trace::Op& op);

/// True when `model` holds what profiler traces give: collectives that carry a flight record (a
/// process group and a sequence number) with kernel times (end after start), op events of which
/// none carries a sharding decision (IsPlainOp), and no redistributes. Decided by the data, not by
/// the importer: a profiler directory and the trace `import kineto -o` writes of it both hold;
/// Flight Recorder dumps (no op events), shardscope's own traces and DebugMode imports (ops with
/// strategies, redistributes) do not. O(op events).
bool HasProfilerLanes(const trace::Model& model);

/// One CPU op on a row of its rank's op lane (times absolute ns).
struct ProfilerOpSpan {
  int64_t start = 0, end = 0;
  int32_t op = 0;  ///< index into the rank's events.Of<trace::Op>()
};

/// One collective kernel on a rank's GPU lane (times absolute ns).
struct ProfilerKernelSpan {
  int64_t start = 0, end = 0;
  int64_t wait_end = 0;     ///< when the last member started: [start, wait_end) is this rank's wait
  int32_t event = 0;        ///< index into the rank's events.Of<trace::Collective>()
  int32_t collective = -1;  ///< index into ProfilerData::analysis.collectives
  bool last = false;        ///< this rank arrived last (the straggler) and someone waited for it
};

/// A ProfilerStep#N span of one rank (absolute ns).
struct ProfilerStepSpan {
  int64_t start = 0, end = 0, step = 0;
};

/// One rank's lanes.
struct ProfilerLane {
  int64_t rank = 0;
  size_t rank_index = 0;  ///< into Model::ranks
  /// Op rows by nesting depth (0: outermost). Within a row spans never overlap, so both starts and
  /// ends ascend (a binary search on either finds the visible ones).
  std::vector<std::vector<ProfilerOpSpan>> rows;
  std::vector<ProfilerKernelSpan> kernels;  ///< by start
  std::vector<ProfilerStepSpan> steps;      ///< by start
  int64_t longest_kernel = 0;               ///< ns: kernels starting before view start - this may show
};

/// One matched collective's members, in rank order.
struct ProfilerMember {
  int32_t lane = 0;    ///< into ProfilerData::lanes
  int32_t kernel = 0;  ///< into that lane's kernels
};

/// Everything the profiler view draws.
struct ProfilerData {
  trace::KinetoAnalysis analysis;
  std::vector<ProfilerLane> lanes;                   ///< one per rank file, by rank
  std::vector<std::vector<ProfilerMember>> members;  ///< per analysis collective
  int64_t t0 = 0, t1 = 1;                            ///< absolute ns, over ops, kernels and steps
  int32_t depth = 0;                                 ///< op rows of the deepest lane
  size_t ops = 0, kernels = 0;
  std::vector<std::string> kinds;  ///< collective kinds present, sorted
  /// Per rank of the analysis' last_arrivals, sorted by count (descending), then rank.
  std::vector<std::pair<int64_t, int64_t>> stragglers;
  /// The lane of a rank, or -1.
  int32_t LaneOf(int64_t rank) const;
};

/// Row of each span in `spans` (sorted by start, then by end descending): the lowest row whose last
/// span ended at or before its start. For properly nested spans (an op inside another, as one
/// thread's ops are) that is the nesting depth: the number of spans enclosing its start. Spans of
/// several threads may overlap without nesting; they still never share a row, and a span's row is
/// at most the number of earlier spans still open at its start. Pure; O(n x rows).
template <class Span>
std::vector<int32_t> NestingDepths(const std::vector<Span>& spans) {
  std::vector<int32_t> depth(spans.size(), 0);
  std::vector<int64_t> row_end;  // end of the last span on each row
  for (size_t i = 0; i < spans.size(); ++i) {
    size_t r = 0;
    while (r < row_end.size() && row_end[r] > spans[i].start) ++r;
    if (r == row_end.size()) row_end.push_back(0);
    row_end[r] = spans[i].end;
    depth[i] = static_cast<int32_t>(r);
  }
  return depth;
}

/// Level of detail over one row of non-overlapping spans sorted by start (ends ascending too), in
/// the visible range [vs, ve] at `ns_per_px`: calls emit(first, count, start, end) per drawn item.
/// A span at least `min_px` wide is its own item; narrower spans, with the gaps between them under
/// one pixel, merge into one item. Binary searches skip whole pixels of spans, so the work is
/// O(items * log n), never O(spans in view): at most about (ve - vs) / ns_per_px + 1 items.
template <class Span, class Emit>
void ForEachRowItem(const std::vector<Span>& spans, int64_t vs, int64_t ve, double ns_per_px, double min_px,
                    Emit&& emit) {
  const int64_t px = std::max<int64_t>(1, static_cast<int64_t>(ns_per_px));
  const double wide_ns = std::max(1.0, min_px) * std::max(ns_per_px, 1.0);
  auto wide = [&](const Span& s) { return static_cast<double>(s.end - s.start) >= wide_ns; };
  auto ends_before = [](const Span& s, int64_t t) { return s.end < t; };
  auto starts_after = [](int64_t t, const Span& s) { return t < s.start; };
  const size_t n = spans.size();
  size_t i =
      static_cast<size_t>(std::lower_bound(spans.begin(), spans.end(), vs, ends_before) - spans.begin());
  while (i < n && spans[i].start <= ve) {
    if (wide(spans[i])) {
      emit(i, size_t{1}, spans[i].start, spans[i].end);
      ++i;
      continue;
    }
    // A run of narrow spans: the spans starting less than a pixel after its end join it. Of those,
    // only the last can reach past that pixel (spans do not overlap), so only it can be wide.
    const size_t first = i;
    int64_t end = spans[i].end;
    ++i;
    while (i < n && spans[i].start <= ve) {
      const size_t j = static_cast<size_t>(std::upper_bound(spans.begin() + static_cast<std::ptrdiff_t>(i),
                                                            spans.end(), end + px - 1, starts_after) -
                                           spans.begin());
      if (j == i) break;
      if (wide(spans[j - 1])) {
        if (j - 1 > i) end = std::max(end, spans[j - 2].end);
        i = j - 1;
        break;
      }
      end = std::max(end, spans[j - 1].end);
      i = j;
    }
    emit(first, i - first, spans[first].start, end);
  }
}

/// Builds the view of a model for which HasProfilerLanes holds (any model: one without ops or
/// matched collectives gives empty rows). Calls trace::AnalyzeKineto once. Pure.
ProfilerData BuildProfilerData(const trace::Model& model);

}  // namespace shardscope::app::gui
