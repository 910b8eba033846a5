#pragma once
// Platform glue: the GLFW window with an OpenGL 3.3 core context and ImGui's GLFW backend. No GL
// drawing and no globals here; the renderer glue (gl_renderer.hpp) is separate.

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "input_script.hpp"

struct GLFWwindow;

namespace shardscope::app::gui {

/// Owns the GLFW window. Not thread-safe: use from the main thread only.
class Platform {
 public:
  Platform() = default;
  ~Platform();  ///< Shuts ImGui's GLFW backend and GLFW down if Init succeeded.
  Platform(const Platform&) = delete;
  Platform& operator=(const Platform&) = delete;

  /// Opens a width x height window titled `title` with a 3.3 core context and initialises ImGui's
  /// GLFW backend (ImGui's context must exist). Returns false and sets `error` to one line (e.g.
  /// "X11: The DISPLAY environment variable is missing") when no display or context is available.
  bool Init(int width, int height, const std::string& title, bool vsync, std::string& error);
  /// Polls events (key taps of this frame are counted from the key callback, so a tap shorter
  /// than a frame still counts), replays `injected` (a script step, or null) through the same
  /// callbacks as real input, and starts ImGui's platform frame. `park_mouse`: the pointer hovers
  /// nothing unless a script step holds it (headless runs).
  void NewFrame(const InputEvent* injected, bool park_mouse);
  /// Bound-key taps since the previous NewFrame.
  const KeyTaps& taps() const { return taps_; }
  /// Sleeps until the window system reports an event or `timeout_s` seconds pass (< 0: no limit);
  /// the next NewFrame handles what arrived. The idle main loop's only wait.
  void WaitEvents(double timeout_s);
  /// Wakes a WaitEvents from another thread (a loader that finished). Thread-safe.
  static void Wake();
  /// Input and window events seen so far (pointer moves, buttons, wheel, keys, characters, resizes,
  /// focus, drops): the main loop draws frames only while this changes or something animates.
  uint64_t events() const { return events_; }
  /// Paths dropped on the window since the last call (files or directories, in drop order).
  std::vector<std::string> TakeDrops() { return std::exchange(drops_, {}); }
  /// Presents the back buffer.
  void SwapBuffers();
  /// True once the user asked to close the window.
  bool ShouldClose() const;
  /// Framebuffer size in pixels.
  void FramebufferSize(int& width, int& height) const;
  GLFWwindow* window() const { return window_; }

 private:
  static void OnKeyEvent(GLFWwindow* window, int key, int scancode, int action, int mods);
  static void CountEvent(GLFWwindow* window);

  GLFWwindow* window_ = nullptr;
  bool glfw_ready_ = false;
  bool imgui_ready_ = false;
  KeyTaps taps_;
  uint64_t events_ = 0;
  std::vector<std::string> drops_;
  std::optional<std::pair<float, float>> script_mouse_;  // pointer held by a click step
  int release_pending_ = 0;         // frames until a scripted click's pointer is released and parked
  std::optional<InputEvent> drag_;  // the scripted drag in progress
  int drag_frame_ = 0;              // its frames so far
};

}  // namespace shardscope::app::gui
