// browser.h — the app's window onto the page: location.hash, history, hashchange, canvas size,
// clipboard and downloads, as plain C++ calls (no app types: platform_web.cpp and bindings.cpp
// connect them to the app).
// Every call into JavaScript in the product lives here or in bindings.cpp, nowhere else.
#pragma once

#include <string>

// The page's current fragment, without the leading '#'.
std::string read_location_fragment();
// Replaces the fragment with history.replaceState (no new history entry, no hashchange event).
void replace_location_fragment(const std::string& fragment);
// Adds a history entry for `fragment` (a link the user loaded or pasted: Back returns to the
// previous one).
void push_location_fragment(const std::string& fragment);
// The page's address without its fragment.
std::string page_address();
// Calls Module.stagememApplyFragment(location.hash) on every hashchange (back/forward, pasted
// link).
void listen_for_hash_changes();
// The page's events that the app answers outside ImGui's own input: every input event (to wake
// the idle frame loop), paste (Module.stagememPaste), files dropped anywhere on the page
// (Module.stagememLoadFile, or Module.stagememLoadBytes for a snapshot pickle). Registered once.
void listen_for_page_events();
// True once for each batch of input events since the last call (the frame loop's wake-up).
bool take_input_events();
// Opens the browser's file picker for .json files (and snapshots); the chosen file is read in the
// page and goes to Module.stagememLoadFile (text) or Module.stagememLoadBytes (a pickle).
void open_file_picker();
// The same picker for allocator snapshots only (.pickle, .pkl).
void open_snapshot_picker();
// Hides the page's loading indicator once the first frame is on screen and gives the canvas
// the keyboard focus (ImGui's keyboard navigation is on).
void mark_app_ready();

// navigator.clipboard.writeText of `text`. Asynchronous: a refusal (no
// permission, page not focused) is reported on the console, never thrown.
void copy_text_to_clipboard(const std::string& text);
// Offers `text` as a file download (a Blob and an <a download> element, never inserted as HTML).
void download_text(const std::string& file_name, const std::string& mime_type,
                   const std::string& text);

// Device pixels per CSS pixel, and the canvas's CSS size.
double device_pixel_ratio();
void canvas_css_size(double& width, double& height);
// Sets the canvas's backing store (device pixels); GLFW's window and framebuffer follow.
void set_canvas_size(int width, int height);
