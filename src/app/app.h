// app.h — the portable part of the front end: set-up, the frame function and the panels.
// The platform files (platform_native.cpp / platform_web.cpp) own the window and the loop, and
// implement the platform services declared at the end.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "state.h"

struct GLFWwindow;

// What the app shows when opened without a link: a configuration people run that fits (64 H100s,
// 8 nodes). The core's Config defaults stay as they are, so every old link decodes the same.
inline constexpr std::string_view default_link =
    "v=1&model=llama-3.1-70b&tp=8&pp=4&dp=2&sp=1&seq=8192&optimizer=distributed-adam&device="
    "h100-80gb";

// Applies a link (whole, or its fragment): every good field is applied, each bad one keeps its
// default and is named in the banner (warnings too). The view pairs (view.tab, view.x, view.y:
// the open tab and the sweep's axes) are the app's own and never reach the core's decoder.
void apply_fragment(AppState& state, std::string_view link);
// The fragment of what is on screen: the configuration's (url_fragment.h) + the view pairs.
std::string link_fragment(const AppState& state);
// The app's own pairs after the configuration: a loaded snapshot's summary (snapshot= entries),
// then the view pairs: "" or "&snapshot=...&view.tab=sweep&view.x=seq:1024,2048".
std::string view_fragment(const AppState& state);
// Start-up work done once: the field editors' labels, the term catalogue, the sweep's axes.
void initialize_state(AppState& state);
// Recomputes the report (and its display strings) if the config changed since the last frame.
void refresh_report(AppState& state);
// Sets fonts and style for the given scale (device pixels per logical pixel).
void configure_imgui(AppState& state, float scale);
// One frame: poll, new frame, panels, render (the caller swaps buffers). Records its CPU time.
void run_frame(AppState& state, GLFWwindow* window);
// Whether this animation frame must draw (input settling, a changed config, a requested or timed
// redraw); counts the callbacks that draw nothing. Idle costs nothing.
bool frame_needed(AppState& state);
void note_input(AppState& state);                    // an input event arrived
void request_frames(AppState& state, int frames);    // state changed outside a frame
void redraw_after(AppState& state, double seconds);  // something on screen changes then

// Undo/redo (edit_history.cpp): every change of the config between frames is one step, a widget
// held or typed in merges its changes into one.
void commit_edits(AppState& state);
void undo(AppState& state);
void redo(AppState& state);
bool can_undo(const AppState& state);
bool can_redo(const AppState& state);
void handle_history_keys(AppState& state);  // Ctrl+Z, Ctrl+Shift+Z, Ctrl+Y outside text fields

// Input from outside the widgets (load_input.cpp): a pasted or dropped link, config.json
// (Hugging Face) or stagemem JSON (config or report). `name` is the file name or "clipboard".
// Returns what happened, for the toolbar's message line.
std::string load_text(AppState& state, std::string_view name, std::string_view text);
// A dropped or picked file's bytes: a PyTorch allocator snapshot (a pickle: its name ends in
// .pickle or .pkl, or it starts with pickle's PROTO opcode) is read with the core's decoder and
// opens the Snapshot tab; anything else goes to load_text. Returns the toolbar's message.
std::string load_file(AppState& state, std::string_view name, std::string_view bytes);
// The most bytes load_file takes from a file named `name` that starts with `head` (its first
// bytes, as the platform reads them): an allocator snapshot's limit (PickleLimits), else the
// largest limit of the texts it loads (a Megatron memory log's, memory_log.h).
std::size_t file_limit(std::string_view name, std::string_view head);
// A file the platform could not read (missing, unreadable, over file_limit): `problem` is shown
// in the banner under its name, nothing is loaded. Returns the toolbar's message.
std::string refuse_file(AppState& state, std::string_view name, std::string problem);
// The snapshot's summary in a link (snapshot_link.h), "" when none is loaded.
std::string snapshot_link_part(const AppState& state);
// Applies a link's snapshot= entries: a summary replaces the loaded snapshot, a link without
// any clears it; problems go to state.link_problems.
void apply_snapshot_link(AppState& state, std::string_view link);
// The page's paste event: ImGui's next paste reads `text`; with no text field active, a link or
// JSON loads at once.
void on_paste(AppState& state, std::string_view text);
// Applies a link's fragment (or a whole link) as a user action; true when it had no errors.
bool load_link(AppState& state, std::string_view link);

// Panels: one file each, drawn inside the single full-window ImGui window.
void draw_link_banner(AppState& state);
void draw_toolbar(AppState& state, const stagemem::Report& report);
// The first screen's answer: model, device, layout with DP, world size and nodes, the verdict.
void draw_summary_line(AppState& state, const stagemem::Report& report);
bool report_stale(const AppState& state);  // the config has errors; `report` is an older one
// What "Copy as Markdown" copies: report_markdown.h's text of the report on screen and its link.
std::string markdown_text(const AppState& state);
// The toolbar's feedback line for a few seconds.
void show_message(AppState& state, std::string message);
void draw_config(AppState& state, const stagemem::Report& report);
void draw_measurements(AppState& state, const stagemem::Report& report);  // in the config panel
void draw_stages(AppState& state, const stagemem::Report& report);
void draw_sweep(AppState& state, const stagemem::Report& report);
void draw_cross_checks(AppState& state, const stagemem::Report& report);
void draw_model(AppState& state, const stagemem::Report& report);
void draw_plan(AppState& state, const stagemem::Report& report);
void draw_timeline(AppState& state, const stagemem::Report& report);
void draw_snapshot(AppState& state, const stagemem::Report& report);
void draw_status_bar(AppState& state, const stagemem::Report& report);
std::string_view app_version();  // "0.1.0"
std::string_view app_commit();   // the commit the build was made from (git), or "unknown"

// Helpers of the configuration and Model panels (panel_config.cpp, panel_model.cpp).
void init_field_editors(AppState& state);
// Rewrites the text of list fields being edited when the config changed to something else.
void sync_field_texts(AppState& state);
void init_catalogue(AppState& state);
// A one-click fix for an error with an obvious remedy ("Enable sequence parallelism"), drawn as
// a small button; false when the error has none.
bool draw_fix(AppState& state, const stagemem::FieldMessage& error);
void filter_catalogue(AppState& state);

// Platform services (one implementation per platform file). Each returns the feedback line the
// toolbar shows. Web: the page's link, the async clipboard API and a Blob download; native: the
// fragment (what --url takes), GLFW's clipboard and a file in the working directory.
std::string platform_copy_link(AppState& state);
std::string platform_copy_text(AppState& state, const std::string& text);
std::string platform_save_text(AppState& state, const std::string& file_name,
                               const std::string& mime_type, const std::string& text);
// The link of a fragment: the page's address + '#' + fragment (web); "#" + fragment (native).
std::string platform_link(const AppState& state, const std::string& fragment);
// Opens the platform's file picker for a config.json / stagemem JSON (web: an <input type=file>;
// the file arrives later through load_text). Returns the feedback line.
std::string platform_open_file(AppState& state);
// The same for an allocator snapshot (.pickle); the bytes arrive later through load_file.
std::string platform_open_snapshot(AppState& state);
// A link the user loaded or pasted becomes a browser history entry (Back returns to the
// previous one); native: nothing.
void platform_push_link(AppState& state);
