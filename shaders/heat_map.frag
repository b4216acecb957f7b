// The sweep grid: cell (x, y) (row 0 at the top) takes texel (x, y) of `cells` (R32F).
// headroom_mode 1: the value is headroom / device bytes; < 0 does not fit (red, deeper the
// further over), 0..0.5+ runs from tight (amber) to ample (teal). headroom_mode 0: the value is
// peak / largest peak, on a perceptual blue-to-yellow ramp. Values below -1e5 are invalid cells
// (grey). A thin dark seam separates cells.
in vec2 uv;
out vec4 colour;
uniform sampler2D cells;
uniform int columns;
uniform int rows;
uniform int headroom_mode;
uniform vec2 seam;  // seam width in units of one cell, x and y

vec3 ramp(float t) {
  const vec3 c0 = vec3(0.267, 0.005, 0.329);
  const vec3 c1 = vec3(0.128, 0.567, 0.551);
  const vec3 c2 = vec3(0.993, 0.906, 0.144);
  t = clamp(t, 0.0, 1.0);
  return t < 0.5 ? mix(c0, c1, t * 2.0) : mix(c1, c2, t * 2.0 - 1.0);
}

vec3 headroom_colour(float v) {
  if (v < 0.0) return mix(vec3(0.93, 0.33, 0.28), vec3(0.50, 0.04, 0.06), clamp(-v * 4.0, 0.0, 1.0));
  float t = clamp(v * 2.0, 0.0, 1.0);
  const vec3 tight = vec3(0.93, 0.62, 0.20);
  const vec3 middle = vec3(0.62, 0.76, 0.30);
  const vec3 ample = vec3(0.16, 0.55, 0.55);
  return t < 0.5 ? mix(tight, middle, t * 2.0) : mix(middle, ample, t * 2.0 - 1.0);
}

void main() {
  vec2 position = vec2(uv.x * float(columns), (1.0 - uv.y) * float(rows));
  ivec2 cell = min(ivec2(position), ivec2(columns - 1, rows - 1));
  float value = texelFetch(cells, cell, 0).r;
  vec3 base = value < -1.0e5 ? vec3(0.32, 0.33, 0.36)
            : headroom_mode == 1 ? headroom_colour(value) : ramp(value);
  vec2 inside = fract(position);
  float edge = max(step(inside.x, seam.x) + step(1.0 - seam.x, inside.x),
                   step(inside.y, seam.y) + step(1.0 - seam.y, inside.y));
  colour = vec4(mix(base, vec3(0.08), clamp(edge, 0.0, 1.0) * 0.85), 1.0);
}
