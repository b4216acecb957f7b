// browser.h — the app's window onto the page: location.hash, history, hashchange, canvas size.
// Every call into JavaScript in the product lives here or in bindings.cpp, nowhere else.
#pragma once

#include <string>

struct AppState;

// The page's current fragment, without the leading '#'.
std::string read_location_fragment();
// Replaces the fragment with history.replaceState (no new history entry, no hashchange event).
void replace_location_fragment(const std::string& fragment);
// Calls Module.stagememApplyFragment(location.hash) on every hashchange (back/forward, pasted link).
void listen_for_hash_changes();
// Hides the page's loading indicator once the first frame is on screen.
void mark_app_ready();

// Device pixels per CSS pixel, and the canvas's CSS size.
double device_pixel_ratio();
void canvas_css_size(double& width, double& height);
// Sets the canvas's backing store (device pixels); GLFW's window and framebuffer follow.
void set_canvas_size(int width, int height);

// Registers the state the Embind API (bindings.cpp) reads and edits. The page has one app.
void register_app_state(AppState* state);
// Keeps location.hash equal to the encoding of the current configuration.
void sync_location_fragment(AppState& state);
