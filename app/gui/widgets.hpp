#pragma once
// Shared ImGui widgets of the panels: rank swatches, highlighted plan notation, splitters and
// section titles. Only call between ImGui::NewFrame and ImGui::Render.

#include <cstdint>
#include <initializer_list>
#include <string>

#include <imgui.h>

#include "rank_palette.hpp"
#include "shardscope/trace/events.hpp"
#include "shardscope/trace/model.hpp"

namespace shardscope::app::gui {

/// ImGui colour of a rank (see RankColor).
ImU32 RankImColor(int64_t rank, int64_t world, uint8_t alpha = 255);
/// Colour of a collective kind on the timelines ("all_gather", "reduce_scatter", ...; others share one).
Rgb CollectiveKindColor(const std::string& kind);
/// Black or white, whichever reads better on `background`.
ImU32 ContrastText(Rgb background);
/// A small filled square in the rank's colour followed by "r<rank>" on the same line.
void RankSwatch(int64_t rank, int64_t world);
/// Draws a plan notation such as "S(0)[0]S(0)[1]->S(0)R-->RR" with the placements before and
/// after step `step` (0-based) and the arrow between them highlighted.
void NotationText(const std::string& notation, int64_t step);
/// A draggable splitter between two regions; `size1`/`size2` are updated and kept >= the minima.
/// Returns true while dragged.
bool Splitter(const char* id, bool split_vertically, float thickness, float* size1, float* size2, float min1,
              float min2);
/// A splitter whose first region is `*fraction` of `total` pixels (kept when the window resizes),
/// clamped so both regions keep their minima when `total` allows; returns the first size in pixels.
float SplitterFraction(const char* id, bool split_vertically, float thickness, float total, float* fraction,
                       float min1, float min2);
/// Sets up one table column per name, with default column flags (call between BeginTable and
/// TableHeadersRow).
void SetupColumns(std::initializer_list<const char*> names);
/// ImGui::BeginTable with one column per name and the header row; when it returns true, call
/// ImGui::EndTable after the rows.
bool BeginHeaderTable(const char* id, ImGuiTableFlags flags, std::initializer_list<const char*> names);
/// Sets up the columns every plan table shows after its own: mesh dims, src -> dst, comm, logical
/// shape, pred (the planner's cost).
void SetupPlanStepColumns();
/// Fills those columns for one plan step; `mesh_dims` is the panel's text for the step's mesh dims.
void PlanStepCells(const trace::PlanStep& step, const std::string& mesh_dims);
/// What a redistribute panel says with nothing to show: `fallback` when a redistribute could be
/// selected; for a trace without redistributes (a halo-only program), where its ops and
/// collectives are instead. Takes the model (null: no trace).
void NoRedistributeHint(const trace::Model* model, const char* fallback);
/// A bold-ish section title with a separator.
void SectionTitle(const char* title);
/// Text on a filled rectangle at `pos` (draw-list coordinates).
void LabelBox(ImDrawList* list, ImVec2 pos, const std::string& text, ImU32 background, ImU32 foreground);

}  // namespace shardscope::app::gui
