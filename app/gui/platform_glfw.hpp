#pragma once
// Platform glue: the GLFW window with an OpenGL 3.3 core context and ImGui's GLFW backend. No GL
// drawing and no globals here; the renderer glue (gl_renderer.hpp) is separate.

#include <string>

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
  /// Polls events and starts ImGui's platform frame.
  void NewFrame();
  /// Presents the back buffer.
  void SwapBuffers();
  /// True once the user asked to close the window.
  bool ShouldClose() const;
  /// Framebuffer size in pixels.
  void FramebufferSize(int& width, int& height) const;
  GLFWwindow* window() const { return window_; }

 private:
  GLFWwindow* window_ = nullptr;
  bool glfw_ready_ = false;
  bool imgui_ready_ = false;
};

}  // namespace shardscope::app::gui
