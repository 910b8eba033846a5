#pragma once
// The shardscope-gui application: command-line options, the main loop, the main window that
// arranges the panels, and headless screenshots.

#include <cstdint>
#include <string>
#include <vector>

#include "gui_view.hpp"
#include "input_script.hpp"

namespace shardscope::app::gui {

/// Options of one run (parsed by main.cpp).
struct AppOptions {
  std::vector<std::string> traces;  ///< trace directories or rank files, loaded in order
  std::string screenshot;           ///< non-empty: render, write this PNG and exit
  GuiView view = GuiView::kMain;    ///< the view shown (--view)
  /// Non-empty: diff mode, baseline and candidate trace (view kDiff); `traces` is then empty.
  std::string diff_baseline, diff_candidate;
  int64_t select = -1;     ///< redistribute id to select (-1: the first; diff: the first differing row)
  int64_t step = 0;        ///< step of the selected redistribute
  int64_t select_op = -1;  ///< op id to select in the program view (-1: the first op)
  std::string search;      ///< query put in the list's search box at start (as if typed)
  int width = 1600, height = 1000;  ///< window size in pixels
  std::string geometry;             ///< non-empty: write panel rectangles as JSON (screenshot mode)
  int bench_frames = 0;             ///< > 0: render this many frames after loading, print frame times, exit
  bool sandbox_run = false;         ///< run the sandbox's default redistribute on the local backend at start
  /// > 0: an interactive run (frames drawn only on input or animation) that quits after this many
  /// seconds, printing the frames it drew and writing --geometry; tests count idle frames with it.
  double quit_after_s = 0;
  /// --follow DIR: open DIR and keep re-reading it while a running job appends to it.
  std::string follow;
  /// --keys: replayed once the traces are loaded and the layout settled, one step per frame,
  /// through the same callbacks as real input; a screenshot waits until it is done.
  std::vector<InputEvent> script;
  /// --loading-screenshot: a PNG taken while the traces still load (Flight Recorder dumps: the
  /// ranks read so far), once a frame showed loaded data and the script reached its `ready` step
  /// (or at once without one); with --geometry, its geometry beside it (OUT.json). Exit 2 when the
  /// load ended first.
  std::string loading_screenshot;
  /// --load-times: print when the first frame with loaded data, the first with triage's verdict and
  /// the first with every trace loaded were drawn (seconds after start).
  bool load_times = false;
  /// --dump-delay-ms (tests): the loader waits this long after each Flight Recorder dump it reads.
  int dump_delay_ms = 0;
};

/// Runs the GUI; returns the process exit code (0 ok, 2 no display or bad input, 3 GL failure).
int RunApp(const AppOptions& options);

}  // namespace shardscope::app::gui
