#include "heat_strip.h"

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

bool create_resources(HeatStrip& strip) {
  const GLuint vertex = compile(GL_VERTEX_SHADER, shader_stage_heat_vert);
  const GLuint fragment = compile(GL_FRAGMENT_SHADER, shader_stage_heat_frag);
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
  strip.program = program;
  constexpr float corners[] = {-1, -1, 1, -1, -1, 1, 1, 1};
  GLuint vao = 0, vbo = 0;
  glGenVertexArrays(1, &vao);
  glBindVertexArray(vao);
  glGenBuffers(1, &vbo);
  glBindBuffer(GL_ARRAY_BUFFER, vbo);
  glBufferData(GL_ARRAY_BUFFER, sizeof corners, corners, GL_STATIC_DRAW);
  glEnableVertexAttribArray(0);
  glVertexAttribPointer(0, 2, GL_FLOAT, GL_FALSE, 0, nullptr);
  strip.vertex_array = vao;
  strip.vertex_buffer = vbo;
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
  glViewport(x, y, width, height);
  glScissor(x, y, width, height);
  glDisable(GL_BLEND);
  glUseProgram(strip.program);
  glUniform1i(glGetUniformLocation(strip.program, "cell_count"), strip.cell_count);
  glUniform1fv(glGetUniformLocation(strip.program, "values"), strip.cell_count, strip.values.data());
  glUniform1f(glGetUniformLocation(strip.program, "seam_width"),
              1.5f * static_cast<float>(strip.cell_count) / static_cast<float>(width));
  glBindVertexArray(strip.vertex_array);
  glDrawArrays(GL_TRIANGLE_STRIP, 0, 4);
  ++strip.draws;
}

}  // namespace

void queue_heat_strip(HeatStrip& strip, ImDrawList* draw_list, const ImVec2& min, const ImVec2& max) {
  draw_list->PushClipRect(min, max, true);
  draw_list->AddCallback(render_strip, &strip);
  draw_list->AddCallback(ImDrawCallback_ResetRenderState, nullptr);
  draw_list->PopClipRect();
}
