// GL-free program view model (issue 7): the graph built from a trace has one node per op, one edge
// per (tensor, consumer input), each edge from the step that last produced the tensor (or from a
// program input), implicit-redistribute badges on exactly the inputs whose OpInput.redistribute_id
// >= 0, halo exchanges and notes on their ops, and a layout where nothing overlaps. Expected values
// come from the trace events the GUI reads.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <tuple>

#include "program_test_traces.hpp"
#include "program_view_model.hpp"
#include "shardscope/trace/reader.hpp"
#include "timeline_model.hpp"

namespace {

namespace fs = std::filesystem;
namespace trace = shardscope::trace;
using shardscope::app::gui::BuildProgramView;
using shardscope::app::gui::JoinPlacements;
using shardscope::app::gui::ProgramEdge;
using shardscope::app::gui::ProgramNode;
using shardscope::app::gui::ProgramView;

fs::path Temp(const std::string& name) {
  fs::path dir = fs::temp_directory_path() / ("shardscope_program_view_" + std::to_string(::getpid())) / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

bool Overlap(float ax0, float ay0, float ax1, float ay1, float bx0, float by0, float bx1, float by1) {
  return ax0 < bx1 && bx0 < ax1 && ay0 < by1 && by0 < ay1;
}

// Input `i` (`in`) of op `id` and its edge `e`: an implicit redistribute's badge names the
// transition, the redistribute and its collectives in words, not only in colour; no badge else.
void CheckMarker(const trace::Model& model, int64_t rank, int64_t id, size_t i, const trace::OpInput& in,
                 const ProgramEdge& e) {
  if (in.redistribute_id >= 0) {
    const trace::RedistributeRecord* rr = model.FindRedistribute(rank, in.redistribute_id);
    REQUIRE(rr != nullptr);
    CHECK(rr->begin->op_id == id);
    CHECK(rr->begin->op_input == static_cast<int64_t>(i));
    // The badge names the transition and the collective in words, not only in colour.
    CHECK(e.marker.find(JoinPlacements(rr->begin->src_placements()) + "->" +
                        JoinPlacements(rr->begin->dst_placements())) == 0);
    CHECK(e.marker.find("#" + std::to_string(in.redistribute_id)) != std::string::npos);
    for (const trace::PlanStep& s : rr->begin->optimized_plan())
      CHECK(e.marker.find(s.comm) != std::string::npos);
  } else {
    CHECK(e.marker.empty());
  }
}

// The producer of edge `e` into node `n` (op `id`, input `in`): the last earlier step writing this
// tensor, or a program input.
void CheckProducer(const ProgramView& view, const ProgramNode& n, int64_t id, const trace::OpInput& in,
                   const ProgramEdge& e) {
  const ProgramNode& from = view.nodes[static_cast<size_t>(e.from_node)];
  if (from.kind == ProgramNode::Kind::kInput) {
    CHECK(from.tensor == in.tensor);
  } else if (from.kind == ProgramNode::Kind::kRedistribute) {
    CHECK(from.tensor == in.tensor);
    CHECK(from.y0 < n.y0);
  } else {
    const trace::Op& p = from.op->op;
    REQUIRE(e.from_output < static_cast<int>(p.outputs().size()));
    CHECK(p.outputs()[static_cast<size_t>(e.from_output)].tensor == in.tensor);
    CHECK(p.id < id);
  }
}

// Layout: steps top to bottom without overlap, inputs left of the lanes, badges between the lanes
// and the nodes on their consumer's input row, inside the canvas.
void CheckLayout(const ProgramView& view) {
  float last_y1 = -1;
  for (const ProgramNode& n : view.nodes) {
    CHECK(n.x1 <= view.width);
    CHECK(n.y1 <= view.height);
    if (n.kind == ProgramNode::Kind::kInput) {
      CHECK(n.x1 < view.lane_x0);
      continue;
    }
    CHECK(n.y0 > last_y1);
    last_y1 = n.y1;
    CHECK(n.x0 == view.node_x0);
  }
  for (const ProgramEdge& e : view.edges) {
    CHECK(e.lane_x > view.lane_x0);
    CHECK(e.lane_x < view.label_x0);
    if (e.marker.empty()) continue;
    CHECK(e.marker_x0 >= view.label_x0);
    CHECK(e.marker_x1 < view.node_x0);
    CHECK(e.marker_y0 < e.y_to);
    CHECK(e.marker_y1 > e.y_to);
    for (const ProgramNode& n : view.nodes)
      CHECK_FALSE(Overlap(e.marker_x0, e.marker_y0, e.marker_x1, e.marker_y1, n.x0, n.y0, n.x1, n.y1));
  }
  // Each producer output's lane is drawn once (ProgramLaneSpan): from its port to its lane at its
  // row, then along the lane over exactly the rows of its consumers.
  struct Expected {
    float port_x, x, y_from, y0, y1;
  };
  std::map<std::pair<int, int>, Expected> outputs;
  for (const ProgramEdge& e : view.edges) {
    const ProgramNode& from = view.nodes[static_cast<size_t>(e.from_node)];
    const float port_x = from.kind == ProgramNode::Kind::kInput ? from.x1 : from.x0;
    auto [it, fresh] = outputs.try_emplace({e.from_node, e.from_output},
                                           Expected{port_x, e.lane_x, e.y_from, e.y_from, e.y_from});
    CHECK(it->second.x == e.lane_x);  // one lane per producer output
    CHECK(it->second.y_from == e.y_from);
    it->second.y0 = std::min(it->second.y0, e.y_to);
    it->second.y1 = std::max(it->second.y1, e.y_to);
  }
  std::multiset<std::tuple<float, float, float, float, float>> want, got;
  for (const auto& [key, o] : outputs) want.insert({o.port_x, o.x, o.y_from, o.y0, o.y1});
  for (const auto& l : view.lane_spans) got.insert({l.port_x, l.x, l.y_from, l.y0, l.y1});
  CHECK(got == want);
}

// Every structural property, checked against the lowest rank's events of `model`.
void CheckGraph(const trace::Model& model, const ProgramView& view) {
  REQUIRE(view.error.empty());
  const int64_t rank = model.ops.front().rank;
  // One node per op, in id order.
  std::vector<int64_t> op_nodes;
  for (const ProgramNode& n : view.nodes)
    if (n.kind == ProgramNode::Kind::kOp) op_nodes.push_back(n.op_id);
  CHECK(op_nodes == model.OpIds());

  // One edge per (consumer, input) with a tensor; explicit redistributes consume their tensor.
  using Key = std::tuple<int, int>;
  std::map<Key, const ProgramEdge*> by_input;
  for (const ProgramEdge& e : view.edges) {
    INFO("edge " << e.label);
    CHECK(by_input.emplace(Key{e.to_node, e.to_input}, &e).second);
  }
  size_t expected_edges = 0;
  std::set<std::pair<int64_t, int64_t>> expected_marked, marked;
  for (int64_t id : model.OpIds()) {
    const trace::OpRecord* r = model.FindOp(rank, id);
    REQUIRE(r != nullptr);
    int node = view.NodeOfOp(id);
    REQUIRE(node >= 0);
    const ProgramNode& n = view.nodes[static_cast<size_t>(node)];
    CHECK(n.note == r->op->note());
    int64_t halos = 0;
    for (const trace::Collective& c : r->collectives) halos += c.kind() == "halo_exchange" ? 1 : 0;
    CHECK(n.halo_exchanges == halos);
    CHECK(n.halo.empty() == (halos == 0));
    for (size_t i = 0; i < r->op->inputs().size(); ++i) {
      const trace::OpInput& in = r->op->inputs()[i];
      auto it = by_input.find(Key{node, static_cast<int>(i)});
      if (in.tensor.empty()) {
        CHECK(it == by_input.end());
        continue;
      }
      ++expected_edges;
      REQUIRE(it != by_input.end());
      const ProgramEdge& e = *it->second;
      CHECK(e.tensor == in.tensor);
      CHECK(e.placements == in.placements);
      CHECK(e.label.rfind(in.tensor + ": " + JoinPlacements(in.placements), 0) == 0);
      CHECK(e.redistribute_id == in.redistribute_id);
      if (in.redistribute_id >= 0) expected_marked.insert({id, static_cast<int64_t>(i)});
      CheckMarker(model, rank, id, i, in, e);
      CheckProducer(view, n, id, in, e);
    }
  }
  for (const ProgramEdge& e : view.edges) {
    if (e.redistribute_id >= 0) marked.insert({view.nodes[static_cast<size_t>(e.to_node)].op_id, e.to_input});
  }
  size_t explicit_steps = 0;
  for (const trace::RedistributeRecord& r : model.redistributes)
    explicit_steps += r.rank == rank && r.begin->op_id < 0 ? 1 : 0;
  CHECK(view.edges.size() == expected_edges + explicit_steps);
  CHECK(marked == expected_marked);

  CheckLayout(view);
}

}  // namespace

TEST_CASE("program view: hand-made trace", "[gui][program]") {
  fs::path dir = Temp("handmade");
  shardscope_gui_test::WriteHandMadeProgramTrace(dir);
  trace::Model model = trace::ReadTraceDir(dir);
  REQUIRE(model.ops.size() == 8);  // 4 ops on 2 ranks
  ProgramView view = BuildProgramView(model);
  CheckGraph(model, view);
  // From the construction (program_test_traces.hpp): inputs x and w; explicit redistribute 1 of y.
  std::set<std::string> inputs;
  int explicit_nodes = 0;
  for (const ProgramNode& n : view.nodes) {
    if (n.kind == ProgramNode::Kind::kInput) inputs.insert(n.tensor);
    if (n.kind == ProgramNode::Kind::kRedistribute) {
      ++explicit_nodes;
      CHECK(n.redistribute_id == 1);
    }
  }
  CHECK(inputs == std::set<std::string>{"x", "w"});
  CHECK(explicit_nodes == 1);
  CHECK(view.edges.size() == 7);  // mm 2, redistribute 1, conv 1, add 2, layer_norm_backward 1
  // add's y comes from the explicit redistribute, not from mm.
  const ProgramEdge* add_y = nullptr;
  for (const ProgramEdge& e : view.edges)
    if (view.nodes[static_cast<size_t>(e.to_node)].op_id == 2 && e.to_input == 0) add_y = &e;
  REQUIRE(add_y != nullptr);
  CHECK(view.nodes[static_cast<size_t>(add_y->from_node)].kind == ProgramNode::Kind::kRedistribute);
  CHECK(add_y->marker == "R->S(0) local #2");
  CHECK(view.nodes[static_cast<size_t>(view.NodeOfOp(1))].halo_exchanges == 1);
  CHECK(view.nodes[static_cast<size_t>(view.NodeOfOp(3))].output_rows.back() == "-> (not requested)");
}

TEST_CASE("program view: imported redistributes show both notations and mark differences",
          "[gui][program][import]") {
  fs::path dir = Temp("imported");
  shardscope_gui_test::WriteImportedProgramTrace(dir);
  trace::Model model = trace::ReadTraceDir(dir);
  ProgramView view = BuildProgramView(model);
  CheckGraph(model, view);
  std::map<int64_t, const ProgramEdge*> by_redistribute;
  for (const ProgramEdge& e : view.edges)
    if (e.redistribute_id >= 0) by_redistribute[e.redistribute_id] = &e;
  REQUIRE(by_redistribute.size() == 2);
  // The badge names shardscope's notation (the begin event's) and PyTorch's (the imported one).
  CHECK(by_redistribute[0]->marker == "S(0)->R all_gather #0 | shardscope S(0)->R | PyTorch S(0)->R");
  CHECK_FALSE(by_redistribute[0]->imported_differs);
  CHECK(by_redistribute[1]->marker ==
        "R->S(0) local #1 | shardscope R->S(0) | PyTorch R->P(sum)->S(0) | differs");
  CHECK(by_redistribute[1]->imported_differs);
  int explicit_nodes = 0;
  for (const ProgramNode& n : view.nodes) {
    if (n.kind != ProgramNode::Kind::kRedistribute) continue;
    ++explicit_nodes;
    CHECK(n.redistribute_id == 2);
    CHECK(n.imported_differs);
    CHECK(std::find(n.lines.begin(), n.lines.end(),
                    "shardscope S(0)->R | PyTorch S(0)-->R | corrupting_merge") != n.lines.end());
  }
  CHECK(explicit_nodes == 1);
}

TEST_CASE("program view: a trace without ops gives an empty graph", "[gui][program]") {
  trace::Model model;
  ProgramView view = BuildProgramView(model);
  CHECK(view.nodes.empty());
  CHECK(view.edges.empty());
}

TEST_CASE("program view: sample programs run on the local backend", "[gui][program]") {
  std::string name = GENERATE("tp_mlp", "domain_conv", "sp_layer_norm", "attention");
  fs::path dir = Temp(name);
  shardscope_gui_test::RunSampleProgram(name, dir);
  trace::Model model = trace::ReadTraceDir(dir);
  INFO(name);
  REQUIRE_FALSE(model.ops.empty());
  CheckGraph(model, BuildProgramView(model));
  if (name == "domain_conv") {
    ProgramView view = BuildProgramView(model);
    int64_t halo_nodes = 0;
    for (const ProgramNode& n : view.nodes) halo_nodes += n.halo_exchanges > 0 ? 1 : 0;
    CHECK(halo_nodes >= 1);
  }
}

TEST_CASE("timeline: a program trace's ops and halo exchanges are on their ranks' lanes",
          "[gui][program][timeline]") {
  // domain_conv runs ops whose halo exchanges belong to no redistribute: before, its timeline held
  // no span and an axis of "0 ns 0 ns 1 ns". Every op event becomes one op bar on its rank's lane
  // spanning [t_ns, end_ns] (the rank's clock offset added), every collective an op ran itself one
  // span of the collectives lane, and the time range covers them all.
  fs::path dir = Temp("timeline_domain_conv");
  shardscope_gui_test::RunSampleProgram("domain_conv", dir);
  trace::Model model = trace::ReadTraceDir(dir);
  REQUIRE_FALSE(model.ops.empty());
  const shardscope::app::gui::TimelineData data = shardscope::app::gui::BuildTimeline(model);
  REQUIRE(data.ops.size() == static_cast<size_t>(model.world));
  std::map<int64_t, int64_t> offset;
  for (const trace::RankTrace& r : model.ranks) offset[r.header.rank] = r.header.clock.offset_ns;
  size_t op_bars = 0, halo_spans = 0, halos = 0;
  for (const auto& lane : data.ops) op_bars += lane.size();
  for (const auto& lane : data.collectives)
    for (const auto& s : lane) halo_spans += s.op_record >= 0 ? 1 : 0;
  for (const trace::OpRecord& rec : model.ops) halos += rec.collectives.size();
  CHECK(op_bars == model.ops.size());
  CHECK(halos >= 1);
  CHECK(halo_spans == halos);
  for (size_t lane = 0; lane < data.ops.size(); ++lane) {
    for (const auto& s : data.ops[lane]) {
      const trace::OpRecord& rec = model.ops[static_cast<size_t>(s.op_record)];
      CHECK(rec.rank == static_cast<int64_t>(lane));
      CHECK(s.redistribute_id == rec.op->id);
      CHECK(s.start == rec.op->t_ns + offset[rec.rank]);
      CHECK(s.end == rec.op->end_ns + offset[rec.rank]);
      CHECK(data.t0 <= s.start);
      CHECK(s.end <= data.t1);
    }
  }
  CHECK(data.t1 - data.t0 > 1);
}
