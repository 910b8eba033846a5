#include "geometry_json.hpp"

namespace shardscope::app::gui {
namespace {

nlohmann::json Rect(float x0, float y0, float x1, float y1) { return {x0, y0, x1, y1}; }

nlohmann::json CompareJson(const std::vector<DiffCompareRow>& rows) {
  nlohmann::json out = nlohmann::json::array();
  for (const DiffCompareRow& r : rows)
    out.push_back({{"what", r.what},
                   {"baseline", r.baseline},
                   {"candidate", r.candidate},
                   {"differs", r.differs},
                   {"change", r.change}});
  return out;
}

nlohmann::json TotalsJson(const std::vector<KindTotals>& totals) {
  nlohmann::json out = nlohmann::json::array();
  for (const KindTotals& t : totals)
    out.push_back({{"kind", t.kind},
                   {"calls", {t.calls[0], t.calls[1]}},
                   {"bytes", {t.bytes[0], t.bytes[1]}},
                   {"time_ns", {t.time_ns[0], t.time_ns[1]}}});
  return out;
}

nlohmann::json DiffJson(const DiffPanel& diff) {
  auto id = [](const std::optional<int64_t>& v) { return v ? nlohmann::json(*v) : nlohmann::json(); };
  auto rows = [&](const std::vector<DiffRowGeometry>& geometry) {
    nlohmann::json out = nlohmann::json::array();
    for (const DiffRowGeometry& g : geometry) {
      out.push_back({{"row", g.row},
                     {"kind", g.kind},
                     {"side", g.side},
                     {"baseline_id", id(g.baseline_id)},
                     {"candidate_id", id(g.candidate_id)},
                     {"rect", Rect(g.x0, g.y0, g.x1, g.y1)},
                     {"marker", Rect(g.mx0, g.my0, g.mx1, g.my1)}});
    }
    return out;
  };
  const DiffView& view = diff.view();
  const DiffOverlayGeometry& o = diff.overlay();
  nlohmann::json overlay;
  if (o.shown) {
    nlohmann::json bars = nlohmann::json::array();
    for (const DiffOverlayBar& b : o.bars)
      bars.push_back({{"side", b.side == 0 ? "baseline" : "candidate"},
                      {"lane", b.lane},
                      {"id", b.id},
                      {"op", b.op},
                      {"selected", b.selected},
                      {"rect", Rect(b.x0, b.y0, b.x1, b.y1)}});
    overlay = {{"plot", Rect(o.x0, o.y0, o.x1, o.y1)},
               {"view_start_ns", o.view_start_ns},
               {"view_end_ns", o.view_end_ns},
               {"duration_ns", {o.duration_ns[0], o.duration_ns[1]}},
               {"lanes", o.lanes},
               {"per_rank", o.per_rank},
               {"bars", bars}};
  }
  return {{"rows", rows(diff.row_geometry())},
          {"overlay", overlay},
          {"steps", rows(diff.step_geometry())},
          {"selected_row", diff.selected_row()},
          {"summary", view.summary},
          {"compare", CompareJson(diff.compare())},
          {"kind_totals", TotalsJson(diff.totals())},
          {"differences", view.result.differences.size()},
          {"error", view.error}};
}

// The profiler view: plot, visible range, lanes, the selected collective and the spans drawn.
nlohmann::json ProfilerJson(const ProfilerGeometry& p) {
  nlohmann::json items = nlohmann::json::array();
  for (const ProfilerItemGeometry& i : p.items)
    items.push_back({{"kind", i.kind},
                     {"rank", i.rank},
                     {"collective", i.collective},
                     {"seq", i.seq},
                     {"label", i.label},
                     {"last", i.last},
                     {"selected", i.selected},
                     {"rect", Rect(i.x0, i.y0, i.x1, i.y1)}});
  nlohmann::json waits = nlohmann::json::object();
  for (const auto& [rank, ns] : p.waits) waits[std::to_string(rank)] = ns;
  nlohmann::json stragglers = nlohmann::json::array();
  for (const auto& [rank, count] : p.stragglers) stragglers.push_back({rank, count});
  return {{"active", p.active},
          {"building", p.building},
          {"plot", Rect(p.plot_x0, p.y0, p.plot_x1, p.y1)},
          {"view_start_ns", p.view_start_ns},
          {"view_end_ns", p.view_end_ns},
          {"t0_ns", p.t0_ns},
          {"trace_ns", p.trace_ns},
          {"lanes", p.lanes},
          {"first_lane", p.first_lane},
          {"ops", p.ops},
          {"kernels", p.kernels},
          {"depth", p.depth},
          {"show_ops", p.show_ops},
          {"matched", p.matched},
          {"unmatched", p.unmatched},
          {"draw_items", p.draw_items},
          {"selected", p.selected},
          {"selected_kind", p.selected_kind},
          {"selected_pg", p.selected_pg},
          {"selected_seq", p.selected_seq},
          {"selected_step", p.selected_step},
          {"selected_bytes", p.selected_bytes},
          {"selected_time_ns", p.selected_time_ns},
          {"last_rank", p.last_rank},
          {"waits", waits},
          {"focus_rank", p.focus_rank},
          {"stragglers", stragglers},
          {"items", items}};
}

// The timeline's plot, visible range, rows on screen, expanded groups, measured range and go-to.
nlohmann::json TimelineJson(const TimelineGeometry& t) {
  nlohmann::json rows = nlohmann::json::array();
  for (const TimelineRowGeometry& r : t.visible) {
    rows.push_back({{"group", r.group},
                    {"rank", r.rank},
                    {"label", r.label},
                    {"pinned", r.pinned},
                    {"rect", Rect(r.x0, r.y0, r.x1, r.y1)}});
  }
  nlohmann::json menu = nlohmann::json::array();
  for (const auto& m : t.menu) menu.push_back({{"label", m.label}, {"rect", Rect(m.x0, m.y0, m.x1, m.y1)}});
  // The measured range's contents: ns from the trace start, per rank with something in it.
  nlohmann::json range;
  if (t.has_measure) {
    nlohmann::json ranks = nlohmann::json::array();
    for (const RangeRankStats& r : t.range.ranks)
      ranks.push_back({{"rank", r.rank},
                       {"redistributes", r.redistributes},
                       {"ops", r.ops},
                       {"collectives", r.collectives},
                       {"bytes_sent", r.bytes_sent},
                       {"busy_ns", r.busy_ns}});
    range = {{"start_ns", t.range.start_ns - t.t0_ns},
             {"end_ns", t.range.end_ns - t.t0_ns},
             {"redistributes", t.range.redistributes},
             {"ops", t.range.ops},
             {"collectives", t.range.collectives},
             {"bytes_sent", t.range.bytes_sent},
             {"ranks", ranks},
             {"box", Rect(t.range_box_x0, t.range_box_y0, t.range_box_x1, t.range_box_y1)}};
  }
  return {{"plot", Rect(t.plot_x0, t.y0, t.plot_x1, t.y1)},
          {"range", range},
          {"view_start_ns", t.view_start_ns},
          {"view_end_ns", t.view_end_ns},
          {"trace_ns", t.trace_ns},
          {"rows", t.rows},
          {"first_row", t.first_row},
          {"expanded", t.expanded},
          {"pinned", t.pinned},
          {"lane_menu", menu},
          {"visible_rows", rows},
          {"measure",
           t.has_measure ? nlohmann::json::array({t.measure_start_ns, t.measure_end_ns}) : nlohmann::json()},
          {"goto_rank", t.goto_rank},
          {"goto_error", t.goto_error},
          {"scrollbar", t.scrollbar}};
}

}  // namespace

nlohmann::json GeometryJson(const GeometrySources& s) {
  nlohmann::json j;
  j["width"] = s.width;
  j["height"] = s.height;
  j["view"] = s.view;
  j["draw_vertices"] = s.draw_vertices;
  j["canvases"] = nlohmann::json::array();
  for (const auto& [side, c] : *s.canvases) {
    j["canvases"].push_back(
        {{"which", c.which},
         {"side", side},
         {"rect", Rect(c.x0, c.y0, c.x1, c.y1)},
         {"row_dim", c.row_dim},
         {"col_dim", c.col_dim},
         {"rows", c.rows},
         {"cols", c.cols},
         {"redistribute_id", c.redistribute_id},
         {"step", c.step},
         {"slice", c.slice},
         {"focus_rank", c.focus_rank},
         {"focus_rect", c.focus_x1 > c.focus_x0 ? Rect(c.focus_x0, c.focus_y0, c.focus_x1, c.focus_y1)
                                                : nlohmann::json()}});
  }
  j["diff"] = s.diff ? DiffJson(*s.diff) : nlohmann::json();
  j["timeline"] = s.timeline ? TimelineJson(s.timeline->geometry()) : nlohmann::json();
  j["profiler"] =
      s.profiler && s.profiler->OwnsMain() ? ProfilerJson(s.profiler->geometry()) : nlohmann::json();
  j["program"] = nlohmann::json::array();
  for (const ProgramItemGeometry& g : s.program->geometry()) {
    j["program"].push_back({{"kind", g.kind},
                            {"op_id", g.op_id},
                            {"input", g.input},
                            {"redistribute_id", g.redistribute_id},
                            {"tensor", g.tensor},
                            {"rect", Rect(g.x0, g.y0, g.x1, g.y1)}});
  }
  j["flight"] = nlohmann::json::array();
  for (const FlightItemGeometry& g : s.flight->geometry()) {
    j["flight"].push_back({{"kind", g.kind},
                           {"rank", g.rank},
                           {"seq", g.seq},
                           {"incomplete", g.incomplete},
                           {"label", g.label},
                           {"rect", Rect(g.x0, g.y0, g.x1, g.y1)}});
  }
  // Per panel: which redistribute, step and op it shows (-1: none), so tests can check that every
  // panel follows a selection made by keys or clicks.
  j["panels"] = nlohmann::json::array();
  for (const PanelGeometry& p : *s.panels) {
    j["panels"].push_back({{"panel", p.panel},
                           {"rect", Rect(p.x0, p.y0, p.x1, p.y1)},
                           {"redistribute_id", p.shows.redistribute_id},
                           {"step", p.shows.step},
                           {"op_id", p.shows.op_id},
                           {"content_w", p.content_w},
                           {"room_w", p.room_w}});
  }
  j["list_rows"] = nlohmann::json::array();
  for (const auto& r : s.list->row_geometry())
    j["list_rows"].push_back(
        {{"id", r.id}, {"kind", r.op ? "op" : "redistribute"}, {"rect", Rect(r.x0, r.y0, r.x1, r.y1)}});
  j["search"] = {
      {"query", s.list->query()}, {"hits", s.list->hit_count()}, {"focused", s.list->search_active()}};
  j["stats"] = nlohmann::json::array();
  if (s.stats) {
    for (const StatsItemGeometry& g : s.stats->geometry())
      j["stats"].push_back({{"table", g.table},
                            {"text", g.text},
                            {"header", g.header},
                            {"rect", Rect(g.x0, g.y0, g.x1, g.y1)}});
  }
  if (s.mesh) {  // the mesh panel: ranks or overview blocks, and the bytes it sums
    nlohmann::json cells = nlohmann::json::array();
    for (const MeshCellGeometry& c : s.mesh->cells())
      cells.push_back(
          {{"kind", c.block ? "block" : "rank"}, {"id", c.id}, {"rect", Rect(c.x0, c.y0, c.x1, c.y1)}});
    j["mesh"] = {{"cells", cells},
                 {"blocks", s.mesh->block_count()},
                 {"drill_block", s.mesh->drill_block()},
                 {"data_bytes", s.mesh->totals().data},
                 {"negotiation_bytes", s.mesh->totals().negotiation},
                 {"matrix_total", s.mesh->matrix_total()},
                 {"focus_rank", s.mesh->focus_rank()}};
    nlohmann::json arrows = nlohmann::json::array(), labels = nlohmann::json::array();
    for (const MeshArrowGeometry& a : s.mesh->arrows()) {
      nlohmann::json points = nlohmann::json::array();
      for (const auto& [x, y] : a.points) points.push_back({x, y});
      arrows.push_back({{"from", a.from}, {"to", a.to}, {"points", points}});
    }
    for (const MeshLabelGeometry& l : s.mesh->labels())
      labels.push_back({{"text", l.text}, {"rect", Rect(l.x0, l.y0, l.x1, l.y1)}});
    j["mesh"]["arrows"] = arrows;
    j["mesh"]["labels"] = labels;
  }
  if (s.layout_table && s.layout_table->shown) {
    j["layout_table"] = {{"first_row", s.layout_table->first},
                         {"last_row", s.layout_table->last},
                         {"focus_rank", s.layout_table->focus_rank}};
  }
  j["trace"] = s.trace;
  j["traces"] = s.traces;
  j["selected_op"] = s.selection->op_id;
  j["selected_redistribute"] = s.selection->redistribute_id;
  j["selected_step"] = s.selection->step;
  const float* r = s.error_rect;
  j["error_panel"] = r && r[2] > r[0] ? Rect(r[0], r[1], r[2], r[3]) : nlohmann::json();
  return j;
}

}  // namespace shardscope::app::gui
