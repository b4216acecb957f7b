// load_input.h — input from outside the widgets: a link or a document pasted anywhere on the
// page, dropped onto it or opened with the file picker (what it is, is read from the text, see
// load_input.cpp), and allocator snapshots. The reducer applies these (actions.h: LoadText,
// LoadFile, RefuseFile); each returns the line the toolbar shows. Problems go to the banner,
// naming the field, as for a link; nothing is applied then except a link's good fields.
// Limitations: a file is taken whole, within file_limit; nothing here reads files itself (the
// platform does, bounded).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

struct AppState;
class Platform;

// The name LoadText gives text pasted from the clipboard (a file's name otherwise).
inline constexpr std::string_view clipboard_name = "the clipboard";

// A link (whole, or its fragment), config.json (Hugging Face) or stagemem JSON (config or
// report), or Megatron memory report lines. `name` is the file name or "the clipboard". A link
// the user loads becomes a history entry (Platform::push_link).
std::string load_text(AppState& state, std::string_view name, std::string_view text,
                      Platform& platform);
// A dropped or picked file's bytes: a PyTorch allocator snapshot (a pickle: its name ends in
// .pickle or .pkl, or it starts with pickle's PROTO opcode) is read with the core's decoder and
// opens the Snapshot tab; anything else goes to load_text.
std::string load_file(AppState& state, std::string_view name, std::string_view bytes,
                      Platform& platform);
// The most bytes load_file takes from a file named `name` that starts with `head` (its first
// bytes, as the platform reads them): an allocator snapshot's limit (PickleLimits), else the
// largest limit of the texts it loads (a Megatron memory log's, memory_log.h).
std::size_t file_limit(std::string_view name, std::string_view head);
// A file the platform could not read (missing, unreadable, over file_limit): `problem` is shown
// in the banner under its name, nothing is loaded.
std::string refuse_file(AppState& state, std::string_view name, std::string problem);
// Whether pasted text outside a text field is something load_text takes (a link, a JSON
// document, memory report lines) rather than stray text to ignore.
bool loadable_text(std::string_view text);
