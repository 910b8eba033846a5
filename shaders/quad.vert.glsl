#version 330 core
// Instanced quads for layout grids, timeline bars and mesh cells: one instance per rectangle in
// ImGui's pixel space (origin top-left), transformed by ImGui's orthographic projection.
layout(location = 0) in vec2 a_corner;  // unit quad corner in [0, 1]^2
layout(location = 1) in vec4 i_rect;    // x0, y0, x1, y1 in pixels
layout(location = 2) in vec4 i_color;   // linear RGBA in [0, 1]
layout(location = 3) in vec2 i_style;   // x: 0 solid, 1 hatched (Partial), 2 mesh cell, 3 replica; y: parameter

uniform mat4 u_projection;

out vec4 v_color;
out vec2 v_local;      // pixels from the rectangle's top-left corner
flat out vec2 v_size;  // rectangle size in pixels
flat out vec2 v_style;

void main() {
  vec2 size = i_rect.zw - i_rect.xy;
  vec2 p = i_rect.xy + a_corner * size;
  v_color = i_color;
  v_local = a_corner * size;
  v_size = size;
  v_style = i_style;
  gl_Position = u_projection * vec4(p, 0.0, 1.0);
}
