#pragma once
// State shared by the panels for one frame: the active trace, the selection, and the derived
// redistribute view. Plain data; owned by App, main thread only.

#include <cstdint>
#include <memory>
#include <string>

#include "shardscope/trace/model.hpp"
#include "view_model.hpp"

namespace shardscope::app::gui {

class GlRenderer;

/// What the user has selected; panels read and change it.
struct Selection {
  int64_t redistribute_id = -1;  ///< -1: none
  int64_t step = 0;              ///< index into the optimized plan
  int64_t focus_rank = 0;        ///< rank whose groups the mesh and merge views highlight
  bool focus_chosen = false;     ///< the user picked focus_rank (go to rank, a click): layouts outline it
  int64_t op_id = -1;            ///< op selected in the program view (-1: none)
  bool playing = false;          ///< inspector's play: advance one step per period
  /// Esc cleared the selection: nothing is picked by default until the user picks something
  /// (App resets it once a redistribute or op is selected again).
  bool cleared = false;
};

/// What a panel shows (from the data it drew, not from the selection): --geometry reports it per
/// panel so tests can check that every panel follows a selection change. -1: nothing of that kind.
struct PanelShows {
  int64_t redistribute_id = -1;
  int64_t step = -1;
  int64_t op_id = -1;
};

/// Everything a panel's prepare and draw steps see. Pointers are non-owning and valid for the frame.
struct ViewContext {
  const trace::Model* model = nullptr;             ///< null when no trace is loaded
  const RedistributeView* redistribute = nullptr;  ///< view of selection->redistribute_id, or null
  Selection* selection = nullptr;
  GlRenderer* renderer = nullptr;  ///< null in tests that only prepare
  /// Changes whenever `model` does. Panels key their caches on (model, model_serial): a trace
  /// loaded later can be allocated where a freed one was, so the address alone can repeat.
  uint64_t model_serial = 0;
  int64_t world() const { return model ? model->world : 0; }
};

}  // namespace shardscope::app::gui
