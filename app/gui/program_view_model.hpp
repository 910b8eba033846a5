#pragma once
// GL-free view model of the program view (issue 7): the ops of a trace as a dataflow graph with
// placements on every edge, implicit redistributes marked on the edges they sit on, halo exchanges
// and notes on their ops, and the geometry of a layered layout (ops top to bottom in program
// order, program inputs on the left). No ImGui, no GL: unit-testable.

#include <cstdint>
#include <string>
#include <vector>

#include "rank_palette.hpp"
#include "shardscope/trace/model.hpp"

namespace shardscope::app::gui {

/// Badge of an implicit redistribute on an edge; unlike any rank colour, the diff colour and the
/// error panel so tests can find it. The badge also carries its text ("S(0)->R all_gather #3").
inline constexpr Rgb kImplicitRedistributeColor{250, 204, 21};
/// Badge of a halo exchange on a conv node (text "halo_exchange ...").
inline constexpr Rgb kHaloColor{45, 212, 140};
/// An imported redistribute (shardscope import debugmode) whose recorded plan is not the one
/// shardscope makes (verdict differs, corrupting_merge or not_replayable) has its badge (or, for an
/// explicit step, its box border) drawn in kDiffColor instead.
/// Text colour of a note (shardscope differs from PyTorch here), after a "!" marker.
inline constexpr Rgb kNoteColor{255, 150, 90};

/// "S(0),R" (placements as the trace writes them, one per mesh dim).
std::string JoinPlacements(const std::vector<std::string>& placements);

/// One box of the graph: a program input, an op, or an explicit redistribute step.
struct ProgramNode {
  enum class Kind { kInput, kOp, kRedistribute };
  Kind kind = Kind::kOp;
  int64_t op_id = -1;                    ///< kOp: Op::id
  int64_t redistribute_id = -1;          ///< kRedistribute: the explicit redistribute's id
  const trace::OpRecord* op = nullptr;   ///< kOp: the lowest rank's record
  std::string tensor;                    ///< kInput and kRedistribute: the tensor
  std::vector<std::string> lines;        ///< header lines (title, strategy and cost, ...)
  std::string note;                      ///< kOp: Op::note ("" when none)
  std::string halo;                      ///< kOp: "halo_exchange x2, 1.2 KiB over all ranks" or ""
  bool imported_differs = false;         ///< kRedistribute: imported and not the same plan as PyTorch's
  int64_t halo_exchanges = 0;            ///< halo_exchange collectives of the lowest rank
  std::vector<std::string> input_rows;   ///< kOp/kRedistribute: one per input ("(none)" if absent)
  std::vector<std::string> output_rows;  ///< one per output ("-> h: S(1)  [16, 64]")
  bool ok = true;
  // Geometry (canvas coordinates, pixels; y grows downwards).
  float x0 = 0, y0 = 0, x1 = 0, y1 = 0;
  std::vector<float> input_y;   ///< centre of each input row (the input port is at x0)
  std::vector<float> output_y;  ///< centre of each output row (output port at x0; kInput: at x1)
};

/// One tensor edge: from its producer (a program input, an op output or an explicit
/// redistribute) to one input of a consumer.
struct ProgramEdge {
  int from_node = -1, from_output = 0;  ///< producer node and its output index
  int to_node = -1, to_input = 0;       ///< consumer node and its input index
  std::string tensor;
  std::vector<std::string> placements;  ///< what the consumer saw when called
  std::vector<std::string> required;    ///< what the consumer's chosen strategy needs
  std::string label;                    ///< "h: S(1)" (placements as seen by the consumer)
  int64_t redistribute_id = -1;         ///< the implicit redistribute on this edge, -1 if none
  /// "S(0)->R all_gather #3", "" without a redistribute. An imported one adds both plans:
  /// "... | shardscope S(0)->R | PyTorch S(0)->R", plus " | differs" (the verdict) when not the same.
  std::string marker;
  std::string marker_full;        ///< the whole marker when `marker` was cut to fit the panel ("" if not)
  bool imported_differs = false;  ///< imported, and the recorded plan is not shardscope's
  // Geometry: the edge runs from the producer's port along lane x, then to the consumer's port.
  float lane_x = 0, y_from = 0, y_to = 0, x_to = 0;
  float label_x = 0;  ///< left of the label text (vertically centred on y_to)
  float marker_x0 = 0, marker_y0 = 0, marker_x1 = 0, marker_y1 = 0;  ///< badge rectangle (if any)
};

/// One producer output's tensor as drawn left of the labels: a stub from the producer's port
/// (port_x, y_from) to its lane at x, and the lane from y_from down (or up) to its furthest
/// consumer. Every edge of that output runs along it; drawing the span once, not once per edge,
/// keeps a weight read by 100k ops one line instead of 100k overlapping ones.
struct ProgramLaneSpan {
  float port_x = 0, x = 0, y_from = 0;
  float y0 = 0, y1 = 0;  ///< the lane's extent: min and max of y_from and its consumers' rows
};

/// Text metrics the layout uses (pixels); the panel passes the real font's.
struct ProgramMetrics {
  float char_w = 7.0f;   ///< width of one character (the default ImGui font is monospaced)
  float line_h = 17.0f;  ///< height of one text row
  /// Width the graph should fit (the panel's, pixels; 0: no limit). When the natural layout is
  /// wider, edge labels and badges, then node texts, are cut ("...") down to a minimum so that
  /// the op boxes stay in view; the details and tooltips keep every word.
  float width = 0;
};

/// The whole graph. nodes: inputs and program steps; steps in program order.
struct ProgramView {
  std::vector<ProgramNode> nodes;
  std::vector<ProgramEdge> edges;           ///< one per (tensor, consumer input), in consumer order
  std::vector<ProgramLaneSpan> lane_spans;  ///< one per producer output that has consumers
  std::vector<int64_t> op_ids;              ///< ascending
  float width = 0, height = 0;              ///< canvas extent
  float lane_x0 = 0, label_x0 = 0, node_x0 = 0;
  int64_t lanes = 0;
  std::string error;  ///< "" when fine
  /// Index into nodes of op `id`, -1 when absent.
  int NodeOfOp(int64_t id) const;
};

/// Builds the graph of `model` (empty when it has no ops) and lays it out with `metrics`.
/// Placement texts are shown as traced; the lowest rank's events describe each op.
ProgramView BuildProgramView(const trace::Model& model, const ProgramMetrics& metrics = {});

}  // namespace shardscope::app::gui
