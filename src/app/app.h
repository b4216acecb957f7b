// app.h — the portable part of the front end: set-up, the frame function and the panels.
// The platform files (platform_native.cpp / platform_web.cpp) own the window and the loop.
#pragma once

#include <string_view>

#include "state.h"

struct GLFWwindow;

// Applies a link's fragment: on errors keeps defaults and raises the banner; warnings too.
void apply_fragment(AppState& state, std::string_view fragment);
// Recomputes the report if the config changed since the last frame.
void refresh_report(AppState& state);
// Sets fonts and style for the given scale (device pixels per logical pixel).
void configure_imgui(AppState& state, float scale);
// One frame: poll, new frame, panels, render (the caller swaps buffers).
void run_frame(AppState& state, GLFWwindow* window);

// Panels: one file each, drawn inside the single full-window ImGui window.
void draw_link_banner(AppState& state);
void draw_config(AppState& state, const stagemem::Report& report);
void draw_stages(AppState& state, const stagemem::Report& report);
