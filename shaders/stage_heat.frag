// A one-row heat strip: cell i of `cell_count` is coloured by value[i] in 0..1 (peak of stage i
// over the device capacity or the largest stage). Colour map: a perceptual blue-to-yellow ramp
// with a red overflow band above 1.0, and a thin dark seam between cells.
in vec2 uv;
out vec4 colour;
uniform int cell_count;
uniform float values[64];
uniform float seam_width;  // in uv units of one cell

vec3 ramp(float t) {
  const vec3 c0 = vec3(0.267, 0.005, 0.329);
  const vec3 c1 = vec3(0.128, 0.567, 0.551);
  const vec3 c2 = vec3(0.993, 0.906, 0.144);
  t = clamp(t, 0.0, 1.0);
  return t < 0.5 ? mix(c0, c1, t * 2.0) : mix(c1, c2, t * 2.0 - 1.0);
}

void main() {
  float position = uv.x * float(cell_count);
  int cell = min(int(position), cell_count - 1);
  float value = values[cell];
  vec3 base = value > 1.0 ? vec3(0.85, 0.15, 0.12) : ramp(value);
  float inside = fract(position);
  float seam = step(inside, seam_width) + step(1.0 - seam_width, inside);
  colour = vec4(mix(base, vec3(0.08), clamp(seam, 0.0, 1.0) * 0.8), 1.0);
}
