#include "platform_glfw.hpp"

#include <GLFW/glfw3.h>
#include <backends/imgui_impl_glfw.h>
#include <imgui.h>

namespace shardscope::app::gui {
namespace {

// GLFW reports errors through a callback only; the last message is kept per thread so Init can
// return it as one line (glfwInit is main-thread only anyway).
thread_local std::string last_glfw_error;

void OnGlfwError(int /*code*/, const char* description) {
  last_glfw_error = description ? description : "unknown";
}

}  // namespace

Platform::~Platform() {
  if (imgui_ready_) ImGui_ImplGlfw_Shutdown();
  if (window_) glfwDestroyWindow(window_);
  if (glfw_ready_) glfwTerminate();
}

bool Platform::Init(int width, int height, const std::string& title, bool vsync, std::string& error) {
  glfwSetErrorCallback(OnGlfwError);
  if (!glfwInit()) {
    error = last_glfw_error.empty() ? "glfwInit failed" : last_glfw_error;
    return false;
  }
  glfw_ready_ = true;
  glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
  glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 3);
  glfwWindowHint(GLFW_OPENGL_PROFILE, GLFW_OPENGL_CORE_PROFILE);
  glfwWindowHint(GLFW_OPENGL_FORWARD_COMPAT, GLFW_TRUE);
  glfwWindowHint(GLFW_DOUBLEBUFFER, GLFW_TRUE);
  window_ = glfwCreateWindow(width, height, title.c_str(), nullptr, nullptr);
  if (!window_) {
    error = last_glfw_error.empty() ? "cannot create an OpenGL 3.3 core window" : last_glfw_error;
    return false;
  }
  glfwSetWindowPos(window_, 0, 0);
  glfwSetWindowSize(window_, width, height);
  glfwMakeContextCurrent(window_);
  glfwSwapInterval(vsync ? 1 : 0);
  if (!ImGui_ImplGlfw_InitForOpenGL(window_, true)) {
    error = "ImGui GLFW backend failed to initialise";
    return false;
  }
  imgui_ready_ = true;
  return true;
}

void Platform::NewFrame() {
  glfwPollEvents();
  ImGui_ImplGlfw_NewFrame();
}

void Platform::SwapBuffers() { glfwSwapBuffers(window_); }

bool Platform::ShouldClose() const { return glfwWindowShouldClose(window_) != 0; }

void Platform::FramebufferSize(int& width, int& height) const {
  glfwGetFramebufferSize(window_, &width, &height);
}

}  // namespace shardscope::app::gui
