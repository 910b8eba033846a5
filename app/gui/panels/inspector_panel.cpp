#include "panels/inspector_panel.hpp"

#include <algorithm>
#include <cstring>
#include <string>

#include <imgui.h>

#include "shardscope/text.hpp"
#include "shardscope/trace/import_verdict.hpp"
#include "widgets.hpp"

namespace shardscope::app::gui {
namespace {

void PlanTable(const char* id, const std::vector<trace::PlanStep>& plan, int64_t highlight,
               const engine::Mesh& mesh) {
  ImGuiTableFlags flags =
      ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_SizingFixedFit;
  // The six columns need about 62 characters; a narrower panel (the main window at 1280 px) gets
  // three, each cell two lines, so that no column is cut at the panel's edge.
  const bool narrow = ImGui::GetContentRegionAvail().x < ImGui::CalcTextSize("M").x * 62;
  if (!ImGui::BeginTable(id, narrow ? 3 : 6, flags)) return;
  ImGui::TableSetupColumn("#");
  if (narrow) {
    SetupColumns({"mesh dims: src -> dst, shape", "comm, predicted"});
  } else {
    SetupPlanStepColumns();
  }
  ImGui::TableHeadersRow();
  for (size_t k = 0; k < plan.size(); ++k) {
    const trace::PlanStep& s = plan[k];
    ImGui::TableNextRow();
    if (static_cast<int64_t>(k) == highlight) {
      ImGui::TableSetBgColor(ImGuiTableBgTarget_RowBg0, IM_COL32(120, 95, 20, 200));
    }
    ImGui::TableNextColumn();
    ImGui::Text("%zu", k);
    if (!narrow) {
      PlanStepCells(s, FormatMeshDims(s.mesh_dims, mesh));
      continue;
    }
    ImGui::TableNextColumn();
    ImGui::Text("%s%s: %s -> %s", FormatMeshDims(s.mesh_dims, mesh).c_str(), s.flattened ? " flat" : "",
                s.src.c_str(), s.dst.c_str());
    ImGui::TextDisabled("logical %s", FormatInts(s.logical_shape).c_str());
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(s.comm.c_str());
    ImGui::TextDisabled("%.1f us", s.cost_us);
  }
  ImGui::EndTable();
}

// An imported redistribute: the plan the other tool recorded, beside shardscope's above.
void ImportedPlanLines(const trace::ImportedPlan& p) {
  std::string recorded;
  for (const auto& c : p.collectives) {
    recorded += (recorded.empty() ? "" : ", ") + c.kind +
                (c.group_size >= 0 ? " over " + std::to_string(c.group_size) : std::string()) + " (group " +
                c.group_name + ")";
  }
  ImGui::TextWrapped("PyTorch (%s line %lld): %s", p.source.c_str(), static_cast<long long>(p.line),
                     p.notation.empty() ? "no notation recorded" : p.notation.c_str());
  ImGui::TextDisabled("recorded: %s", recorded.empty() ? "no collectives" : recorded.c_str());
  ImVec4 colour = trace::ParseImportVerdict(p.verdict) == trace::ImportVerdict::kSame
                      ? ImVec4(0.55f, 0.85f, 0.55f, 1.0f)
                      : ImVec4(kDiffColor.r / 255.0f, kDiffColor.g / 255.0f, kDiffColor.b / 255.0f, 1.0f);
  ImGui::TextColored(colour, "verdict: %s", p.verdict.c_str());
  if (!p.reason.empty()) ImGui::TextWrapped("%s", p.reason.c_str());
}

// Step controls: buttons (the arrow keys and play are the App's), and which step is shown.
void StepControls(Selection& sel, int64_t steps) {
  if (ImGui::ArrowButton("##prev", ImGuiDir_Left)) sel.step = std::max<int64_t>(0, sel.step - 1);
  ImGui::SameLine();
  if (ImGui::ArrowButton("##next", ImGuiDir_Right))
    sel.step = std::min(sel.step + 1, std::max<int64_t>(0, steps - 1));
  ImGui::SameLine();
  if (ImGui::Button(sel.playing ? "pause" : "play")) {
    sel.playing = !sel.playing;
    if (sel.playing && sel.step + 1 >= steps) sel.step = 0;
  }
  ImGui::SameLine();
  // Steps are numbered from 0 in every panel, as in the trace, `show` and `plan`.
  if (steps > 0) {
    // "step 0 of 0..0" read as a range to nobody: say which step of how many.
    ImGui::Text("step %lld (%lld step%s, from 0)", static_cast<long long>(sel.step),
                static_cast<long long>(steps), steps == 1 ? "" : "s");
    if (ImGui::IsItemHovered())
      ImGui::SetTooltip("steps of the optimized plan, numbered from 0 as in the trace, `show` and `plan`");
  } else {
    ImGui::TextUnformatted("no steps");
  }
}

// Step `step` (plan step `s`): what it does, its predicted and measured time and bytes.
void StepFigures(const RedistributeView& view, const trace::PlanStep& s, int64_t step) {
  ImGui::TextWrapped("mesh dims %s  %s -> %s  %s%s", FormatMeshDims(s.mesh_dims, view.mesh).c_str(),
                     s.src.c_str(), s.dst.c_str(), s.comm.c_str(), s.flattened ? "  (flattened)" : "");
  const StepMeasure& m = view.steps[static_cast<size_t>(step)];
  // Both in one unit (FormatTimeNs); the measured time is the slowest rank's, named.
  const std::string slowest =
      m.slowest_rank >= 0 ? " (slowest: r" + std::to_string(m.slowest_rank) + ")" : "";
  ImGui::TextWrapped("predicted %s   measured %s%s", FormatTimeNs(m.predicted_us * 1e3).c_str(),
                     m.measured_max_ns ? FormatTimeNs(*m.measured_max_ns).c_str() : "-", slowest.c_str());
  ImGui::TextWrapped("bytes sent %s in %lld collective calls",
                     FormatBytes(static_cast<double>(m.bytes_sent)).c_str(),
                     static_cast<long long>(m.collectives));
}

// Whole-redistribute figures: total times, and ranks that finished, failed or never ended.
void RankOutcomes(const RedistributeView& view, double cost_us) {
  int64_t ok = 0, failed = 0, incomplete = 0, min_ns = -1, max_ns = -1;
  for (const trace::RedistributeRecord* rec : view.per_rank) {
    if (!rec->end) {
      ++incomplete;
      continue;
    }
    rec->end->ok ? ++ok : ++failed;
    int64_t d = rec->end->t_ns - rec->begin->t_ns;
    min_ns = min_ns < 0 ? d : std::min(min_ns, d);
    max_ns = std::max(max_ns, d);
  }
  ImGui::TextWrapped("total: predicted %.1f us  measured %s .. %s", cost_us,
                     min_ns >= 0 ? FormatTimeNs(static_cast<double>(min_ns)).c_str() : "-",
                     max_ns >= 0 ? FormatTimeNs(static_cast<double>(max_ns)).c_str() : "-");
  ImGui::Text("%lld of %zu ranks finished ok", static_cast<long long>(ok), view.per_rank.size());
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("ranks whose redistribute_end says ok (failed: an error; incomplete: no end event)");
  if (failed) {
    ImGui::SameLine();
    ImGui::TextColored(ImVec4(1, 0.4f, 0.4f, 1), "failed %lld", static_cast<long long>(failed));
  }
  if (incomplete) {
    ImGui::SameLine();
    ImGui::TextColored(ImVec4(1, 0.75f, 0.3f, 1), "incomplete %lld", static_cast<long long>(incomplete));
  }
  for (const trace::RedistributeRecord* rec : view.per_rank) {
    if (rec->end && !rec->end->ok) {
      ImGui::TextColored(ImVec4(1, 0.5f, 0.5f, 1), "r%lld: %s", static_cast<long long>(rec->rank),
                         rec->end->error.c_str());
      break;
    }
  }
  if (!view.error.empty()) ImGui::TextColored(ImVec4(1, 0.5f, 0.5f, 1), "%s", view.error.c_str());
}

}  // namespace

void InspectorPanel::Prepare(const ViewContext& /*ctx*/) {}

void InspectorPanel::Draw(ViewContext& ctx) {
  const RedistributeView* view = ctx.redistribute;
  shows_ = view && view->first ? PanelShows{view->id, ctx.selection->step, -1} : PanelShows{};
  if (!view || !view->first) {
    NoRedistributeHint(ctx.model, "No redistribute selected (Up/Down, or a click in the list or timeline).");
    return;
  }
  const trace::RedistributeBegin& b = view->first->begin;
  Selection& sel = *ctx.selection;
  int64_t steps = view->num_steps();
  ImGui::TextWrapped("#%lld  %s  %s  %s", static_cast<long long>(b.id),
                     b.tensor().empty() ? "(anonymous)" : b.tensor().c_str(),
                     FormatInts(b.global_shape()).c_str(), b.dtype().c_str());
  ImGui::TextWrapped("%s -> %s", Join(b.src_placements(), ",").c_str(),
                     Join(b.dst_placements(), ",").c_str());
  if (b.op_id >= 0) {
    // An implicit redistribute: name the op input it placed (the program view shows the op).
    const trace::OpRecord* op = ctx.model ? ctx.model->FindOp(view->first->rank, b.op_id) : nullptr;
    ImGui::TextDisabled("implicit: input %lld of op #%lld %s", static_cast<long long>(b.op_input),
                        static_cast<long long>(b.op_id), op ? op->op->name().c_str() : "");
  }
  if (!b.src_order().empty() || !b.dst_order().empty()) {
    ImGui::TextDisabled("order %s -> %s", b.src_order().empty() ? "default" : b.src_order().c_str(),
                        b.dst_order().empty() ? "default" : b.dst_order().c_str());
  }
  ImGui::Text("planner %s", b.planner().c_str());
  if (!b.planner_reason().empty()) {
    ImGui::SameLine();
    ImGui::TextDisabled("(%s)", b.planner_reason().c_str());
  }
  ImGui::Spacing();
  NotationText(b.notation(), sel.step);
  if (b.notation_unoptimized() != b.notation())
    ImGui::TextDisabled("unoptimized: %s", b.notation_unoptimized().c_str());
  if (b.imported) ImportedPlanLines(*b.imported);
  ImGui::Spacing();

  StepControls(sel, steps);
  if (steps > 0) StepFigures(*view, b.optimized_plan()[static_cast<size_t>(sel.step)], sel.step);
  RankOutcomes(*view, b.cost_us());
  ImGui::Spacing();
  ImGui::TextDisabled("optimized plan (executed)");
  PlanTable("##optimized", b.optimized_plan(), sel.step, view->mesh);
  if (b.raw_plan() != b.optimized_plan()) {
    ImGui::TextDisabled("raw plan (planner output)");
    PlanTable("##raw", b.raw_plan(), -1, view->mesh);
  }
}

void RedistributeListPanel::Prepare(const ViewContext& ctx) {
  if (ctx.model == key_model_ && ctx.model_serial == key_serial_) return;
  key_model_ = ctx.model, key_serial_ = ctx.model_serial;
  entries_.clear();
  key_query_ = "\x01";  // recompute the hits
  if (ctx.model) entries_ = BuildSearchIndex(*ctx.model);
}

void RedistributeListPanel::SetQuery(const std::string& query) {
  const size_t n = std::min(query.size(), sizeof filter_ - 1);
  std::memcpy(filter_, query.data(), n);
  filter_[n] = '\0';
}

void RedistributeListPanel::Draw(ViewContext& ctx) {
  shows_ = {};
  row_geometry_.clear();
  if (!ctx.model) {
    ImGui::TextDisabled("no trace loaded");
    return;
  }
  ImGui::SetNextItemWidth(-1);
  if (focus_search_) {  // Ctrl+F
    ImGui::SetKeyboardFocusHere();
    focus_search_ = false;
  }
  ImGui::InputTextWithHint("##filter",
                           "search (Ctrl+F): tensor, placement, collective, op, rN, verdict, line N", filter_,
                           sizeof filter_);
  search_active_ = ImGui::IsItemActive();
  if (key_query_ != filter_) {
    key_query_ = filter_;
    hits_.clear();
    // No query: the redistributes (the list); a query: every matching redistribute and op.
    const bool has_redistributes = std::any_of(entries_.begin(), entries_.end(), [](const SearchEntry& e) {
      return e.kind == SearchEntry::Kind::kRedistribute;
    });
    for (size_t i : Search(entries_, key_query_)) {
      // A trace without redistributes (a halo-only program) lists its ops instead of nothing.
      if (!key_query_.empty() || entries_[i].kind == SearchEntry::Kind::kRedistribute || !has_redistributes)
        hits_.push_back(i);
    }
  }
  ImGui::BeginChild("##rows");
  shows_.redistribute_id = ctx.selection->redistribute_id;
  if (hits_.empty()) ImGui::TextDisabled(entries_.empty() ? "no redistributes in this trace" : "no matches");
  ImGuiListClipper clipper;
  clipper.Begin(static_cast<int>(hits_.size()));
  while (clipper.Step()) {
    for (int i = clipper.DisplayStart; i < clipper.DisplayEnd; ++i) {
      const SearchEntry& r = entries_[hits_[static_cast<size_t>(i)]];
      const bool op = r.kind == SearchEntry::Kind::kOp;
      // Failed runs and imported plans that PyTorch got wrong (corrupting_merge) in red, other
      // verdicts (differs, not_replayable) in amber; the text carries the mark too.
      const bool red =
          r.failed || trace::ParseImportVerdict(r.verdict) == trace::ImportVerdict::kCorruptingMerge;
      const bool coloured = red || !r.verdict.empty();
      if (coloured)
        ImGui::PushStyleColor(ImGuiCol_Text,
                              red ? IM_COL32(255, 130, 120, 255) : IM_COL32(240, 200, 110, 255));
      ImGui::PushID(op ? -1 - i : i);
      const bool selected = op ? r.id == ctx.selection->op_id : r.id == ctx.selection->redistribute_id;
      if (ImGui::Selectable(r.text.c_str(), selected)) {
        if (op) {
          ctx.selection->op_id = r.id;
        } else {
          ctx.selection->redistribute_id = r.id;
          ctx.selection->step = 0;
        }
      }
      ImGui::PopID();
      if (coloured) ImGui::PopStyleColor();
      const ImVec2 a = ImGui::GetItemRectMin(), b = ImGui::GetItemRectMax();
      row_geometry_.push_back({r.id, a.x, a.y, b.x, b.y, op});
    }
  }
  ImGui::EndChild();
}

}  // namespace shardscope::app::gui
