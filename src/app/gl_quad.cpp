#include "gl_quad.h"

#include <string>

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

}  // namespace

GLuint link_program(const char* vertex_body, const char* fragment_body) {
  const GLuint vertex = compile(GL_VERTEX_SHADER, vertex_body);
  const GLuint fragment = compile(GL_FRAGMENT_SHADER, fragment_body);
  if (vertex == 0 || fragment == 0) {
    if (vertex != 0) glDeleteShader(vertex);
    if (fragment != 0) glDeleteShader(fragment);
    return 0;
  }
  const GLuint program = glCreateProgram();
  glAttachShader(program, vertex);
  glAttachShader(program, fragment);
  glLinkProgram(program);
  glDeleteShader(vertex);
  glDeleteShader(fragment);
  GLint linked = GL_FALSE;
  glGetProgramiv(program, GL_LINK_STATUS, &linked);
  if (linked != GL_TRUE) {
    glDeleteProgram(program);
    return 0;
  }
  return program;
}

void create_unit_quad(std::uint32_t& vertex_array, std::uint32_t& vertex_buffer) {
  constexpr float corners[] = {-1, -1, 1, -1, -1, 1, 1, 1};
  GLuint vao = 0, vbo = 0;
  glGenVertexArrays(1, &vao);
  glBindVertexArray(vao);
  glGenBuffers(1, &vbo);
  glBindBuffer(GL_ARRAY_BUFFER, vbo);
  glBufferData(GL_ARRAY_BUFFER, sizeof corners, corners, GL_STATIC_DRAW);
  glEnableVertexAttribArray(0);
  glVertexAttribPointer(0, 2, GL_FLOAT, GL_FALSE, 0, nullptr);
  vertex_array = vao;
  vertex_buffer = vbo;
}

bool enter_clip_rect(const ImDrawCmd* command, FramebufferRect& rect) {
  const ImDrawData* draw_data = ImGui::GetDrawData();
  const ImVec2 scale = draw_data->FramebufferScale;
  const ImVec2 origin = draw_data->DisplayPos;
  const float framebuffer_height = draw_data->DisplaySize.y * scale.y;
  const ImVec4 clip = command->ClipRect;
  rect.x = static_cast<GLint>((clip.x - origin.x) * scale.x);
  rect.width = static_cast<GLsizei>((clip.z - clip.x) * scale.x);
  rect.height = static_cast<GLsizei>((clip.w - clip.y) * scale.y);
  rect.y = static_cast<GLint>(framebuffer_height - (clip.w - origin.y) * scale.y);
  if (rect.width <= 0 || rect.height <= 0) return false;
  glViewport(rect.x, rect.y, rect.width, rect.height);
  glScissor(rect.x, rect.y, rect.width, rect.height);
  glDisable(GL_BLEND);
  return true;
}

void queue_callback_in_rect(ImDrawList* draw_list, ImDrawCallback callback, void* user_data,
                            const ImVec2& min, const ImVec2& max) {
  draw_list->PushClipRect(min, max, true);
  draw_list->AddCallback(callback, user_data);
  draw_list->AddCallback(ImDrawCallback_ResetRenderState, nullptr);
  draw_list->PopClipRect();
}
