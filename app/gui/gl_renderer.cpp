#include "gl_renderer.hpp"

#include <GLFW/glfw3.h>
#include <backends/imgui_impl_opengl3.h>
#include <imgui.h>

#include <cstring>
#include <optional>
#include <string>

#include "shardscope_shaders.hpp"

namespace shardscope::app::gui {
namespace {

// The info log of a shader that did not compile (`program` false) or a program that did not link
// (`program` true); nullopt when it did.
std::optional<std::string> FailureLog(GLuint object, bool program) {
  GLint ok = 0;
  if (program) {
    glGetProgramiv(object, GL_LINK_STATUS, &ok);
  } else {
    glGetShaderiv(object, GL_COMPILE_STATUS, &ok);
  }
  if (ok) return std::nullopt;
  char log[1024] = {};
  if (program) {
    glGetProgramInfoLog(object, sizeof log, nullptr, log);
  } else {
    glGetShaderInfoLog(object, sizeof log, nullptr, log);
  }
  return std::string(log);
}

unsigned Compile(GLenum type, const char* source, std::string& error) {
  GLuint shader = glCreateShader(type);
  glShaderSource(shader, 1, &source, nullptr);
  glCompileShader(shader);
  if (std::optional<std::string> log = FailureLog(shader, false)) {
    error = std::string(type == GL_VERTEX_SHADER ? "quad.vert.glsl: " : "quad.frag.glsl: ") + *log;
    for (char& c : error) {
      if (c == '\n') c = ' ';
    }
    glDeleteShader(shader);
    return 0;
  }
  return shader;
}

}  // namespace

Quad MakeQuad(float x0, float y0, float x1, float y1, Rgb color, QuadStyle style, float param, float alpha) {
  return Quad{x0,
              y0,
              x1,
              y1,
              color.r / 255.0f,
              color.g / 255.0f,
              color.b / 255.0f,
              alpha,
              static_cast<float>(style),
              param};
}

GlRenderer::~GlRenderer() {
  if (program_) glDeleteProgram(program_);
  if (vao_) glDeleteVertexArrays(1, &vao_);
  if (corner_vbo_) glDeleteBuffers(1, &corner_vbo_);
  if (instance_vbo_) glDeleteBuffers(1, &instance_vbo_);
  if (imgui_ready_) ImGui_ImplOpenGL3_Shutdown();
}

bool GlRenderer::Init(std::string& error) {
  if (!ImGui_ImplOpenGL3_Init("#version 330 core")) {
    error = "ImGui OpenGL3 backend failed to initialise";
    return false;
  }
  imgui_ready_ = true;
  GLuint vs = Compile(GL_VERTEX_SHADER, shaders::kQuadVert, error);
  if (!vs) return false;
  GLuint fs = Compile(GL_FRAGMENT_SHADER, shaders::kQuadFrag, error);
  if (!fs) {
    glDeleteShader(vs);
    return false;
  }
  program_ = glCreateProgram();
  glAttachShader(program_, vs);
  glAttachShader(program_, fs);
  glLinkProgram(program_);
  glDeleteShader(vs);
  glDeleteShader(fs);
  if (std::optional<std::string> log = FailureLog(program_, true)) {
    error = "quad shader link: " + *log;
    return false;
  }
  u_projection_ = glGetUniformLocation(program_, "u_projection");
  u_hatch_period_ = glGetUniformLocation(program_, "u_hatch_period");

  glGenVertexArrays(1, &vao_);
  glBindVertexArray(vao_);
  const float corners[] = {0, 0, 1, 0, 0, 1, 1, 1};
  glGenBuffers(1, &corner_vbo_);
  glBindBuffer(GL_ARRAY_BUFFER, corner_vbo_);
  glBufferData(GL_ARRAY_BUFFER, sizeof corners, corners, GL_STATIC_DRAW);
  glEnableVertexAttribArray(0);
  glVertexAttribPointer(0, 2, GL_FLOAT, GL_FALSE, 2 * sizeof(float), nullptr);
  glGenBuffers(1, &instance_vbo_);
  glBindBuffer(GL_ARRAY_BUFFER, instance_vbo_);
  const GLsizei stride = sizeof(Quad);
  glEnableVertexAttribArray(1);
  glVertexAttribPointer(1, 4, GL_FLOAT, GL_FALSE, stride, reinterpret_cast<void*>(offsetof(Quad, x0)));
  glVertexAttribDivisor(1, 1);
  glEnableVertexAttribArray(2);
  glVertexAttribPointer(2, 4, GL_FLOAT, GL_FALSE, stride, reinterpret_cast<void*>(offsetof(Quad, r)));
  glVertexAttribDivisor(2, 1);
  glEnableVertexAttribArray(3);
  glVertexAttribPointer(3, 2, GL_FLOAT, GL_FALSE, stride, reinterpret_cast<void*>(offsetof(Quad, style)));
  glVertexAttribDivisor(3, 1);
  glBindVertexArray(0);
  glBindBuffer(GL_ARRAY_BUFFER, 0);
  return true;
}

void GlRenderer::NewFrame() {
  ImGui_ImplOpenGL3_NewFrame();
  batches_.clear();
  quads_pending_ = 0;
}

void GlRenderer::DrawQuads(ImDrawList* draw_list, std::vector<Quad> quads) {
  if (quads.empty()) return;
  quads_pending_ += quads.size();
  batches_.push_back(Batch{this, std::move(quads)});
  draw_list->AddCallback(&GlRenderer::OnDrawCallback, &batches_.back());
  // Hands GL state back to ImGui's backend for the draw commands that follow.
  draw_list->AddCallback(ImDrawCallback_ResetRenderState, nullptr);
}

void GlRenderer::OnDrawCallback(const ImDrawList* /*list*/, const ImDrawCmd* cmd) {
  const auto* batch = static_cast<const Batch*>(cmd->UserCallbackData);
  batch->self->DrawBatch(*batch, cmd);
}

void GlRenderer::DrawBatch(const Batch& batch, const ImDrawCmd* cmd) {
  const ImDrawData* data = ImGui::GetDrawData();
  if (!data) return;
  float l = data->DisplayPos.x, r = data->DisplayPos.x + data->DisplaySize.x;
  float t = data->DisplayPos.y, b = data->DisplayPos.y + data->DisplaySize.y;
  const float projection[16] = {
      2.0f / (r - l),    0, 0, 0, 0, 2.0f / (t - b), 0, 0, 0, 0, -1, 0, (r + l) / (l - r),
      (t + b) / (b - t), 0, 1};
  int fb_h = static_cast<int>(data->DisplaySize.y * data->FramebufferScale.y);
  float sx = data->FramebufferScale.x, sy = data->FramebufferScale.y;
  float cx0 = (cmd->ClipRect.x - l) * sx, cy0 = (cmd->ClipRect.y - t) * sy;
  float cx1 = (cmd->ClipRect.z - l) * sx, cy1 = (cmd->ClipRect.w - t) * sy;
  if (cx1 <= cx0 || cy1 <= cy0) return;
  glEnable(GL_SCISSOR_TEST);
  glScissor(static_cast<int>(cx0), fb_h - static_cast<int>(cy1), static_cast<int>(cx1 - cx0),
            static_cast<int>(cy1 - cy0));
  glUseProgram(program_);
  glUniformMatrix4fv(u_projection_, 1, GL_FALSE, projection);
  glUniform1f(u_hatch_period_, 10.0f);
  glBindVertexArray(vao_);
  glBindBuffer(GL_ARRAY_BUFFER, instance_vbo_);
  glBufferData(GL_ARRAY_BUFFER, static_cast<GLsizeiptr>(batch.quads.size() * sizeof(Quad)),
               batch.quads.data(), GL_STREAM_DRAW);
  glDrawArraysInstanced(GL_TRIANGLE_STRIP, 0, 4, static_cast<GLsizei>(batch.quads.size()));
  glBindVertexArray(0);
}

void GlRenderer::Render(ImDrawData* draw_data, int width, int height) {
  glViewport(0, 0, width, height);
  glClearColor(kCanvasColor.r / 255.0f, kCanvasColor.g / 255.0f, kCanvasColor.b / 255.0f, 1.0f);
  glClear(GL_COLOR_BUFFER_BIT);
  ImGui_ImplOpenGL3_RenderDrawData(draw_data);
  quads_last_frame_ = quads_pending_;
  vertices_last_frame_ = draw_data != nullptr ? static_cast<size_t>(draw_data->TotalVtxCount) : 0;
}

std::vector<uint8_t> GlRenderer::ReadBackBuffer(int width, int height) const {
  std::vector<uint8_t> pixels(static_cast<size_t>(width) * static_cast<size_t>(height) * 4);
  glPixelStorei(GL_PACK_ALIGNMENT, 1);
  glReadBuffer(GL_BACK);
  glReadPixels(0, 0, width, height, GL_RGBA, GL_UNSIGNED_BYTE, pixels.data());
  // GL rows run bottom-up; PNG rows top-down.
  std::vector<uint8_t> flipped(pixels.size());
  size_t row = static_cast<size_t>(width) * 4;
  for (int y = 0; y < height; ++y) {
    std::memcpy(&flipped[static_cast<size_t>(y) * row], &pixels[static_cast<size_t>(height - 1 - y) * row],
                row);
  }
  return flipped;
}

}  // namespace shardscope::app::gui
