#include "heat_map.h"

#include <string>

#include "embedded_shaders.h"
#include "gl_api.h"
#include "imgui.h"

namespace {

GLuint compile(GLenum kind, const char* body) {
  const std::string source = std::string(glsl_prelude) + body;
  const char* text = source.c_str();
  const GLuint shader = glCreateShader(kind);
  glShaderSource(shader, 1, &text, nullptr);
  glCompileShader(shader);
  GLint ok = GL_FALSE;
  glGetShaderiv(shader, GL_COMPILE_STATUS, &ok);
  if (ok != GL_TRUE) {
    glDeleteShader(shader);
    return 0;
  }
  return shader;
}

bool create_resources(HeatMap& map) {
  const GLuint vertex = compile(GL_VERTEX_SHADER, shader_heat_map_vert);
  const GLuint fragment = compile(GL_FRAGMENT_SHADER, shader_heat_map_frag);
  if (vertex == 0 || fragment == 0) return false;
  const GLuint program = glCreateProgram();
  glAttachShader(program, vertex);
  glAttachShader(program, fragment);
  glLinkProgram(program);
  glDeleteShader(vertex);
  glDeleteShader(fragment);
  GLint linked = GL_FALSE;
  glGetProgramiv(program, GL_LINK_STATUS, &linked);
  if (linked != GL_TRUE) return false;
  map.program = program;
  constexpr float corners[] = {-1, -1, 1, -1, -1, 1, 1, 1};
  GLuint vao = 0, vbo = 0, texture = 0;
  glGenVertexArrays(1, &vao);
  glBindVertexArray(vao);
  glGenBuffers(1, &vbo);
  glBindBuffer(GL_ARRAY_BUFFER, vbo);
  glBufferData(GL_ARRAY_BUFFER, sizeof corners, corners, GL_STATIC_DRAW);
  glEnableVertexAttribArray(0);
  glVertexAttribPointer(0, 2, GL_FLOAT, GL_FALSE, 0, nullptr);
  glGenTextures(1, &texture);
  glBindTexture(GL_TEXTURE_2D, texture);
  // R32F is not filterable in WebGL2 without an extension: nearest sampling (texelFetch).
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_NEAREST);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_NEAREST);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_S, GL_CLAMP_TO_EDGE);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_T, GL_CLAMP_TO_EDGE);
  map.vertex_array = vao;
  map.vertex_buffer = vbo;
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
  const ImDrawData* draw_data = ImGui::GetDrawData();
  const ImVec2 scale = draw_data->FramebufferScale;
  const ImVec2 origin = draw_data->DisplayPos;
  const float framebuffer_height = draw_data->DisplaySize.y * scale.y;
  const ImVec4 clip = command->ClipRect;
  const auto x = static_cast<GLint>((clip.x - origin.x) * scale.x);
  const auto width = static_cast<GLsizei>((clip.z - clip.x) * scale.x);
  const auto height = static_cast<GLsizei>((clip.w - clip.y) * scale.y);
  const auto y = static_cast<GLint>(framebuffer_height - (clip.w - origin.y) * scale.y);
  if (width <= 0 || height <= 0) return;
  glActiveTexture(GL_TEXTURE0);
  glBindTexture(GL_TEXTURE_2D, map.texture);
  if (map.uploaded_version != map.version) {
    glPixelStorei(GL_UNPACK_ALIGNMENT, 4);
    glTexImage2D(GL_TEXTURE_2D, 0, GL_R32F, map.columns, map.rows, 0, GL_RED, GL_FLOAT,
                 map.values.data());
    map.uploaded_version = map.version;
  }
  glViewport(x, y, width, height);
  glScissor(x, y, width, height);
  glDisable(GL_BLEND);
  glUseProgram(map.program);
  glUniform1i(glGetUniformLocation(map.program, "cells"), 0);
  glUniform1i(glGetUniformLocation(map.program, "columns"), map.columns);
  glUniform1i(glGetUniformLocation(map.program, "rows"), map.rows);
  glUniform1i(glGetUniformLocation(map.program, "headroom_mode"), map.headroom_mode ? 1 : 0);
  glUniform2f(glGetUniformLocation(map.program, "seam"),
              1.5f * static_cast<float>(map.columns) / static_cast<float>(width),
              1.5f * static_cast<float>(map.rows) / static_cast<float>(height));
  glBindVertexArray(map.vertex_array);
  glDrawArrays(GL_TRIANGLE_STRIP, 0, 4);
  ++map.draws;
}

}  // namespace

void queue_heat_map(HeatMap& map, ImDrawList* draw_list, const ImVec2& min, const ImVec2& max) {
  draw_list->PushClipRect(min, max, true);
  draw_list->AddCallback(render_map, &map);
  draw_list->AddCallback(ImDrawCallback_ResetRenderState, nullptr);
  draw_list->PopClipRect();
}
