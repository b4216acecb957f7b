// heat_strip.h — our own GPU drawing: a one-row heat map of per-stage values, drawn with the
// GLSL ES 3.0 shader in shaders/stage_heat.{vert,frag} from inside ImGui's draw list.
#pragma once

#include <array>
#include <cstdint>

struct ImDrawList;
struct ImVec2;

struct HeatStrip {
  static constexpr int max_cells = 64;  // matches `uniform float values[64]` in the shader
  std::array<float, max_cells> values{};
  int cell_count = 0;
  // GL objects, created on first use on the thread that owns the context; 0 = not yet.
  std::uint32_t program = 0;
  std::uint32_t vertex_array = 0;
  std::uint32_t vertex_buffer = 0;
  bool failed = false;      // shader did not compile or link: the strip is skipped, not the app
  std::uint64_t draws = 0;  // how many times the shader actually ran (published to tests)
};

// Queues the strip into `draw_list` at [min, max] (ImGui coordinates). Values are 0..1, with
// anything above 1.0 drawn as overflow. The strip keeps a pointer to `strip` until rendering.
void queue_heat_strip(HeatStrip& strip, ImDrawList* draw_list, const ImVec2& min,
                      const ImVec2& max);
