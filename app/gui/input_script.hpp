#pragma once
// Keyboard and mouse input as the app consumes it: key taps counted from the window system's key
// events (a tap shorter than a frame still counts), and headless input scripts (--keys) that are
// replayed through the same event path before a screenshot. GL-free and GLFW-free: unit-testable.

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace shardscope::app::gui {

/// The keys the app binds (the Help menu lists them; --keys names them).
enum class InputKey : int {
  kLeft,
  kRight,
  kUp,
  kDown,
  kSpace,
  kPlus,
  kMinus,
  kA,
  kD,
  kF,
  kEscape,
  kCtrlF,
  kW,
  kS,
  kCtrlQ,
  kG,
  kCtrlG,
  kZero,
  kCount
};

/// Script and help name of a key ("Left", "Plus", "CtrlF" for Ctrl+F, "0", ...).
const char* InputKeyName(InputKey key);
/// Whether `key` is a Ctrl chord (CtrlF, CtrlG, CtrlQ): its letter alone is another key or none.
bool IsCtrlChord(InputKey key);
/// The character a key types (0 for none): the timeline reads '+', '-', 'w', 's', 'a', 'd', 'f',
/// 'g', '0' as characters.
char InputKeyChar(InputKey key);

/// Taps of each bound key since the last Clear (key presses and auto-repeats; releases ignored).
class KeyTaps {
 public:
  void Clear() { counts_.fill(0); }
  void Add(InputKey key) { ++counts_[static_cast<size_t>(key)]; }
  int Count(InputKey key) const { return counts_[static_cast<size_t>(key)]; }

 private:
  std::array<int, static_cast<size_t>(InputKey::kCount)> counts_{};
};

/// One step of an input script: a key tap (press and release within one frame), a left (or right)
/// click at window pixel (x, y) (press on one frame, release on the next, then the pointer leaves), a left
/// drag from (x, y) to (x1, y1) (held for kDragFrames frames, the pointer moving in equal steps),
/// or typed text (one character event per character, all in one frame).
struct InputEvent {
  enum class Kind {
    kKey,
    kClick,
    kWait,
    kDrag,
    kType,
    kDrop,
    kRightClick,
    kLoading,
    kReady
  } kind = Kind::kKey;
  InputKey key = InputKey::kLeft;
  float x = 0, y = 0;
  float x1 = 0, y1 = 0;  ///< drag end
  std::string text;      ///< typed text, or the dropped path
};

/// Frames a scripted drag holds the button: the first at its start, the last at its end.
inline constexpr int kDragFrames = 6;

/// Parses "Down,Down,Right,click:412:230,drag:10:5:90:5,type:g517,wait": key names
/// (case-insensitive; every key the Help menu lists: "Esc" for Escape, "0" for zero),
/// click:X:Y and rclick:X:Y (a right click, e.g. a context menu), and drag:X0:Y0:X1:Y1 (pixels from the
/// window's top-left), type:TEXT (printable characters, no comma), drop:PATH (a file or directory dropped on
/// the window, as the window system reports a drag-and-drop), wait (one idle frame), loading (only
/// as the first step: the steps after it run while the traces still load, from the first frame that
/// shows loaded data; otherwise a script starts once they are loaded) and ready (wait until every
/// trace is loaded and the panels settled, then go on). Throws
/// std::invalid_argument naming the bad token and its position.
std::vector<InputEvent> ParseInputScript(std::string_view text);

/// Every key name ParseInputScript accepts, comma-separated (for messages and --help).
std::string InputKeyNames();

}  // namespace shardscope::app::gui
