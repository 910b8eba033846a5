#version 330 core
// Styles of the instanced quads: solid fill, diagonal hatching for Partial placements (values
// still pending a reduction), and mesh cells with a border that thickens for highlighted groups.
in vec4 v_color;
in vec2 v_local;
flat in vec2 v_size;
flat in vec2 v_style;

uniform float u_hatch_period;  // pixels between hatch lines

out vec4 frag_color;

vec4 Hatch(vec4 c) {
  float s = mod(gl_FragCoord.x + gl_FragCoord.y, u_hatch_period);
  return s < u_hatch_period * 0.4 ? vec4(c.rgb * 0.35, c.a) : c;
}

vec4 MeshCell(vec4 c, float highlight) {
  float edge = min(min(v_local.x, v_local.y), min(v_size.x - v_local.x, v_size.y - v_local.y));
  float border = highlight > 0.5 ? 4.0 : 1.5;
  if (edge < border) return highlight > 0.5 ? vec4(1.0, 1.0, 1.0, 1.0) : vec4(c.rgb * 0.35, c.a);
  return highlight > 0.5 ? c : vec4(c.rgb * 0.55, c.a);
}

void main() {
  int style = int(v_style.x + 0.5);
  if (style == 1) {
    frag_color = Hatch(v_color);
  } else if (style == 2) {
    frag_color = MeshCell(v_color, v_style.y);
  } else {
    frag_color = v_color;
  }
}
