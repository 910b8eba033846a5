#include "panels/stats_panel.hpp"

#include <algorithm>

#include <imgui.h>

#include "view_model.hpp"
#include "widgets.hpp"

namespace shardscope::app::gui {

void StatsPanel::Prepare() {
  // Refilled by Draw when the panel is drawn this frame. The tables are computed when first drawn
  // (Draw calls Refresh): a trace never shown in this view costs nothing.
  geometry_.clear();
}

void StatsPanel::Refresh(const ViewContext& ctx) {
  if (key_model_ == ctx.model && key_serial_ == ctx.model_serial) return;
  key_model_ = ctx.model, key_serial_ = ctx.model_serial;
  stats_ = ctx.model ? ComputeTraceStats(*ctx.model) : TraceStats{};
  SortStatsRows(stats_.kinds, kind_sort_.column, kind_sort_.ascending);
  SortStatsRows(stats_.redistributes, redistribute_sort_.column, redistribute_sort_.ascending);
}

void StatsPanel::Draw(ViewContext& ctx) {
  shows_ = {};
  Refresh(ctx);
  if (!ctx.model) {
    ImGui::TextDisabled("No trace loaded.");
    return;
  }
  const int64_t selected = ctx.selection->redistribute_id;
  for (const StatsRow& r : stats_.redistributes) {
    if (r.id == selected) shows_.redistribute_id = selected;
  }
  const float row_h = ImGui::GetFrameHeight();
  const float avail = ImGui::GetContentRegionAvail().y;
  // The kinds table takes what its rows need (at most half), the redistributes the rest.
  const float kinds_h = std::clamp(row_h * (static_cast<float>(stats_.kinds.size()) + 1.5f), row_h * 2.5f,
                                   std::max(row_h * 2.5f, avail * 0.5f));
  ImGui::Text("Collectives by kind (%zu)", stats_.kinds.size());
  DrawTable("kinds", "Kind", stats_.kinds, kind_sort_, kinds_h, ctx);
  ImGui::Text("Redistributes (%zu)  click a row to select it", stats_.redistributes.size());
  DrawTable("redistributes", "Redistribute", stats_.redistributes, redistribute_sort_, 0.0f, ctx);
}

void StatsPanel::DrawTable(const char* table, const char* label_header, std::vector<StatsRow>& rows,
                           Sort& sort, float height, ViewContext& ctx) {
  const ImGuiTableFlags flags = ImGuiTableFlags_Sortable | ImGuiTableFlags_Resizable | ImGuiTableFlags_RowBg |
                                ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_ScrollY |
                                ImGuiTableFlags_SizingFixedFit;
  float h = height > 0 ? height : std::max(ImGui::GetContentRegionAvail().y, ImGui::GetFrameHeight() * 3);
  if (!ImGui::BeginTable(table, 7, flags, ImVec2(0, h))) return;
  ImGui::TableSetupScrollFreeze(0, 1);
  ImGui::TableSetupColumn(label_header,
                          ImGuiTableColumnFlags_DefaultSort | ImGuiTableColumnFlags_WidthStretch, 0,
                          static_cast<ImGuiID>(StatsColumn::kLabel));
  const char* const names[] = {label_header, "Count", "Bytes", "Total", "Mean", "Max", "Slowest rank"};
  for (int c = 1; c < 7; ++c) {
    ImGui::TableSetupColumn(names[c], ImGuiTableColumnFlags_PreferSortDescending, 0, static_cast<ImGuiID>(c));
  }
  // The headers one by one (what TableHeadersRow submits), so --geometry can say where each landed.
  ImGui::TableNextRow(ImGuiTableRowFlags_Headers);
  for (int c = 0; c < 7; ++c) {
    if (!ImGui::TableSetColumnIndex(c)) continue;
    ImGui::TableHeader(names[c]);
    RecordItem(table, names[c], true);
  }
  if (ImGuiTableSortSpecs* specs = ImGui::TableGetSortSpecs(); specs && specs->SpecsDirty) {
    if (specs->SpecsCount > 0) {
      sort.column = static_cast<StatsColumn>(specs->Specs[0].ColumnUserID);
      sort.ascending = specs->Specs[0].SortDirection == ImGuiSortDirection_Ascending;
      SortStatsRows(rows, sort.column, sort.ascending);
    }
    specs->SpecsDirty = false;
  }
  // Only the rows in view are submitted (a 1M-line import has 147k redistributes: submitting every
  // row took 170 ms a frame); --geometry reports those.
  ImGuiListClipper clipper;
  clipper.Begin(static_cast<int>(rows.size()));
  while (clipper.Step()) {
    for (int i = clipper.DisplayStart; i < clipper.DisplayEnd; ++i)
      DrawRow(rows[static_cast<size_t>(i)], table, ctx);
  }
  ImGui::EndTable();
}

void StatsPanel::RecordItem(const char* table, const std::string& text, bool header) {
  const ImVec2 a = ImGui::GetItemRectMin(), b = ImGui::GetItemRectMax();
  geometry_.push_back({table, text, header, a.x, a.y, b.x, b.y});
}

void StatsPanel::DrawRow(const StatsRow& r, const char* table, ViewContext& ctx) {
  ImGui::TableNextRow();
  ImGui::TableNextColumn();
  if (r.id >= 0) {
    ImGui::PushID(static_cast<int>(r.id));
    if (ImGui::Selectable(r.label.c_str(), r.id == ctx.selection->redistribute_id,
                          ImGuiSelectableFlags_SpanAllColumns)) {
      ctx.selection->redistribute_id = r.id;
      ctx.selection->step = 0;
    }
    ImGui::PopID();
  } else {
    ImGui::TextUnformatted(r.label.c_str());
  }
  RecordItem(table, r.label, false);
  ImGui::TableNextColumn();
  ImGui::Text("%lld", static_cast<long long>(r.count));
  ImGui::TableNextColumn();
  ImGui::TextUnformatted(FormatBytes(static_cast<double>(r.bytes)).c_str());
  const bool timed = r.timed > 0;
  for (double ns : {static_cast<double>(r.total_ns), r.mean_ns, static_cast<double>(r.max_ns)}) {
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(timed ? FormatTimeNs(ns).c_str() : "-");
  }
  ImGui::TableNextColumn();
  if (timed)
    RankSwatch(r.slowest_rank, ctx.world());
  else
    ImGui::TextDisabled("-");
}

}  // namespace shardscope::app::gui
