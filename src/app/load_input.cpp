// Input that arrives from outside the widgets: a link or a JSON document pasted anywhere on the
// page, dropped onto it, or opened with the file picker. What it is, is read from the text:
//   - a stagemem link (whole, or just its fragment "v=1&...") -> applied like opening the link;
//   - a stagemem report JSON (it carries its configuration's "link", or "fragment" in the
//     earlier draft format) -> that link;
//   - a stagemem configuration JSON ("format": "stagemem-config") -> config_from_json;
//   - any other JSON object -> a Hugging Face config.json: its model becomes the custom model and
//     the rest of the configuration (layout, device, ...) stays as it is;
//   - a PyTorch allocator snapshot (load_file: a pickle, by name or by its first byte) -> read
//     with the core's decoder (snapshot.h) in the page, never sent anywhere; the Snapshot tab
//     opens and the link carries its summary (snapshot_link.h), never the file;
//   - text holding Megatron memory report lines ("[Rank r] (after N iterations) memory (MB) |
//     allocated: ...") -> each rank's figures become measurements on its stage (memory_log.h),
//     replacing the readings of an earlier log; the Cross-checks tab opens.
// Problems are shown in the banner naming the field, as for a link; nothing is applied then,
// except a link's good fields.
#include "load_input.h"

#include <algorithm>
#include <cctype>
#include <string>

#include "config/config_json.h"
#include "fixes.h"
#include "link.h"
#include "measured/memory_log.h"
#include "measured/snapshot.h"
#include "model/hf_config.h"
#include "model/model_text.h"
#include "platform.h"
#include "state.h"

namespace {

std::string_view trim(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front())))
    text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())))
    text.remove_suffix(1);
  return text;
}

// What the user gave, shortened for a message: its first line, at most 40 characters.
std::string excerpt(std::string_view text) {
  constexpr std::size_t limit = 40;
  const std::string_view line = text.substr(0, text.find('\n'));
  std::string out;
  for (char c : line.substr(0, limit)) {
    out += static_cast<unsigned char>(c) < 0x20 ? ' ' : c;
  }
  return out + (line.size() > limit || line.size() < text.size() ? "..." : "");
}

bool looks_like_link(std::string_view text) {
  if (text.find('\n') != std::string_view::npos) return false;
  const auto hash = text.find('#');
  const std::string_view fragment = hash == std::string_view::npos ? text : text.substr(hash + 1);
  return fragment.starts_with("v=");
}

// The string value of `"key": "..."` in the document, read without a JSON parser (the first
// occurrence): a link holds no quotes (they are percent-encoded), and what is read is then
// decoded as a link, which checks every field. Empty when absent.
std::string string_value(std::string_view json, std::string_view key) {
  const std::string quoted = "\"" + std::string(key) + "\"";
  auto at = json.find(quoted);
  if (at == std::string_view::npos) return "";
  at = json.find_first_not_of(" \t\r\n", at + quoted.size());
  if (at == std::string_view::npos || json[at] != ':') return "";
  at = json.find_first_not_of(" \t\r\n", at + 1);
  if (at == std::string_view::npos || json[at] != '"') return "";
  std::string out;
  for (std::size_t i = at + 1; i < json.size() && json[i] != '"'; ++i) {
    if (json[i] == '\\' && i + 1 < json.size()) ++i;
    out += json[i];
  }
  return out;
}

void show_problems(AppState& state, std::string title, std::vector<stagemem::FieldMessage> errors) {
  state.link_problems_title = std::move(title);
  state.link_problems = std::move(errors);
  state.link_banner_visible = !state.link_problems.empty();
}

bool looks_like_memory_log(std::string_view text) {
  const auto marker = text.find(" memory (");
  return marker != std::string_view::npos &&
         text.find("| allocated:", marker) != std::string_view::npos;
}

// Applies a link (or its fragment) as a user action: a history entry; true when it had no errors.
bool load_link(AppState& state, std::string_view link, Platform& platform) {
  apply_fragment(state, link);
  platform.push_link(state);
  return state.link_problems.empty();
}

// Megatron's memory report lines as measurements of the current layout.
std::string load_memory_log(AppState& state, const std::string& from, std::string_view text,
                            Platform& platform) {
  stagemem::Diagnostics d;
  const auto readings = stagemem::parse_memory_log(text, from, d);
  std::vector<stagemem::Measurement> kept = state.config.measurements;
  std::erase_if(kept, [](const stagemem::Measurement& m) {
    return m.rank >= 0 || m.figure != stagemem::MemoryFigure::unspecified;
  });
  const std::size_t room =
      stagemem::max_measurements - std::min(stagemem::max_measurements, kept.size());
  auto measurements = d.ok() ? stagemem::memory_log_measurements(readings, state.config.parallel,
                                                                 from, from, room, d)
                             : std::vector<stagemem::Measurement>{};
  if (!d.ok() || measurements.empty()) {
    if (d.ok()) d.error(from, "no memory report line could be read");
    show_problems(state, from + ": the memory log was not loaded:", std::move(d.errors));
    return "Nothing loaded from " + from;
  }
  const std::size_t count = measurements.size();
  for (auto& m : measurements) kept.push_back(std::move(m));
  state.config.measurements = std::move(kept);
  show_problems(state, from + ":", std::move(d.warnings));
  state.requested_tab = MainTab::cross_checks;
  platform.push_link(state);
  return "Loaded " + std::to_string(count) + " memory readings from " + from +
         " (Megatron's memory report lines)";
}

bool looks_like_pickle(std::string_view name, std::string_view bytes) {
  const auto ends = [&](std::string_view tail) {
    if (name.size() < tail.size()) return false;
    for (std::size_t i = 0; i < tail.size(); ++i) {
      const char c = name[name.size() - tail.size() + i];
      if (std::tolower(static_cast<unsigned char>(c)) != tail[i]) return false;
    }
    return true;
  };
  // Protocol 2 and later open with PROTO (0x80) and the protocol number.
  const bool proto = bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x80 &&
                     bytes[1] >= 2 && bytes[1] <= 5;
  return ends(".pickle") || ends(".pkl") || proto;
}

std::string load_snapshot(AppState& state, const std::string& from, std::string_view bytes,
                          Platform& platform) {
  const stagemem::SnapshotDecoded decoded = stagemem::read_snapshot(bytes);
  std::string error = decoded.error;
  stagemem::SnapshotSummary summary;
  if (decoded.snapshot) {
    summary = stagemem::summarize_snapshot(*decoded.snapshot);
    error = summary.error;
  }
  if (!error.empty()) {
    // The snapshot shown before (if any) stays; the tab and the banner say why this one did not.
    state.snapshot.error = error;
    state.snapshot.error_file = from;
    show_problems(state, from + " is not a readable allocator snapshot:", {{from, error}});
    state.requested_tab = MainTab::snapshot;
    return "Nothing loaded from " + from;
  }
  // Compared with the stage the timeline shows (the binding stage unless one was chosen).
  std::int64_t stage = state.timeline.stage;
  if (stage < 0) stage = state.report.binding_stage;
  state.snapshot = SnapshotTab{.loaded = true,
                               .from_link = false,
                               .file = from,
                               .stage = std::max<std::int64_t>(stage, 0),
                               .summary = std::move(summary),
                               .file_bytes = static_cast<std::int64_t>(bytes.size()),
                               .error = {},
                               .error_file = {}};
  state.link_banner_visible = false;
  state.requested_tab = MainTab::snapshot;
  platform.push_link(state);
  return "Read the allocator snapshot " + from + " in the page (" + std::to_string(bytes.size()) +
         " bytes; it was not uploaded)";
}

}  // namespace

std::string load_file(AppState& state, std::string_view name, std::string_view bytes,
                      Platform& platform) {
  if (looks_like_pickle(name, bytes)) {
    return load_snapshot(state, std::string(name), bytes, platform);
  }
  return load_text(state, name, bytes, platform);
}

std::size_t file_limit(std::string_view name, std::string_view head) {
  // load_text's kinds: a link, a stagemem or Hugging Face JSON (1 MiB, 4 MiB) or a memory log.
  constexpr std::size_t text_limit = std::max(
      {stagemem::max_log_bytes, stagemem::max_config_json_bytes, stagemem::max_hf_config_bytes});
  return looks_like_pickle(name, head) ? stagemem::PickleLimits{}.max_input_bytes : text_limit;
}

std::string refuse_file(AppState& state, std::string_view name, std::string problem) {
  const std::string from(name);
  show_problems(state, "Nothing was loaded:", {{from, std::move(problem)}});
  return "Nothing loaded from " + from;
}

std::string load_text(AppState& state, std::string_view name, std::string_view text,
                      Platform& platform) {
  text = trim(text);
  const std::string from(name);
  if (looks_like_link(text)) {
    const bool clean = load_link(state, text, platform);
    state.link_problems_title = "This link has problems; its other fields are applied:";
    return clean ? "Loaded the link from " + from : "Loaded the link from " + from + " (see above)";
  }
  if (!text.starts_with("{") && looks_like_memory_log(text))
    return load_memory_log(state, from, text, platform);
  if (!text.starts_with("{")) {
    show_problems(state, "Nothing was loaded:",
                  {{from, "\"" + excerpt(text) +
                              "\" is not a stagemem link (v=1&...), a stagemem JSON, a Hugging "
                              "Face config.json or Megatron memory report lines"}});
    return "Nothing loaded from " + from;
  }
  std::string fragment = string_value(text, "link");
  if (!looks_like_link(fragment)) fragment = string_value(text, "fragment");
  if (looks_like_link(fragment)) {
    load_link(state, fragment, platform);
    state.link_problems_title =
        "The report's configuration has problems; its other fields are applied:";
    return "Loaded the configuration of the report " + from;
  }
  if (string_value(text, "format") == "stagemem-config") {
    stagemem::DecodedConfig decoded = stagemem::config_from_json(text);
    if (!decoded.diagnostics.ok()) {
      show_problems(state, from + " was not loaded:", std::move(decoded.diagnostics.errors));
      return "Nothing loaded from " + from;
    }
    state.config = std::move(decoded.config);
    show_problems(state, from + ":", std::move(decoded.diagnostics.warnings));
    platform.push_link(state);
    return "Loaded the configuration " + from;
  }
  // A file's name names the model when the config has no _name_or_path ("the clipboard" does not).
  stagemem::HfImport imported =
      stagemem::import_hf_config(text, from == clipboard_name ? std::string_view() : name);
  if (!imported.model) {
    show_problems(state, from + " is not a usable Hugging Face config.json:",
                  std::move(imported.diagnostics.errors));
    return "Nothing loaded from " + from;
  }
  state.config.custom_model = stagemem::model_to_text(*imported.model);
  // The layout moves to the nearest valid one for this model, and says what it changed; the
  // estimate follows at once (never a stale report for a layout the model cannot have).
  const std::string changed = settle_model_change(state);
  state.link_banner_visible = false;
  platform.push_link(state);
  return "Loaded " + from + " as the custom model " + imported.model->name +
         (changed.empty() ? std::string() : "; changed " + changed);
}

bool loadable_text(std::string_view text) {
  const std::string_view trimmed = trim(text);
  return looks_like_link(trimmed) || trimmed.starts_with("{") || looks_like_memory_log(trimmed);
}
