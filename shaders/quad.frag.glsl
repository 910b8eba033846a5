#version 330 core
// Styles of the instanced quads: solid fill, diagonal hatching for Partial placements (values
// still pending a reduction), mesh cells with a border that thickens for highlighted groups, and
// replicas: an element held by n ranks shows their colours in turn on anti-diagonal bands (quad k
// of n draws every band k mod n), which no shard boundary (always axis-aligned) resembles.
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

// param = k + 64 n (+ 4096 when the values are also partial).
vec4 Replica(vec4 c, float param) {
  float partial = param >= 4096.0 ? 1.0 : 0.0;
  float rest = param - partial * 4096.0;
  float n = floor(rest / 64.0);
  float k = rest - n * 64.0;
  float band = floor((gl_FragCoord.x - gl_FragCoord.y) / 7.0);
  if (abs(mod(band, max(n, 1.0)) - k) > 0.5) discard;
  return partial > 0.5 ? Hatch(c) : c;
}

void main() {
  int style = int(v_style.x + 0.5);
  if (style == 1) {
    frag_color = Hatch(v_color);
  } else if (style == 2) {
    frag_color = MeshCell(v_color, v_style.y);
  } else if (style == 3) {
    frag_color = Replica(v_color, v_style.y);
  } else {
    frag_color = v_color;
  }
}
