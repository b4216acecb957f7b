// frame.h — what a platform (platform_native.cpp, src/web/platform_web.cpp) calls: set-up, the
// per-frame function, the refresh of what is derived from the state, and when to draw at all.
// The platform owns the window and the loop, and swaps buffers after run_frame.
#pragma once

struct AppState;
struct GLFWwindow;
class Platform;

// Sets fonts and style for the given scale (device pixels per logical pixel).
void configure_imgui(AppState& state, float scale);
// Start-up work done once: the field editors' labels, the term catalogue, the sweep's axes.
void initialize_state(AppState& state);

// One frame: poll, new frame, refresh, panels, apply their actions, render (the caller swaps
// buffers). Records its CPU time.
void run_frame(AppState& state, GLFWwindow* window, Platform& platform);
// Recomputes the report (and its display strings, the field texts) if the configuration changed
// since the last call. run_frame calls it first; the bindings before they read the report.
void refresh_report(AppState& state);
// Brings the open tab's derived data up to date before it is drawn: a time slice of the sweep's
// grid or of the plan search, the chosen stage's timeline, the snapshot's stage in range, the
// scaling cross-check.
void refresh_open_tab(AppState& state);

// Whether this animation frame must draw (input settling, a changed config, a requested or timed
// redraw); counts the callbacks that draw nothing. Idle costs nothing.
bool frame_needed(AppState& state);
void note_input(AppState& state);                    // an input event arrived
void request_frames(AppState& state, int frames);    // state changed outside a frame
void redraw_after(AppState& state, double seconds);  // something on screen changes then
