#include "panels/sandbox_panel.hpp"

#include <imgui.h>

#include "sample_data.hpp"
#include "shardscope/engine/shard_order.hpp"
#include "widgets.hpp"

namespace shardscope::app::gui {
namespace {

std::vector<std::string> SplitNames(const std::string& text) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : text) {
    if (c == ',') {
      out.push_back(cur);
      cur.clear();
    } else if (c != ' ') {
      cur += c;
    }
  }
  if (!cur.empty() || !out.empty()) out.push_back(cur);
  return out;
}

}  // namespace

void SandboxPanel::Build() {
  error_.clear();
  try {
    engine::Shape mesh_shape = engine::ParseShape(mesh_, "mesh", false);
    auto names = SplitNames(names_);
    engine::Mesh mesh(mesh_shape, names.size() == mesh_shape.size() ? names : std::vector<std::string>{});
    if (flatten_) mesh.RegisterAllFlattened();
    engine::Shape shape = engine::ParseShape(shape_, "shape");
    engine::DType dtype = engine::ParseDType(dtype_, "dtype");
    auto order = [](const char* text) -> std::optional<engine::ShardOrder> {
      if (text[0] == '\0') return std::nullopt;
      return engine::ParseShardOrder(text, "order");
    };
    engine::TensorSpec src = engine::MakeSpec(mesh, engine::ParsePlacements(src_, "src"), order(src_order_),
                                              shape, dtype, engine::ChunkRule::kTorch, {}, "src");
    engine::TensorSpec dst = engine::MakeSpec(mesh, engine::ParsePlacements(dst_, "dst"), order(dst_order_),
                                              shape, dtype, engine::ChunkRule::kTorch, {}, "dst");
    engine::PlanOptions options;
    options.planner = planner_ == 1   ? engine::PlannerChoice::kGreedy
                      : planner_ == 2 ? engine::PlannerChoice::kGraph
                                      : engine::PlannerChoice::kAuto;
    options.optimize = optimize_;
    auto model = ModelFromPlans({{"sandbox", src, dst, options}}, "sandbox");
    title_ = mesh.ToString() + " " + std::string(src_) + " -> " + std::string(dst_);
    const auto& b = model->redistributes.front().begin;
    summary_ = "planned on " + std::to_string(mesh.size()) + " ranks: " + b.notation + "  (" + b.planner +
               ", " + std::to_string(b.optimized_plan.size()) + " steps, predicted " +
               std::to_string(b.cost_us) + " us)";
    result_ = model;
  } catch (const std::exception& e) {
    error_ = e.what();
  }
}

void SandboxPanel::Draw(ViewContext& /*ctx*/) {
  SectionTitle("Sandbox: build a redistribute");
  ImGui::PushItemWidth(220);
  ImGui::InputText("mesh (e.g. 2x4)", mesh_, sizeof mesh_);
  ImGui::InputText("mesh dim names", names_, sizeof names_);
  ImGui::InputText("global shape", shape_, sizeof shape_);
  ImGui::InputText("dtype", dtype_, sizeof dtype_);
  ImGui::InputText("src placements", src_, sizeof src_);
  ImGui::InputText("dst placements", dst_, sizeof dst_);
  ImGui::InputTextWithHint("src order", "default, or 0:1,0", src_order_, sizeof src_order_);
  ImGui::InputTextWithHint("dst order", "default, or 0:1,0", dst_order_, sizeof dst_order_);
  const char* planners[] = {"auto", "greedy", "graph"};
  ImGui::Combo("planner", &planner_, planners, 3);
  ImGui::Checkbox("register every flattened sub-mesh (--flatten all)", &flatten_);
  ImGui::Checkbox("flattening optimizer", &optimize_);
  ImGui::PopItemWidth();
  if (ImGui::Button("Plan and open as trace")) Build();
  ImGui::SameLine();
  ImGui::TextDisabled("local backend runs arrive with the executor; this is plan-only (synthetic times)");
  if (!error_.empty()) {
    ImGui::PushTextWrapPos(0.0f);
    ImGui::TextColored(ImVec4(1, 0.45f, 0.45f, 1), "%s", error_.c_str());
    ImGui::PopTextWrapPos();
  }
  if (!summary_.empty()) {
    ImGui::PushTextWrapPos(0.0f);
    ImGui::TextColored(ImVec4(0.6f, 0.9f, 0.6f, 1), "%s", summary_.c_str());
    ImGui::PopTextWrapPos();
    ImGui::TextDisabled("opened in the main window (trace selector in the menu bar)");
  }
}

}  // namespace shardscope::app::gui
