#include "program_view_model.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "profiler_model.hpp"
#include "shardscope/text.hpp"
#include "shardscope/trace/import_verdict.hpp"
#include "view_model.hpp"

namespace shardscope::app::gui {
namespace {

constexpr size_t kMaxNodeChars = 72;  // longer header lines (notes) are cut here; details show all
constexpr float kPad = 8.0f;
constexpr float kLaneStep = 12.0f;
constexpr float kNodeGap = 12.0f;

std::string Cut(const std::string& s, size_t n) { return s.size() <= n ? s : s.substr(0, n - 3) + "..."; }

std::string FormatCost(double cost_us) {
  if (cost_us < 0) return "inf";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f us", cost_us);
  return buf;
}

// Both plans of an imported redistribute, shardscope's first: "shardscope X | PyTorch Y", plus the
// verdict when the two are not the same.
std::string ImportedText(const trace::RedistributeBegin& b) {
  const trace::ImportedPlan& p = *b.imported;
  std::string theirs = p.notation.empty() ? "(collectives only)" : p.notation;
  std::string text = "shardscope " + (b.notation().empty() ? "-" : b.notation()) + " | PyTorch " + theirs;
  if (trace::ParseImportVerdict(p.verdict) != trace::ImportVerdict::kSame) text += " | " + p.verdict;
  return text;
}

bool ImportedDiffers(const trace::RedistributeRecord* r) {
  return r && r->begin->imported &&
         trace::ParseImportVerdict(r->begin->imported->verdict) != trace::ImportVerdict::kSame;
}

std::string MarkerText(const trace::RedistributeRecord* r, int64_t id, const std::vector<std::string>& from,
                       const std::vector<std::string>& to, bool with_imported = true) {
  std::string comms;
  if (r) {
    std::vector<std::string> kinds;
    for (const trace::PlanStep& s : r->begin->optimized_plan()) {
      if (s.comm != "local" && std::find(kinds.begin(), kinds.end(), s.comm) == kinds.end())
        kinds.push_back(s.comm);
    }
    for (size_t i = 0; i < kinds.size(); ++i) comms += (i ? "+" : "") + kinds[i];
    if (comms.empty()) comms = "local";
  }
  const auto& src = r ? r->begin->src_placements().get() : from;
  const auto& dst = r ? r->begin->dst_placements().get() : to;
  std::string text = JoinPlacements(src) + "->" + JoinPlacements(dst) + (comms.empty() ? "" : " " + comms) +
                     " #" + std::to_string(id);
  if (with_imported && r && r->begin->imported) text += " | " + ImportedText(r->begin);  // both plans
  return text;
}

float TextW(const std::string& s, const ProgramMetrics& m) { return static_cast<float>(s.size()) * m.char_w; }

}  // namespace

std::string JoinPlacements(const std::vector<std::string>& placements) {
  std::string s = Join(placements, ",");
  return s.empty() ? "-" : s;
}

int ProgramView::NodeOfOp(int64_t id) const {
  for (size_t i = 0; i < nodes.size(); ++i)
    if (nodes[i].kind == ProgramNode::Kind::kOp && nodes[i].op_id == id) return static_cast<int>(i);
  return -1;
}

namespace {

// A step of the program: an op or an explicit redistribute, as the describing rank recorded it.
struct StepRef {
  int64_t t_ns;
  const trace::OpRecord* op;
  const trace::RedistributeRecord* redistribute;
};

// Program order on `rank`: ops by id with the explicit redistributes interleaved by their start time.
// Ops that carry no sharding decision (IsPlainOp: a profiler's CPU ops) are no program steps.
std::vector<StepRef> ProgramSteps(const trace::Model& model, int64_t rank) {
  std::vector<StepRef> steps;
  for (const trace::OpRecord& r : model.ops)
    if (r.rank == rank && !IsPlainOp(r.op)) steps.push_back({r.op->t_ns, &r, nullptr});
  for (const trace::RedistributeRecord& r : model.redistributes)
    if (r.rank == rank && r.begin->op_id < 0) steps.push_back({r.begin->t_ns, nullptr, &r});
  std::stable_sort(steps.begin(), steps.end(), [](const StepRef& a, const StepRef& b) {
    if (a.op && b.op) return a.op->op->id < b.op->op->id;
    return a.t_ns < b.t_ns;
  });
  return steps;
}

// The halo exchanges an op ran: count on `rank`, bytes sent over all ranks.
void DescribeHalo(const trace::Model& model, int64_t rank, int64_t op_id, ProgramNode& node) {
  int64_t halo_bytes = 0, halo_count = 0;
  for (const trace::OpRecord* r : model.OpsWithId(op_id)) {
    for (const trace::Collective& c : r->collectives) {
      if (c.kind() != "halo_exchange") continue;
      if (r->rank == rank) ++halo_count;
      for (int64_t b : c.bytes_sent()) halo_bytes += b;
    }
  }
  node.halo_exchanges = halo_count;
  if (halo_count > 0) {
    node.halo = "halo_exchange x" + std::to_string(halo_count) + ", " +
                FormatBytes(static_cast<double>(halo_bytes)) + " sent over all ranks";
  }
}

ProgramNode OpNode(const trace::Model& model, int64_t rank, const trace::OpRecord& record) {
  const trace::Op& op = record.op;
  ProgramNode node;
  node.kind = ProgramNode::Kind::kOp;
  node.op_id = op.id;
  node.op = &record;
  node.ok = op.ok();
  node.lines.push_back("#" + std::to_string(op.id) + " " + op.name() +
                       (op.args().empty() ? "" : "(" + op.args() + ")"));
  std::string strategy = op.chosen() >= 0 ? "strategy " + std::to_string(op.chosen()) + " of " +
                                                std::to_string(op.candidates().size())
                                          : "no strategy of " + std::to_string(op.candidates().size());
  if (op.chosen() >= 0 && op.chosen() < static_cast<int64_t>(op.candidates().size()))
    strategy += ", cost " + FormatCost(op.candidates()[static_cast<size_t>(op.chosen())].cost_us);
  node.lines.push_back(strategy);
  if (!op.ok()) node.lines.push_back("FAILED: " + op.error());
  node.note = op.note();
  DescribeHalo(model, rank, op.id, node);
  for (const trace::OpOutput& out : op.outputs()) {
    node.output_rows.push_back(out.requested ? "-> " + out.tensor + ": " + JoinPlacements(out.placements) +
                                                   "  " + FormatInts(out.global_shape)
                                             : "-> (not requested)");
  }
  return node;
}

ProgramNode RedistributeNode(const trace::RedistributeRecord& record) {
  const trace::RedistributeBegin& b = record.begin;
  ProgramNode node;
  node.kind = ProgramNode::Kind::kRedistribute;
  node.redistribute_id = b.id;
  node.tensor = b.tensor();
  node.lines.push_back("redistribute #" + std::to_string(b.id) + " (explicit step)");
  node.lines.push_back(MarkerText(&record, b.id, {}, {}, /*with_imported=*/false));
  if (b.imported) node.lines.push_back(ImportedText(b));  // a line of its own: headers are cut
  node.imported_differs = ImportedDiffers(&record);
  node.output_rows.push_back("-> " + b.tensor() + ": " + JoinPlacements(b.dst_placements()) + "  " +
                             FormatInts(b.global_shape()));
  return node;
}

// Builds the nodes and edges; `producer_` maps a tensor name to its latest (node, output).
class GraphBuilder {
 public:
  GraphBuilder(const trace::Model& model, int64_t rank, ProgramView& view)
      : model_(model), rank_(rank), view_(view) {}

  // Adds the step's node and the edges into it; returns the node's index.
  int AddStep(const StepRef& s) {
    std::vector<const trace::OpInput*> inputs;
    trace::OpInput explicit_input;
    const int index = static_cast<int>(view_.nodes.size());
    if (s.op) {
      view_.op_ids.push_back(s.op->op->id);
      view_.nodes.push_back(OpNode(model_, rank_, *s.op));
      for (const trace::OpInput& in : s.op->op->inputs()) inputs.push_back(&in);
    } else {
      const trace::RedistributeBegin& b = s.redistribute->begin;
      view_.nodes.push_back(RedistributeNode(*s.redistribute));
      explicit_input.tensor = b.tensor();
      explicit_input.placements = b.src_placements();
      explicit_input.required = b.src_placements();
      inputs.push_back(&explicit_input);
    }
    for (size_t i = 0; i < inputs.size(); ++i) AddEdge(*inputs[i], index, static_cast<int>(i));
    // Outputs are produced after the inputs were read (an explicit redistribute renames nothing).
    const ProgramNode& n = view_.nodes[static_cast<size_t>(index)];
    if (s.op) {
      for (size_t k = 0; k < s.op->op->outputs().size(); ++k) {
        const trace::OpOutput& out = s.op->op->outputs()[k];
        if (out.requested && !out.tensor.empty()) producer_[out.tensor] = {index, static_cast<int>(k)};
      }
    } else if (!n.tensor.empty()) {
      producer_[n.tensor] = {index, 0};
    }
    return index;
  }

 private:
  void AddEdge(const trace::OpInput& in, int index, int input) {
    if (in.tensor.empty()) {
      view_.nodes[static_cast<size_t>(index)].input_rows.push_back("(none)");
      return;
    }
    view_.nodes[static_cast<size_t>(index)].input_rows.push_back(in.tensor);
    auto [from, from_output] = SourceOf(in.tensor, in.placements);
    ProgramEdge e;
    e.from_node = from, e.from_output = from_output, e.to_node = index, e.to_input = input;
    e.tensor = in.tensor;
    e.placements = in.placements;
    e.required = in.required;
    e.label = in.tensor + ": " + JoinPlacements(in.placements);
    e.redistribute_id = in.redistribute_id;
    if (in.redistribute_id >= 0) {
      const trace::RedistributeRecord* r = model_.FindRedistribute(rank_, in.redistribute_id);
      e.marker = MarkerText(r, in.redistribute_id, in.placements, in.required);
      e.imported_differs = ImportedDiffers(r);
    } else if (!in.required.empty() && in.required != in.placements) {
      e.label += " -> " + JoinPlacements(in.required);
    }
    view_.edges.push_back(std::move(e));
  }

  // The (node, output) that holds `tensor`; a tensor no step produced gets an input node.
  std::pair<int, int> SourceOf(const std::string& tensor, const std::vector<std::string>& placements) {
    auto it = producer_.find(tensor);
    if (it != producer_.end()) return it->second;
    ProgramNode input;
    input.kind = ProgramNode::Kind::kInput;
    input.tensor = tensor;
    input.output_rows.push_back(tensor + ": " + JoinPlacements(placements));
    view_.nodes.push_back(std::move(input));
    auto at = std::make_pair(static_cast<int>(view_.nodes.size()) - 1, 0);
    producer_[tensor] = at;
    return at;
  }

  const trace::Model& model_;
  int64_t rank_;
  ProgramView& view_;
  std::map<std::string, std::pair<int, int>> producer_;
};

// Stacks every step node in program order (rows: header lines, note, halo, then the ports);
// cuts long header lines and returns the nodes' common width.
float StackStepNodes(ProgramView& view, const std::vector<int>& step_nodes, const ProgramMetrics& metrics) {
  const float lh = metrics.line_h, row_h = lh + 4.0f;
  size_t node_chars = 30;
  for (int i : step_nodes) {
    ProgramNode& n = view.nodes[static_cast<size_t>(i)];
    for (auto& line : n.lines) line = Cut(line, kMaxNodeChars);
    for (const auto& line : n.lines) node_chars = std::max(node_chars, line.size());
    for (const auto& row : n.input_rows) node_chars = std::max(node_chars, row.size() + 4);
    for (const auto& row : n.output_rows) node_chars = std::max(node_chars, row.size());
    if (!n.note.empty()) node_chars = std::max(node_chars, std::min(kMaxNodeChars, n.note.size() + 2));
    if (!n.halo.empty()) node_chars = std::max(node_chars, n.halo.size());
  }
  node_chars = std::min(node_chars, kMaxNodeChars + 4);
  float y = kPad;
  for (int i : step_nodes) {
    ProgramNode& n = view.nodes[static_cast<size_t>(i)];
    n.y0 = y;
    float cy = y + 4.0f +
               lh * static_cast<float>(n.lines.size() + (n.note.empty() ? 0 : 1) + (n.halo.empty() ? 0 : 1));
    for (size_t k = 0; k < n.input_rows.size(); ++k, cy += row_h) n.input_y.push_back(cy + row_h / 2);
    for (size_t k = 0; k < n.output_rows.size(); ++k, cy += row_h) n.output_y.push_back(cy + row_h / 2);
    n.y1 = cy + 4.0f;
    y = n.y1 + kNodeGap;
  }
  view.height = y + kPad;
  return static_cast<float>(node_chars) * metrics.char_w + 16.0f;
}

// Input nodes sit on the row of their first consumer's port; returns their width in characters.
size_t PlaceInputNodes(ProgramView& view, const ProgramMetrics& metrics) {
  const float row_h = metrics.line_h + 4.0f;
  size_t input_chars = 6;
  for (const ProgramEdge& e : view.edges) {
    ProgramNode& from = view.nodes[static_cast<size_t>(e.from_node)];
    if (from.kind != ProgramNode::Kind::kInput || !from.output_y.empty()) continue;
    float at = view.nodes[static_cast<size_t>(e.to_node)].input_y[static_cast<size_t>(e.to_input)];
    from.output_y.push_back(at);
    from.y0 = at - row_h / 2 + 1, from.y1 = at + row_h / 2 - 1;
    input_chars = std::max(input_chars, from.output_rows.front().size());
  }
  return input_chars;
}

// Lanes: one vertical track per source with consumers; sources that do not overlap share one.
// Sets the edges' end rows and view.lanes; returns each source's (node, output) lane.
std::map<std::pair<int, int>, int> AssignLanes(ProgramView& view) {
  struct Span {
    float y0, y1;
    int node, output;
  };
  std::map<std::pair<int, int>, Span> spans;
  for (ProgramEdge& e : view.edges) {
    const ProgramNode& from = view.nodes[static_cast<size_t>(e.from_node)];
    e.y_from = from.output_y[static_cast<size_t>(e.from_output)];
    e.y_to = view.nodes[static_cast<size_t>(e.to_node)].input_y[static_cast<size_t>(e.to_input)];
    auto key = std::make_pair(e.from_node, e.from_output);
    auto it = spans.find(key);
    if (it == spans.end()) {
      spans[key] = {std::min(e.y_from, e.y_to), std::max(e.y_from, e.y_to), e.from_node, e.from_output};
    } else {
      it->second.y0 = std::min(it->second.y0, std::min(e.y_from, e.y_to));
      it->second.y1 = std::max(it->second.y1, std::max(e.y_from, e.y_to));
    }
  }
  std::vector<Span> ordered;
  for (const auto& [key, span] : spans) ordered.push_back(span);
  std::sort(ordered.begin(), ordered.end(), [](const Span& a, const Span& b) { return a.y0 < b.y0; });
  std::vector<float> lane_end;
  std::map<std::pair<int, int>, int> lane_of;
  for (const Span& s : ordered) {
    int lane = -1;
    for (size_t l = 0; l < lane_end.size(); ++l) {
      if (lane_end[l] + 3.0f < s.y0) {
        lane = static_cast<int>(l);
        break;
      }
    }
    if (lane < 0) {
      lane = static_cast<int>(lane_end.size());
      lane_end.push_back(0);
    }
    lane_end[static_cast<size_t>(lane)] = s.y1;
    lane_of[{s.node, s.output}] = lane;
  }
  view.lanes = static_cast<int64_t>(lane_end.size());
  return lane_of;
}

// Columns left to right: input nodes, lanes, edge labels, step nodes. Labels start right of the
// lanes; an implicit redistribute's badge follows its label.
void PlaceColumns(ProgramView& view, const ProgramMetrics& metrics, size_t input_chars, float node_w,
                  std::map<std::pair<int, int>, int>& lane_of) {
  const float lh = metrics.line_h;
  const float input_w = static_cast<float>(input_chars) * metrics.char_w + 12.0f;
  view.lane_x0 = kPad + input_w + 12.0f;
  view.label_x0 = view.lane_x0 + static_cast<float>(view.lanes) * kLaneStep + 10.0f;
  auto edge_w = [&](const ProgramEdge& e) {
    return TextW(e.label, metrics) + 8.0f + (e.marker.empty() ? 0.0f : TextW(e.marker, metrics) + 18.0f);
  };
  float label_w = 0;
  for (const ProgramEdge& e : view.edges) label_w = std::max(label_w, edge_w(e));
  // Fit the panel: the label column gives way first (badges, then labels, cut), then the nodes.
  const float fixed = view.label_x0 + 16.0f + kPad;
  if (metrics.width > 0 && fixed + label_w + node_w > metrics.width) {
    const float min_label = 18 * metrics.char_w, min_node = 28 * metrics.char_w + 16.0f;
    const float budget = metrics.width - fixed;
    const float want_label = std::max(min_label, std::min(label_w, budget - node_w));
    if (want_label < label_w) {
      label_w = 0;
      for (ProgramEdge& e : view.edges) {
        const auto chars = [&](float w) { return static_cast<size_t>(std::max(0.0f, w / metrics.char_w)); };
        if (!e.marker.empty()) {
          const size_t room = std::max<size_t>(10, chars(want_label - TextW(e.label, metrics) - 26.0f));
          if (e.marker.size() > room) e.marker_full = e.marker, e.marker = Cut(e.marker, room);
        }
        const size_t label_room = std::max<size_t>(
            8, chars(want_label - 8.0f - (e.marker.empty() ? 0.0f : TextW(e.marker, metrics) + 18.0f)));
        e.label = Cut(e.label, label_room);
        label_w = std::max(label_w, edge_w(e));
      }
    }
    const float want_node = std::max(min_node, std::min(node_w, budget - label_w));
    if (want_node < node_w) {
      node_w = want_node;
      const size_t chars = static_cast<size_t>((node_w - 16.0f) / metrics.char_w);
      for (ProgramNode& n : view.nodes) {
        if (n.kind == ProgramNode::Kind::kInput) continue;
        for (auto& line : n.lines) line = Cut(line, chars);
        for (auto& row : n.input_rows) row = Cut(row, chars > 4 ? chars - 4 : chars);
        for (auto& row : n.output_rows) row = Cut(row, chars);
      }
    }
  }
  view.node_x0 = view.label_x0 + label_w + 16.0f;
  for (ProgramNode& n : view.nodes) {
    if (n.kind == ProgramNode::Kind::kInput) {
      n.x0 = kPad, n.x1 = kPad + input_w;
    } else {
      n.x0 = view.node_x0, n.x1 = view.node_x0 + node_w;
    }
  }
  std::map<std::pair<int, int>, size_t> span_of;  // producer output -> its lane span
  for (ProgramEdge& e : view.edges) {
    int lane = lane_of[{e.from_node, e.from_output}];
    e.lane_x = view.lane_x0 + static_cast<float>(lane) * kLaneStep + kLaneStep / 2;
    const ProgramNode& from = view.nodes[static_cast<size_t>(e.from_node)];
    const auto [it, fresh] = span_of.try_emplace({e.from_node, e.from_output}, view.lane_spans.size());
    if (fresh) {
      const float port_x = from.kind == ProgramNode::Kind::kInput ? from.x1 : from.x0;
      view.lane_spans.push_back({port_x, e.lane_x, e.y_from, e.y_from, e.y_from});
    }
    ProgramLaneSpan& span = view.lane_spans[it->second];
    span.y0 = std::min(span.y0, e.y_to);
    span.y1 = std::max(span.y1, e.y_to);
    e.x_to = view.node_x0;
    e.label_x = view.label_x0 + 4.0f;
    if (!e.marker.empty()) {
      e.marker_x0 = e.label_x + TextW(e.label, metrics) + 12.0f;
      e.marker_x1 = e.marker_x0 + TextW(e.marker, metrics) + 8.0f;
      e.marker_y0 = e.y_to - lh / 2 - 1.0f;
      e.marker_y1 = e.y_to + lh / 2 + 1.0f;
    }
  }
  view.width = view.node_x0 + node_w + kPad;
}

}  // namespace

ProgramView BuildProgramView(const trace::Model& model, const ProgramMetrics& metrics) {
  ProgramView view;
  // The lowest rank that recorded ops describes the program (every rank runs the same ops); a
  // profiler's ops (IsPlainOp) describe none.
  const auto first = std::find_if(model.ops.begin(), model.ops.end(),
                                  [](const trace::OpRecord& r) { return !IsPlainOp(r.op); });
  if (first == model.ops.end()) return view;
  const int64_t rank = first->rank;
  GraphBuilder graph(model, rank, view);
  std::vector<int> step_nodes;
  for (const StepRef& s : ProgramSteps(model, rank)) step_nodes.push_back(graph.AddStep(s));
  const float node_w = StackStepNodes(view, step_nodes, metrics);
  const size_t input_chars = PlaceInputNodes(view, metrics);
  std::map<std::pair<int, int>, int> lane_of = AssignLanes(view);
  PlaceColumns(view, metrics, input_chars, node_w, lane_of);
  return view;
}

}  // namespace shardscope::app::gui
