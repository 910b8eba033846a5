#include "platform_glfw.hpp"

#include <GLFW/glfw3.h>
#include <backends/imgui_impl_glfw.h>
#include <imgui.h>

#include <algorithm>
#include <cfloat>

namespace shardscope::app::gui {
namespace {

// GLFW reports errors through a callback only; the last message is kept per thread so Init can
// return it as one line (glfwInit is main-thread only anyway).
thread_local std::string last_glfw_error;

void OnGlfwError(int /*code*/, const char* description) {
  last_glfw_error = description ? description : "unknown";
}

// The GLFW key of each InputKey, in the enum's order (a Ctrl chord: its letter).
constexpr int kGlfwKeys[] = {GLFW_KEY_LEFT,   GLFW_KEY_RIGHT, GLFW_KEY_UP, GLFW_KEY_DOWN, GLFW_KEY_SPACE,
                             GLFW_KEY_KP_ADD, GLFW_KEY_MINUS, GLFW_KEY_A,  GLFW_KEY_D,    GLFW_KEY_F,
                             GLFW_KEY_ESCAPE, GLFW_KEY_F,     GLFW_KEY_W,  GLFW_KEY_S,    GLFW_KEY_Q,
                             GLFW_KEY_G,      GLFW_KEY_G,     GLFW_KEY_0};
static_assert(sizeof kGlfwKeys / sizeof kGlfwKeys[0] == static_cast<size_t>(InputKey::kCount));

int GlfwKey(InputKey key) {
  const auto i = static_cast<size_t>(key);
  return i < static_cast<size_t>(InputKey::kCount) ? kGlfwKeys[i] : GLFW_KEY_UNKNOWN;
}

// Whether some Ctrl chord uses `key` (then the key with Ctrl held is only the chord).
bool HasChord(int key) { return key == GLFW_KEY_F || key == GLFW_KEY_G || key == GLFW_KEY_Q; }

}  // namespace

// Installed before ImGui's GLFW backend, which chains to it: every key event reaches both, and a
// press is counted even when its release arrives before the next frame (ImGui 1.86 only keeps the
// polled down state, which loses such taps).
void Platform::OnKeyEvent(GLFWwindow* window, int key, int /*scancode*/, int action, int mods) {
  CountEvent(window);
  auto* self = static_cast<Platform*>(glfwGetWindowUserPointer(window));
  if (!self || (action != GLFW_PRESS && action != GLFW_REPEAT)) return;
  if (key == GLFW_KEY_EQUAL || key == GLFW_KEY_KP_ADD) key = GLFW_KEY_KP_ADD;  // '+' with or without shift
  if (key == GLFW_KEY_KP_SUBTRACT) key = GLFW_KEY_MINUS;
  // A Ctrl chord (Ctrl+F: the search box, not the timeline's F; Ctrl+G: go to rank; Ctrl+Q: quit) counts only
  // as the chord, and a plain letter never as one.
  const bool ctrl = (mods & GLFW_MOD_CONTROL) != 0;
  for (int k = 0; k < static_cast<int>(InputKey::kCount); ++k) {
    const auto input = static_cast<InputKey>(k);
    const bool counts = IsCtrlChord(input) ? ctrl : !(ctrl && HasChord(key));
    if (GlfwKey(input) == key && counts) self->taps_.Add(input);
  }
}

void Platform::CountEvent(GLFWwindow* window) {
  if (auto* self = static_cast<Platform*>(glfwGetWindowUserPointer(window))) ++self->events_;
}

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
  glfwSetWindowUserPointer(window_, this);
  glfwSetKeyCallback(window_, OnKeyEvent);  // before ImGui's backend, which chains to it
  // Every other event the window can get only counts (ImGui's backend chains to the ones it also
  // installs: buttons, wheel, characters, focus, enter/leave; ImGui 1.86 polls the pointer).
  glfwSetMouseButtonCallback(window_, [](GLFWwindow* w, int, int, int) { CountEvent(w); });
  glfwSetScrollCallback(window_, [](GLFWwindow* w, double, double) { CountEvent(w); });
  glfwSetCharCallback(window_, [](GLFWwindow* w, unsigned) { CountEvent(w); });
  glfwSetWindowFocusCallback(window_, [](GLFWwindow* w, int) { CountEvent(w); });
  glfwSetCursorEnterCallback(window_, [](GLFWwindow* w, int) { CountEvent(w); });
  glfwSetCursorPosCallback(window_, [](GLFWwindow* w, double, double) { CountEvent(w); });
  glfwSetFramebufferSizeCallback(window_, [](GLFWwindow* w, int, int) { CountEvent(w); });
  glfwSetWindowRefreshCallback(window_, [](GLFWwindow* w) { CountEvent(w); });
  glfwSetDropCallback(window_, [](GLFWwindow* w, int count, const char** paths) {
    CountEvent(w);
    auto* self = static_cast<Platform*>(glfwGetWindowUserPointer(w));
    for (int i = 0; self && i < count; ++i) self->drops_.emplace_back(paths[i]);
  });
  if (!ImGui_ImplGlfw_InitForOpenGL(window_, true)) {
    error = "ImGui GLFW backend failed to initialise";
    return false;
  }
  imgui_ready_ = true;
  return true;
}

void Platform::NewFrame(const InputEvent* injected, bool park_mouse) {
  taps_.Clear();
  glfwPollEvents();
  // A scripted click: pointer down on this frame, up on the next (ImGui sees a click), then gone.
  if (release_pending_ > 0 && --release_pending_ == 0) script_mouse_.reset();
  if (injected && injected->kind == InputEvent::Kind::kKey) {
    const int key = GlfwKey(injected->key);
    const int mods = IsCtrlChord(injected->key) ? GLFW_MOD_CONTROL : 0;
    ImGui_ImplGlfw_KeyCallback(window_, key, 0, GLFW_PRESS, mods);
    if (char c = InputKeyChar(injected->key)) ImGui_ImplGlfw_CharCallback(window_, static_cast<unsigned>(c));
    ImGui_ImplGlfw_KeyCallback(window_, key, 0, GLFW_RELEASE, mods);
  } else if (injected && (injected->kind == InputEvent::Kind::kClick ||
                          injected->kind == InputEvent::Kind::kRightClick)) {
    script_mouse_ = std::make_pair(injected->x, injected->y);
    const int button =
        injected->kind == InputEvent::Kind::kClick ? GLFW_MOUSE_BUTTON_LEFT : GLFW_MOUSE_BUTTON_RIGHT;
    ImGui_ImplGlfw_MouseButtonCallback(window_, button, GLFW_PRESS, 0);
    ImGui_ImplGlfw_MouseButtonCallback(window_, button, GLFW_RELEASE, 0);
    release_pending_ = 2;
  } else if (injected && injected->kind == InputEvent::Kind::kType) {
    for (char c : injected->text) ImGui_ImplGlfw_CharCallback(window_, static_cast<unsigned>(c));
  } else if (injected && injected->kind == InputEvent::Kind::kDrop) {
    drops_.push_back(injected->text);  // what GLFW's drop callback would have added
  } else if (injected && injected->kind == InputEvent::Kind::kDrag) {
    drag_ = *injected;
    drag_frame_ = 0;
  }
  // A scripted drag: held from its start (frame 0) to its end (frame kDragFrames - 1), then released.
  bool held = false;
  if (drag_) {
    const int f = drag_frame_++;
    const float t = std::min(1.0f, static_cast<float>(f) / static_cast<float>(kDragFrames - 1));
    script_mouse_ =
        std::make_pair(drag_->x + (drag_->x1 - drag_->x) * t, drag_->y + (drag_->y1 - drag_->y) * t);
    held = f < kDragFrames;
    if (!held) drag_.reset(), release_pending_ = 2;
  }
  ImGui_ImplGlfw_NewFrame();
  if (held) ImGui::GetIO().MouseDown[ImGuiMouseButton_Left] = true;
  // ImGui 1.86's backend polls the pointer position; a script step or headless parking replaces it.
  if (script_mouse_) {
    ImGui::GetIO().MousePos = ImVec2(script_mouse_->first, script_mouse_->second);
  } else if (park_mouse) {
    ImGui::GetIO().MousePos = ImVec2(-FLT_MAX, -FLT_MAX);
  }
}

void Platform::WaitEvents(double timeout_s) {
  if (timeout_s < 0) {
    glfwWaitEvents();
  } else if (timeout_s > 0) {
    glfwWaitEventsTimeout(timeout_s);
  }
}

void Platform::Wake() { glfwPostEmptyEvent(); }

void Platform::SwapBuffers() { glfwSwapBuffers(window_); }

bool Platform::ShouldClose() const { return glfwWindowShouldClose(window_) != 0; }

void Platform::FramebufferSize(int& width, int& height) const {
  glfwGetFramebufferSize(window_, &width, &height);
}

}  // namespace shardscope::app::gui
