// heat_map.h — the sweep's grid drawn by our own GLSL ES 3.0 shader (shaders/heat_map.{vert,frag})
// from inside ImGui's draw list: one texel per cell of an R32F texture, uploaded only when the
// sweep changes.
// Values: headroom mode, headroom / device bytes (negative: does not fit, drawn red); peak mode
// (no device), peak / largest peak in 0..1. Invalid cells hold invalid_cell and are drawn grey.
#pragma once

#include <array>
#include <cstdint>

struct ImDrawList;
struct ImVec2;

struct HeatMap {
  static constexpr int max_cells = 64 * 64;  // Sweep::max_values squared
  static constexpr float invalid_cell = -1.0e6f;
  std::array<float, max_cells> values{};
  int columns = 0;
  int rows = 0;
  bool headroom_mode = true;
  std::uint64_t version = 0;           // bumped when values change (the texture is re-uploaded)
  std::uint64_t uploaded_version = 0;  // what the texture holds
  // GL objects, created on first use on the thread that owns the context; 0 = not yet.
  std::uint32_t program = 0;
  std::uint32_t vertex_array = 0;
  std::uint32_t vertex_buffer = 0;
  std::uint32_t texture = 0;
  bool failed = false;      // shader did not compile or link: the grid is skipped, not the app
  std::uint64_t draws = 0;  // how many times the shader actually ran (published to tests)
};

// Queues the grid into `draw_list` at [min, max] (ImGui coordinates); row 0 is at the top.
// The map keeps a pointer to `map` until rendering.
void queue_heat_map(HeatMap& map, ImDrawList* draw_list, const ImVec2& min, const ImVec2& max);
