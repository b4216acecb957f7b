#include "heat_strip.h"

#include "embedded_shaders.h"
#include "gl_api.h"
#include "gl_quad.h"
#include "imgui.h"

namespace {

bool create_resources(HeatStrip& strip) {
  strip.program = link_program(shader_stage_heat_vert, shader_stage_heat_frag);
  if (strip.program == 0) return false;
  create_unit_quad(strip.vertex_array, strip.vertex_buffer);
  return true;
}

// Runs inside ImGui_ImplOpenGL3_RenderDrawData; ImGui's state is restored by the
// ImDrawCallback_ResetRenderState command queued right after this one.
void render_strip(const ImDrawList*, const ImDrawCmd* command) {
  auto& strip = *static_cast<HeatStrip*>(command->UserCallbackData);
  if (strip.failed || strip.cell_count <= 0) return;
  if (strip.program == 0 && !create_resources(strip)) {
    strip.failed = true;
    return;
  }
  FramebufferRect rect;
  if (!enter_clip_rect(command, rect)) return;
  glUseProgram(strip.program);
  glUniform1i(glGetUniformLocation(strip.program, "cell_count"), strip.cell_count);
  glUniform1fv(glGetUniformLocation(strip.program, "values"), strip.cell_count,
               strip.values.data());
  glUniform1f(glGetUniformLocation(strip.program, "seam_width"),
              1.5f * static_cast<float>(strip.cell_count) / static_cast<float>(rect.width));
  glBindVertexArray(strip.vertex_array);
  glDrawArrays(GL_TRIANGLE_STRIP, 0, 4);
  ++strip.draws;
}

}  // namespace

void queue_heat_strip(HeatStrip& strip, ImDrawList* draw_list, const ImVec2& min,
                      const ImVec2& max) {
  queue_callback_in_rect(draw_list, render_strip, &strip, min, max);
}
