#pragma once
// Renderer glue: ImGui's OpenGL3 backend plus our instanced-quad pipeline (shaders/quad.*.glsl,
// embedded at build time). Panels queue quads into an ImDrawList so they interleave correctly with
// ImGui's own drawing (labels on top). Needs a current GL 3.3 core context; main thread only.

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "rank_palette.hpp"

struct ImDrawList;
struct ImDrawCmd;
struct ImDrawData;

namespace shardscope::app::gui {

/// How a quad is shaded (matches shaders/quad.frag.glsl).
enum class QuadStyle : int { kSolid = 0, kHatch = 1, kMeshCell = 2, kReplica = 3 };

/// One instanced rectangle in ImGui pixel coordinates.
struct Quad {
  float x0 = 0, y0 = 0, x1 = 0, y1 = 0;
  float r = 0, g = 0, b = 0, a = 1;
  float style = 0;  ///< QuadStyle as float
  float param = 0;  ///< kMeshCell: 1 = highlighted; kReplica: ReplicaParam
};

/// A quad of colour `color` and `style`.
Quad MakeQuad(float x0, float y0, float x1, float y1, Rgb color, QuadStyle style = QuadStyle::kSolid,
              float param = 0.0f, float alpha = 1.0f);

/// kReplica's parameter: holder `k` of `n` (n <= 63), hatched as well when the values are partial.
inline float ReplicaParam(int k, int n, bool partial) {
  return static_cast<float>(k + 64 * n + (partial ? 4096 : 0));
}

/// Owns the GL objects of the quad pipeline and drives ImGui's OpenGL3 backend.
class GlRenderer {
 public:
  GlRenderer() = default;
  ~GlRenderer();  ///< Frees GL objects and shuts ImGui's OpenGL3 backend down (context must be current).
  GlRenderer(const GlRenderer&) = delete;
  GlRenderer& operator=(const GlRenderer&) = delete;

  /// Initialises ImGui's OpenGL3 backend ("#version 330 core") and compiles the embedded shaders.
  /// Returns false with a one-line `error` (the shader log) on failure.
  bool Init(std::string& error);
  /// Starts a frame: ImGui's renderer frame; drops the previous frame's quad batches.
  void NewFrame();
  /// Queues `quads` to be drawn at this point of `draw_list`, clipped to its current clip rect.
  void DrawQuads(ImDrawList* draw_list, std::vector<Quad> quads);
  /// Clears the framebuffer of `width` x `height` pixels and renders ImGui's draw data.
  void Render(ImDrawData* draw_data, int width, int height);
  /// Reads the back buffer as top-down RGBA8 rows (call after Render, before swapping).
  std::vector<uint8_t> ReadBackBuffer(int width, int height) const;
  /// Quads drawn in the last rendered frame (for frame-time reports).
  size_t quads_last_frame() const { return quads_last_frame_; }
  /// ImGui vertices the last frame drew (text, lines, boxes): what a panel that draws only what is
  /// in view keeps independent of the trace's size.
  size_t vertices_last_frame() const { return vertices_last_frame_; }

 private:
  struct Batch {
    GlRenderer* self = nullptr;
    std::vector<Quad> quads;
  };
  static void OnDrawCallback(const ImDrawList* list, const ImDrawCmd* cmd);
  void DrawBatch(const Batch& batch, const ImDrawCmd* cmd);

  bool imgui_ready_ = false;
  unsigned program_ = 0, vao_ = 0, corner_vbo_ = 0, instance_vbo_ = 0;
  int u_projection_ = -1, u_hatch_period_ = -1;
  std::deque<Batch> batches_;  // deque: callbacks hold pointers to elements
  size_t quads_pending_ = 0, quads_last_frame_ = 0, vertices_last_frame_ = 0;
};

}  // namespace shardscope::app::gui
