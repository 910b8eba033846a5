#pragma once
// Error panel: traces that failed to load (the reader's "file:line: message") and the recoverable
// diagnostics of loaded ones, on a background colour no rank uses (kErrorPanelColor).

#include <string>
#include <vector>

#include "app_state.hpp"

namespace shardscope::app::gui {

/// A trace that could not be loaded.
struct LoadFailure {
  std::string path;     ///< as given on the command line
  std::string message;  ///< the reader's message, naming file:line
};

/// Shows load failures (prominently) and diagnostics. Main thread only.
class ErrorPanel {
 public:
  /// Takes the current failures and the diagnostics of `model` (null: none), each line prefixed
  /// with `prefix` (the diff view names the side). No ImGui calls.
  void Prepare(const std::vector<LoadFailure>& failures, const trace::Model* model,
               const std::string& prefix = "");
  /// Adds the diagnostics of a second model (the diff view's candidate). No ImGui calls.
  void AddDiagnostics(const trace::Model* model, const std::string& prefix);
  /// True when there is a load failure to show.
  bool has_failures() const { return !failures_.empty(); }
  /// Draws the failures box (full width, `height` 0 = fit) and the diagnostics list.
  void Draw(float height = 0.0f);
  /// Screen rectangle of the failures box in the last Draw (x0, y0, x1, y1); zeros when none.
  const float* rect() const { return rect_; }

 private:
  std::vector<LoadFailure> failures_;
  static constexpr size_t kMaxListed = 50;  ///< diagnostics kept for the list
  static constexpr size_t kListedOpen = 3;  ///< up to this many are listed without a click
  std::vector<std::string> diagnostics_;    ///< the first kMaxListed, "where: message"
  size_t total_diagnostics_ = 0;            ///< all of them, listed or not
  float rect_[4] = {0, 0, 0, 0};
};

}  // namespace shardscope::app::gui
