#include "heat_map.h"

#include "embedded_shaders.h"
#include "gl_api.h"
#include "gl_quad.h"
#include "imgui.h"

namespace {

bool create_resources(HeatMap& map) {
  map.program = link_program(shader_heat_map_vert, shader_heat_map_frag);
  if (map.program == 0) return false;
  create_unit_quad(map.vertex_array, map.vertex_buffer);
  GLuint texture = 0;
  glGenTextures(1, &texture);
  glBindTexture(GL_TEXTURE_2D, texture);
  // R32F is not filterable in WebGL2 without an extension: nearest sampling (texelFetch).
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_NEAREST);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_NEAREST);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_S, GL_CLAMP_TO_EDGE);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_T, GL_CLAMP_TO_EDGE);
  map.texture = texture;
  return true;
}

// Runs inside ImGui_ImplOpenGL3_RenderDrawData; ImGui's state is restored by the
// ImDrawCallback_ResetRenderState command queued right after this one (ImGui binds its own
// texture for every draw command).
void render_map(const ImDrawList*, const ImDrawCmd* command) {
  auto& map = *static_cast<HeatMap*>(command->UserCallbackData);
  if (map.failed || map.columns <= 0 || map.rows <= 0) return;
  if (map.program == 0 && !create_resources(map)) {
    map.failed = true;
    return;
  }
  FramebufferRect rect;
  if (!enter_clip_rect(command, rect)) return;
  glActiveTexture(GL_TEXTURE0);
  glBindTexture(GL_TEXTURE_2D, map.texture);
  if (map.uploaded_version != map.version) {
    glPixelStorei(GL_UNPACK_ALIGNMENT, 4);
    glTexImage2D(GL_TEXTURE_2D, 0, GL_R32F, map.columns, map.rows, 0, GL_RED, GL_FLOAT,
                 map.values.data());
    map.uploaded_version = map.version;
  }
  glUseProgram(map.program);
  glUniform1i(glGetUniformLocation(map.program, "cells"), 0);
  glUniform1i(glGetUniformLocation(map.program, "columns"), map.columns);
  glUniform1i(glGetUniformLocation(map.program, "rows"), map.rows);
  glUniform1i(glGetUniformLocation(map.program, "headroom_mode"), map.headroom_mode ? 1 : 0);
  glUniform2f(glGetUniformLocation(map.program, "seam"),
              1.5f * static_cast<float>(map.columns) / static_cast<float>(rect.width),
              1.5f * static_cast<float>(map.rows) / static_cast<float>(rect.height));
  glBindVertexArray(map.vertex_array);
  glDrawArrays(GL_TRIANGLE_STRIP, 0, 4);
  ++map.draws;
}

}  // namespace

void queue_heat_map(HeatMap& map, ImDrawList* draw_list, const ImVec2& min, const ImVec2& max) {
  queue_callback_in_rect(draw_list, render_map, &map, min, max);
}
