// app.h — the portable part of the front end: set-up, the frame function and the panels.
// The platform files (platform_native.cpp / platform_web.cpp) own the window and the loop, and
// implement the platform services declared at the end.
#pragma once

#include <string>
#include <string_view>

#include "state.h"

struct GLFWwindow;

// Applies a link's fragment: on errors keeps defaults and raises the banner; warnings too.
void apply_fragment(AppState& state, std::string_view fragment);
// Start-up work done once: the field editors' labels, the term catalogue, the sweep's axes.
void initialize_state(AppState& state);
// Recomputes the report (and its display strings) if the config changed since the last frame.
void refresh_report(AppState& state);
// Sets fonts and style for the given scale (device pixels per logical pixel).
void configure_imgui(AppState& state, float scale);
// One frame: poll, new frame, panels, render (the caller swaps buffers). Records its CPU time.
void run_frame(AppState& state, GLFWwindow* window);

// Panels: one file each, drawn inside the single full-window ImGui window.
void draw_link_banner(AppState& state);
void draw_toolbar(AppState& state, const stagemem::Report& report);
void draw_config(AppState& state, const stagemem::Report& report);
void draw_measurements(AppState& state, const stagemem::Report& report);  // in the config panel
void draw_stages(AppState& state, const stagemem::Report& report);
void draw_sweep(AppState& state, const stagemem::Report& report);
void draw_cross_checks(AppState& state, const stagemem::Report& report);
void draw_model(AppState& state, const stagemem::Report& report);
void draw_plan(AppState& state, const stagemem::Report& report);
void draw_status_bar(AppState& state, const stagemem::Report& report);

// Helpers of the configuration and Model panels (panel_config.cpp, panel_model.cpp).
void init_field_editors(AppState& state);
// Rewrites the text of list fields being edited when the config changed to something else.
void sync_field_texts(AppState& state);
void init_catalogue(AppState& state);
void filter_catalogue(AppState& state);

// Platform services (one implementation per platform file). Each returns the feedback line the
// toolbar shows. Web: the page's link, the async clipboard API and a Blob download; native: the
// fragment (what --url takes), GLFW's clipboard and a file in the working directory.
std::string platform_copy_link(AppState& state);
std::string platform_copy_text(AppState& state, const std::string& text);
std::string platform_save_text(AppState& state, const std::string& file_name,
                               const std::string& mime_type, const std::string& text);
