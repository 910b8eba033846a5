// shardscope-gui [TRACE_DIR_OR_FILE ... | --diff BASELINE CANDIDATE] [--screenshot OUT.png] [--view V]
//                [--select N] [--step K] [--select-op N] [--search TEXT] [--size WxH] [--geometry OUT.json]
//                [--bench-frames N] [--keys SCRIPT] [--quit-after SECONDS] [--follow DIR]
//                [--loading-screenshot OUT.png] [--load-times] [--dump-delay-ms N]

#include <cstdio>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>

#include "app.hpp"

namespace {

constexpr const char* kUsage =
    "usage: shardscope-gui [TRACE_DIR_OR_FILE ... | --diff BASELINE CANDIDATE] [--screenshot OUT.png]\n"
    "         [--view main|timeline|inspector|layout|mesh|merge|program|gallery|sandbox|diff|flight|stats]\n"
    "         [--select ID] [--step K] [--select-op ID] [--search TEXT] [--size WxH] [--geometry OUT.json]\n"
    "         [--bench-frames N] [--keys SCRIPT] [--quit-after SECONDS] [--follow DIR]\n"
    "         [--loading-screenshot OUT.png] [--load-times] [--dump-delay-ms N]\n"
    "--follow: open DIR and keep adding what a running job appends (File > Follow does the same)\n"
    "--quit-after: run interactively (frames drawn only on input or animation), quit after SECONDS,\n"
    "         print the frames drawn and write --geometry\n"
    "--diff: the two traces side by side, aligned as `shardscope diff` aligns them (view diff)\n"
    "A Flight Recorder dump directory opens on the flight view (lanes per rank, mismatches)\n"
    "--keys: input replayed before the screenshot, e.g. \"Down,Down,Right,click:412:230,wait\"\n"
    "         (keys Left Right Up Down Space Plus Minus W S A D F G 0 Escape (Esc) CtrlF CtrlG CtrlQ;\n"
    "         click:X:Y in window pixels, rclick:X:Y a right click; drag:X0:Y0:X1:Y1; type:TEXT types\n"
    "         characters, e.g. G then type:517 goes to rank 517; drop:PATH drops a path on the window)\n"
    "--loading-screenshot: also a PNG taken while the traces load (Flight Recorder dumps: the ranks\n"
    "         read so far); a --keys script's steps after a leading `loading` run during the load,\n"
    "         and the shot waits for its `ready` step\n"
    "--load-times: print when the first frame with loaded data, with triage's verdict and with\n"
    "         everything loaded were drawn; --dump-delay-ms N (tests): wait N ms after each dump read\n"
    "--search: a query in the list's search box (tensor, placement, collective kind, op name)\n"
    "keys: Left/Right step, Up/Down redistribute, Space play, W/S or +/- zoom, A/D pan, F zoom to\n"
    "      the selection, 0 fit, G go to rank, Ctrl+F search, Esc clear the selection, Ctrl+Q quit\n"
    "      (Help menu: every key and gesture)\n";

bool ParseInt(const char* text, long long& out) {
  char* end = nullptr;
  out = std::strtoll(text, &end, 10);
  return end && *end == '\0' && end != text;
}

int Usage(const std::string& message) {
  std::fprintf(stderr, "shardscope-gui: %s\n%s", message.c_str(), kUsage);
  return 2;
}

using shardscope::app::gui::AppOptions;

using shardscope::app::gui::GuiView;
using shardscope::app::gui::GuiViewText;

// The views --view accepts, in the order of their table.
std::string ViewList() {
  std::string out;
  for (const auto& v : shardscope::app::gui::kGuiViews)
    out += (out.empty() ? "" : ", ") + std::string(v.name);
  return out;
}

// The options that take any text as their value: the field it goes to, and what the usage error
// says the option needs when the value is missing.
struct TextOption {
  const char* name;
  std::string AppOptions::*field;
  const char* needs;
};
constexpr TextOption kTextOptions[] = {
    {"--screenshot", &AppOptions::screenshot, "a file name"},
    {"--loading-screenshot", &AppOptions::loading_screenshot, "a file name"},
    {"--follow", &AppOptions::follow, "a trace directory that a running job writes"},
    {"--search", &AppOptions::search, "a query such as \"all_gather\""},
    {"--geometry", &AppOptions::geometry, "a file name"},
};

// Reads the option or trace at argv[i] (and its value, advancing i) into `options`. Returns an exit
// code when the command line ends here (help, or a usage error), else -1.
int ParseArg(int argc, char** argv, int& i, AppOptions& options, bool& view_given) {
  std::string arg = argv[i];
  auto value = [&](const char* name) -> const char* {
    if (i + 1 >= argc) return nullptr;
    (void)name;
    return argv[++i];
  };
  long long n = 0;
  for (const TextOption& o : kTextOptions) {
    if (arg != o.name) continue;
    const char* v = value(o.name);
    if (!v) return Usage(arg + " needs " + o.needs);
    options.*o.field = v;
    return -1;
  }
  if (arg == "-h" || arg == "--help") {
    std::fputs(kUsage, stdout);
    return 0;
  } else if (arg == "--view") {
    const char* v = value("--view");
    std::string view = v ? v : "";
    const std::optional<GuiView> known = shardscope::app::gui::ParseGuiView(view);
    if (!known) {
      return Usage("--view: '" + view + "' is not one of " + ViewList());
    }
    options.view = *known;
    view_given = true;
  } else if (arg == "--diff") {
    auto is_option = [](const char* t) { return t[0] == '-' && t[1] != '\0'; };
    if (i + 2 >= argc || is_option(argv[i + 1]) || is_option(argv[i + 2]))
      return Usage("--diff needs two traces: BASELINE CANDIDATE");
    options.diff_baseline = argv[++i];
    options.diff_candidate = argv[++i];
  } else if (arg == "--load-times") {
    options.load_times = true;
  } else if (arg == "--select" || arg == "--step" || arg == "--select-op" || arg == "--bench-frames" ||
             arg == "--dump-delay-ms") {
    const char* v = value(arg.c_str());
    if (!v || !ParseInt(v, n) || n < 0)
      return Usage(arg + ": '" + (v ? v : "") + "' is not a non-negative integer");
    if (arg == "--select") options.select = n;
    if (arg == "--step") options.step = n;
    if (arg == "--select-op") options.select_op = n;
    if (arg == "--bench-frames") options.bench_frames = static_cast<int>(n);
    if (arg == "--dump-delay-ms") {
      if (n > 10000) return Usage("--dump-delay-ms: at most 10000");
      options.dump_delay_ms = static_cast<int>(n);
    }
  } else if (arg == "--size") {
    const char* v = value("--size");
    int w = 0, h = 0;
    char extra = 0;
    if (!v || std::sscanf(v, "%dx%d%c", &w, &h, &extra) != 2 || w < 320 || h < 240 || w > 8192 || h > 8192) {
      return Usage("--size: '" + std::string(v ? v : "") + "' is not WIDTHxHEIGHT within 320x240..8192x8192");
    }
    options.width = w, options.height = h;
  } else if (arg == "--quit-after") {
    const char* v = value("--quit-after");
    char* end = nullptr;
    const double s = v ? std::strtod(v, &end) : 0;
    if (!v || end == v || *end != '\0' || !(s > 0 && s <= 86400))
      return Usage("--quit-after: '" + std::string(v ? v : "") +
                   "' is not a number of seconds in (0, 86400]");
    options.quit_after_s = s;
  } else if (arg == "--sandbox-run") {
    options.sandbox_run = true;
  } else if (arg == "--keys") {
    const char* v = value("--keys");
    if (!v) return Usage("--keys needs a script such as \"Down,Right,click:400:300\"");
    try {
      options.script = shardscope::app::gui::ParseInputScript(v);
    } catch (const std::invalid_argument& e) {
      return Usage(std::string("--keys: ") + e.what());
    }
  } else if (arg.size() > 1 && arg[0] == '-') {
    return Usage("unknown option '" + arg + "'");
  } else {
    options.traces.push_back(arg);
  }
  return -1;
}

// --diff BASELINE CANDIDATE, or --view diff with two traces: the diff view. Returns an exit code for
// a usage error, else -1.
int ResolveDiff(AppOptions& options, bool view_given) {
  bool diff = !options.diff_baseline.empty();
  if (diff && !options.traces.empty())
    return Usage("--diff takes exactly two traces; '" + options.traces.front() + "' is one too many");
  if (diff && view_given && options.view != GuiView::kDiff)
    return Usage("--diff shows the diff view; --view '" + GuiViewText(options.view) +
                 "' is not available with it");
  if (!diff && options.view == GuiView::kDiff) {
    if (options.traces.size() != 2)
      return Usage("--view diff needs two traces (or --diff BASELINE CANDIDATE)");
    options.diff_baseline = options.traces[0];
    options.diff_candidate = options.traces[1];
    options.traces.clear();
    diff = true;
  }
  if (diff) options.view = GuiView::kDiff;
  return -1;
}

}  // namespace

int main(int argc, char** argv) {
  AppOptions options;
  bool view_given = false;
  for (int i = 1; i < argc; ++i) {
    if (int code = ParseArg(argc, argv, i, options, view_given); code >= 0) return code;
  }
  if (int code = ResolveDiff(options, view_given); code >= 0) return code;
  return shardscope::app::gui::RunApp(options);
}
