// A quad covering the viewport; uv runs 0..1 left to right and bottom to top.
layout(location = 0) in vec2 corner;
out vec2 uv;
void main() {
  uv = corner * 0.5 + 0.5;
  gl_Position = vec4(corner, 0.0, 1.0);
}
