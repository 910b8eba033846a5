#pragma once
// Merge view: for each flattened step, the raw transforms it replaced, its flattened group and
// avg_scale; for each merge not made, the optimizer's reason and what would enable it.

#include <string>
#include <vector>

#include "app_state.hpp"

namespace shardscope::app::gui {

/// The merge panel. Main thread only.
class MergePanel {
 public:
  /// Matches flattened steps with the raw transforms they replaced. No ImGui calls.
  void Prepare(const ViewContext& ctx);
  /// Draws merged steps and skipped merges.
  void Draw(ViewContext& ctx);
  /// The redistribute whose merges the panel holds and the step it highlights.
  PanelShows shows() const { return shows_; }

 private:
  struct Merged {
    size_t step = 0;
    std::vector<size_t> replaced;  ///< indices into raw_plan
    std::vector<int64_t> group;    ///< the focus rank's flattened group
  };
  // Keyed on the model and the id, never on the view's address (rebuilt in place by the app).
  const trace::Model* key_model_ = nullptr;
  uint64_t key_serial_ = 0;  // ViewContext::model_serial of key_model_
  int64_t key_id_ = -1;
  int64_t key_focus_ = -1;
  PanelShows shows_;
  std::vector<Merged> merged_;
};

}  // namespace shardscope::app::gui
