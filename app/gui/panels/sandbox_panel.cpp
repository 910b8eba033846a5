#include "panels/sandbox_panel.hpp"

#include <imgui.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <utility>

#include "sample_data.hpp"
#include "shardscope/engine/core/shard_order.hpp"
#include "shardscope/program/runner.hpp"
#include "shardscope/trace/reader.hpp"
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

struct SandboxPanel::Request {
  engine::TensorSpec src, dst;
  engine::PlanOptions options;
  std::string title;
};

SandboxPanel::Request SandboxPanel::MakeRequest() const {
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
  Request req;
  req.src = engine::MakeSpec(mesh, engine::ParsePlacements(src_, "src"), order(src_order_), shape, dtype,
                             engine::ChunkRule::kTorch, {}, "src");
  req.dst = engine::MakeSpec(mesh, engine::ParsePlacements(dst_, "dst"), order(dst_order_), shape, dtype,
                             engine::ChunkRule::kTorch, {}, "dst");
  req.options.planner = planner_ == 1   ? engine::PlannerChoice::kGreedy
                        : planner_ == 2 ? engine::PlannerChoice::kGraph
                                        : engine::PlannerChoice::kAuto;
  req.options.optimize = optimize_;
  req.options.internal_partial_target = internal_partial_;
  req.title = mesh.ToString() + " " + std::string(src_) + " -> " + std::string(dst_);
  return req;
}

void SandboxPanel::PlanOnly() {
  // A new attempt replaces the previous outcome: no stale success line beside a new error.
  error_.clear();
  summary_.clear();
  try {
    Request req = MakeRequest();
    auto model = ModelFromPlans({{"sandbox", req.src, req.dst, req.options}}, "sandbox (plan only)");
    title_ = req.title + " (plan only)";
    const auto& b = *model->redistributes.front().begin;
    summary_ = "planned on " + std::to_string(req.src.mesh.size()) + " ranks: " + b.notation() + "  (" +
               b.planner() + ", " + std::to_string(b.optimized_plan().size()) + " steps, predicted " +
               std::to_string(b.cost_us()) + " us; times synthetic)";
    result_ = model;
  } catch (const std::exception& e) {
    error_ = e.what();
  }
}

void SandboxPanel::RunLocal() {
  if (running_.valid()) return;
  error_.clear();
  summary_.clear();
  try {
    Request req = MakeRequest();
    program::Scenario scenario;
    scenario.path = "<sandbox>";
    scenario.mesh = req.src.mesh;
    program::ScenarioTensor tensor;
    tensor.name = "sandbox";
    tensor.spec = req.src;
    tensor.shapes = engine::ShapeMode::kKnown;
    tensor.seed = 1;
    scenario.tensors.push_back(std::move(tensor));
    program::ScenarioStep step;
    step.tensor = "sandbox";
    step.to = req.dst.placements;
    step.order = req.dst.shard_order;
    step.options = req.options;
    scenario.steps.push_back(step);
    std::filesystem::path dir =
        std::filesystem::temp_directory_path() /
        ("shardscope-sandbox-" + std::to_string(::getpid()) + "-" + std::to_string(++run_counter_));
    running_title_ = req.title;
    progress_->store(0);
    auto progress = progress_;
    // The run and the trace read happen off the UI thread; ranks are threads of this process.
    running_ =
        std::async(std::launch::async, [scenario, dir, progress]() -> std::shared_ptr<const trace::Model> {
          program::RunOptions options;
          options.backend = "local";
          options.trace_dir = dir;
          options.verify = true;
          options.progress = [progress](int64_t done, int64_t) { progress->store(done); };
          program::RunScenario(scenario, options);
          return std::make_shared<trace::Model>(trace::ReadTraceDir(dir));
        });
  } catch (const std::exception& e) {
    error_ = e.what();
  }
}

void SandboxPanel::Prepare() {
  if (!running_.valid() || running_.wait_for(std::chrono::seconds(0)) != std::future_status::ready) return;
  try {
    auto model = running_.get();
    title_ = running_title_ + " (local)";
    const auto& b = *model->redistributes.front().begin;
    summary_ = "ran on the local backend, verified against the definition: " + b.notation() + "  (" +
               b.planner() + ", " + std::to_string(b.optimized_plan().size()) + " steps)";
    result_ = model;
  } catch (const std::exception& e) {
    error_ = e.what();
    summary_.clear();
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
  ImGui::Checkbox("allow R -> P targets (PyTorch's internal path; the public API refuses them)",
                  &internal_partial_);
  ImGui::PopItemWidth();
  ImGui::BeginDisabled(running_.valid());
  if (ImGui::Button("Run on local backend")) RunLocal();
  ImGui::EndDisabled();
  ImGui::SameLine();
  if (ImGui::Button("Plan only")) PlanOnly();
  if (running_.valid()) {
    ImGui::SameLine();
    ImGui::Text("running %s ...", running_title_.c_str());
  }
  ImGui::TextDisabled(
      "Run: ranks as threads, traced and verified; Plan only: engine plans with synthetic times");
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
