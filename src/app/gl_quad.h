// gl_quad.h — the GL plumbing our own shaders share: compile and link a program from two
// embedded shader bodies, a unit quad to draw them on, and the framebuffer rectangle of an ImGui
// draw-list callback (our drawing runs inside ImGui's render pass, see heat_strip / heat_map).
#pragma once

#include <cstdint>

#include "gl_api.h"
#include "imgui.h"

// The linked program, or 0 when a shader does not compile or link (callers skip their drawing,
// they do not stop the app).
GLuint link_program(const char* vertex_body, const char* fragment_body);

// A vertex array holding one triangle strip covering clip space, attribute 0 = corner (-1..1).
void create_unit_quad(std::uint32_t& vertex_array, std::uint32_t& vertex_buffer);

struct FramebufferRect {
  GLint x = 0;
  GLint y = 0;
  GLsizei width = 0;
  GLsizei height = 0;
};
// The callback command's clip rectangle in framebuffer pixels (origin bottom-left), with the
// viewport and scissor set to it. False when it is empty.
bool enter_clip_rect(const ImDrawCmd* command, FramebufferRect& rect);
// Queues `callback` with `user_data` drawn inside [min, max], then ImGui's state reset.
void queue_callback_in_rect(ImDrawList* draw_list, ImDrawCallback callback, void* user_data,
                            const ImVec2& min, const ImVec2& max);
