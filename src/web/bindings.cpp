// bindings.cpp — the Embind API the page and the browser tests use. Plain values cross the
// boundary (numbers, strings, plain objects); byte counts go out as doubles, exact below 2^53.
//
//   Module.frameCount()                 frames drawn so far
//   Module.getConfig()                  the whole configuration: config_to_json's document, parsed
//   Module.setConfigValue(key, value)   edit one field by its config_fields.h key (value: number,
//                                       boolean or its text form); "" or an error naming the field
//   Module.getReport()                  the report JSON document (docs/report-schema.md; the
//                                       text of getReportJson(), parsed) plus `app`: {valid,
//                                       stale, errors[{field, message}] of the configuration on
//                                       screen, fixes[] (each error's fix label or ""),
//                                       verdict, world_size, expert_dp (0: EP x ETP does not
//                                       divide the stage), stacked_bytes[] per stage, settings
//                                       (the summary's settings line), model_changed, kept (the
//                                       model-change notice), toolbar_message,
//                                       crossCheckVerdict: the cross-checks' one line}
//   Module.getSweep()                   {axes[{key, values[] (the grid's), typedValues[],
//                                       droppedCount, dropped (why), error}], columns, rows,
//                                       cells[{x, y, valid,
//                                       peak, headroom, bindingStage, current, gpus, label,
//                                       detail}], sweepMs, slices, sweeps, heatMapDraws}: the Sweep
//                                       tab's grid (computed on demand)
//   Module.getSweepProgress()           {complete, computedCells, cellCount, sweepMs, computeMs,
//                                       longestSliceMs, slices, sweeps}: how far the grid is
//                                       (slices: frames that computed cells of it), read only
//                                       (getSweep also computes a slice when the grid is not done)
//   Module.setSweepAxis(axis, key, values)  axis 0 (columns) or 1 (rows); "" or the error
//   Module.getLinkProblems()            [{field, message}] of the banner ([] when none shown)
//   Module.heatStripDraws()             times our own shader ran
//   Module.stagememApplyFragment(text)  apply a fragment (hashchange)
//   Module.frameTimeStats()             {meanMs, maxMs, frames, userInterfaceMeanMs,
//                                       userInterfaceMaxMs}: CPU time of the frame function over
//                                       the last frames, and of its part before GL submission
//   Module.getWidgetRect(name)          {x, y, width, height} in CSS pixels of a widget drawn in
//                                       the last frame (widget_rects.h names, "stage_bar_N",
//                                       "compare_row_N" (the Compare tab's stage table),
//                                       "field_<key>", "option_<key>_<name>" (an entry of an
//                                       open list), "option_follow_stack_<key>" (a kernel
//                                       option's way back to the stack), "option_group_<prefix>"
//                                       (a configuration group's header: "option_group_precision")
//                                       or "sweep_cell_<x>_<y>");
//                                       null when unknown or not drawn
//   Module.getUiState()                 {selectedStage, hoveredStage, hoveredTerm, mainTab,
//                                        stackedLayout, uiScale, mouseX, mouseY, fonts[],
//                                        catalogueTerms, catalogueShown, hoveredCell,
//                                        legendTerms, legendNames[], unit ("gib" | "gb"),
//                                        stagePeakLabels[], stageHeadroomLabels[], deviceLabel,
//                                        bf16ComparisonUnavailable (why "Compare with bf16" is
//                                        disabled; "" when offered)}
//   Module.firstFrameMs                 (a number, set by the page) navigation to first frame
//   Module.getMarkdownTable()           what "Copy as Markdown" copies (report_markdown.h; with a
//                                       baseline pinned, comparison_markdown)
//   Module.getComparison()              the comparison with the pinned baseline: `stagemem diff
//                                       --json`'s document (docs/report-schema.md "The diff")
//                                       plus app {stage, changes, baselineLink}; null if none
//   Module.getScaling()                 the scaling cross-check: `stagemem scaling --json`'s
//                                       document (docs/report-schema.md "The scaling cross-check";
//                                       {} without points or with errors) plus app {points (how
//                                       many), stage, headline, notes, error, inputError, drawn
//                                       (the Cross-checks tab drew it last frame), pointsText}
//   Module.stagememPaste(text)          the page's paste event (browser.cpp)
//   Module.stagememLoadFile(name, text) a dropped or picked file (browser.cpp)
//   Module.stagememLoadBytes(name, bytes) a dropped or picked allocator snapshot (a Uint8Array)
//   Module.stagememAcceptFile(name, head, size) whether a dropped or picked file (its first bytes,
//                                       a Uint8Array, and its size) is within its limit; if not,
//                                       the banner says so and the page does not read it
//   Module.getSnapshot()                {loaded, fromLink, file, stage, fileBytes, error,
//                                       errorFile, reservedBytes, activeBytes,
//                                       optimizerStateSeen, lazyStateNote, rows[{bucket, key,
//                                       measuredBytes, derivedBytes, gapBytes, match, status,
//                                       derivedTerms[]}], verdicts[{title, buckets}], peakText,
//                                       peak {found, device, event, liveBytes, size, bucket,
//                                       where, derivedBytes, gapBytes, comparison}, curves[]
//                                       (events per device), link, segments {text, measured,
//                                       derived, measuredSegments, derivedSegments,
//                                       measuredReservedBytes, derivedReservedBytes,
//                                       bySize[{pool, bytes, measuredCount, derivedCount}]}
//                                       (the stage's, against the replay)}: the Snapshot tab's
//                                       content
//   Module.requestRedraw(frames)        draw that many frames although nothing changed (tests)
//   Module.getIdleStats()               {framesDrawn, idleCallbacks}: frames drawn and animation
//                                       frames that drew nothing (idle costs nothing)
//   Module.getHistory()                 {undo, redo}: steps available
//   Module.getReportJson()              what "Download JSON" saves (report_json.h)
//   Module.getPlan()                    {searching, hasResult, inputError, margin,
//                                       progressBarDrawn, status, axisLowGpus, axisHighGpus,
//                                       currentRow, changedNote, deviceBytes, marginBytes,
//                                       hasMinimum, minimumGpus, frontier[{gpus, peakBytes,
//                                       headroomBytes, spareBytes, fits, fp8Recipe,
//                                       sharding}], recipes, sharding}: the Plan tab as drawn
//                                       last frame and its last search
//   Module.getTimeline()                {stage, chunks, events, peakEvent, peakName, peakHeadline,
//                                       peakBytes,
//                                       hoveredEvent, hoveredName, hoveredLiveBytes,
//                                       hoveredTransient}: the Timeline tab's stage as drawn
//                                       last frame (events: [{phase, liveBytes}]); measured
//                                       {drawn, fromLink, points, ownScale, axisTopBytes,
//                                       peakX, peakY, legend, axisNote}: the snapshot's curve
//                                       as drawn over it (CSS pixels), drawn false when none
#include <emscripten/bind.h>
#include <emscripten/val.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <iterator>

#include "actions.h"
#include "baseline.h"
#include "bounded_read.h"
#include "config/config_fields.h"
#include "config/config_json.h"
#include "frame.h"
#include "imgui.h"
#include "link.h"
#include "load_input.h"
#include "measured/snapshot.h"
#include "parallel/layout.h"
#include "render/term_text.h"
#include "render/vocabulary.h"
#include "scaling_check.h"
#include "share.h"
#include "state.h"
#include "version.h"
#include "web_platform.h"

namespace {

using emscripten::val;

// The page's single app. Embind free functions cannot carry a context pointer, so this one
// file-scope pointer is the handle; it is set once in main() and never changes. The page's calls
// read its state, and change it the way the panels do: through actions (actions.h).
WebApp* web_app = nullptr;
AppState* app_state = nullptr;  // &web_app->state

val field_messages(const std::vector<stagemem::FieldMessage>& messages) {
  val out = val::array();
  for (const auto& m : messages) {
    val item = val::object();
    item.set("field", m.field);
    item.set("message", m.message);
    out.call<void>("push", item);
  }
  return out;
}

double frame_count() {
  return app_state ? static_cast<double>(app_state->frame_count) : 0.0;
}
double heat_strip_draws() {
  return app_state ? static_cast<double>(app_state->views.stages.heat_strip.draws) : 0.0;
}

val get_config() {
  if (!app_state) return val::object();
  return val::global("JSON").call<val>("parse", stagemem::config_to_json(app_state->config));
}

// The field's text form of a JavaScript value: strings as they are, booleans as 1/0, numbers in
// their shortest decimal form (integers without a fraction).
bool field_text(const val& value, std::string& text) {
  if (value.isString()) {
    text = value.as<std::string>();
    return true;
  }
  if (value.isTrue() || value.isFalse()) {
    text = value.isTrue() ? "1" : "0";
    return true;
  }
  if (!value.isNumber()) return false;
  const double number = value.as<double>();
  if (!std::isfinite(number)) return false;
  if (number == std::trunc(number) && std::fabs(number) < 9.0e15) {
    text = std::to_string(static_cast<std::int64_t>(number));
    return true;
  }
  char buffer[40];
  std::snprintf(buffer, sizeof buffer, "%.17g", number);
  text = buffer;
  return true;
}

std::string set_config_value(const std::string& key, val value) {
  if (!app_state) return "app: not started";
  const stagemem::ConfigField* field = stagemem::find_field_by_key(key);
  if (field == nullptr) return key + ": unknown field; see config_fields.h for the keys";
  std::string text;
  if (!field_text(value, text)) return key + ": expected " + stagemem::allowed_values(*field);
  stagemem::Config edited = app_state->config;
  stagemem::Diagnostics diagnostics;
  if (!stagemem::parse_field_text(*field, text, edited, diagnostics, key)) {
    return diagnostics.errors.front().field + ": " + diagnostics.errors.front().message;
  }
  apply_action(*app_state, SetConfig{std::move(edited)}, web_app->platform);
  return "";
}

// The report on screen as the one JSON document (the bytes getReportJson() returns), so the
// page and the tests read the documented schema; the app's own state rides beside it.
val get_report() {
  if (!app_state) return val::object();
  refresh_report(*app_state);
  val out = val::global("JSON").call<val>("parse", report_json_text(*app_state));
  // Not part of the report: the state of the app around it. While the configuration on screen
  // has errors, the document is the last valid configuration's report (stale).
  val app = val::object();
  app.set("valid", app_state->report_valid);
  app.set("stale", report_stale(*app_state));
  app.set("errors", field_messages(app_state->diagnostics.errors));
  // The one-click fix of each error (parallel to errors; "" where it has none), the summary's
  // settings line, what the last model change changed and kept, the toolbar's last message.
  val fixes = val::array();
  for (std::size_t i = 0; i < app_state->diagnostics.errors.size(); ++i) {
    const stagemem::Repair* repair = repair_of(*app_state, i);
    fixes.call<void>("push", repair != nullptr ? repair->label : std::string());
  }
  app.set("fixes", fixes);
  app.set("settings", stagemem::settings_text(app_state->config));
  app.set("model_changed", app_state->fix_its.model_changed);
  app.set("kept", app_state->fix_its.kept);
  app.set("toolbar_message", app_state->toolbar_message);
  app.set("verdict", stagemem::verdict_text(app_state->report, app_state->display.unit));
  app.set("crossCheckVerdict", app_state->report_labels.cross_check_verdict);
  app.set("world_size", static_cast<double>(stagemem::world_size(app_state->config.parallel)));
  app.set("expert_dp",
          static_cast<double>(stagemem::expert_data_parallel_size(app_state->config.parallel)));
  // The top of each stage's stacked bar as drawn (report_labels.h): it must equal the peak.
  val stacked = val::array();
  for (const StageLabels& labels : app_state->report_labels.stages) {
    stacked.call<void>(
        "push", labels.segments.empty() ? 0.0 : static_cast<double>(labels.segments.back().top));
  }
  app.set("stacked_bytes", stacked);
  out.set("app", app);
  return out;
}

val get_link_problems() {
  if (!app_state || !app_state->link_banner_visible) return val::array();
  return field_messages(app_state->link_problems);
}

void apply_fragment_from_page(const std::string& fragment) {
  if (!app_state) return;
  apply_action(*app_state, ApplyLink{fragment}, web_app->platform);
  web_app->platform.location_shows(*app_state);  // the page's URL is this link already
}

// The page's paste event: ImGui's next paste reads `text`; with no text field active, a link or
// JSON loads at once.
void paste_from_page(const std::string& text) {
  if (!app_state) return;
  web_app->platform.clipboard_text = text;
  request_frames(*app_state, 2);
  // A text field being edited takes the text through ImGui's own Ctrl+V (it reads
  // clipboard_text); anywhere else a link or a JSON document loads.
  // Anything else is loaded, or named as not loadable in the banner: a paste is never dropped
  // without a word.
  if (ImGui::GetIO().WantTextInput) return;
  if (text.find_first_not_of(" \t\r\n") == std::string::npos) return;
  apply_action(*app_state, LoadText{std::string(clipboard_name), text}, web_app->platform);
}

void load_file_from_page(const std::string& name, const std::string& text) {
  if (!app_state) return;
  apply_action(*app_state, LoadText{name, text}, web_app->platform);
}

// A file's size against the limit of what it is (file_limit: by its name and first bytes), before
// the page reads it: true when it may be read; otherwise the banner says why and nothing is
// read, so a dropped multi-gigabyte file costs nothing (the native app's reader stops at the
// same limit, src/io/bounded_read.h).
bool accept_file_from_page(const std::string& name, const val& head, double size) {
  if (!app_state) return false;
  std::string first(head["length"].as<std::size_t>(), '\0');
  val(emscripten::typed_memory_view(first.size(), reinterpret_cast<std::uint8_t*>(first.data())))
      .call<void>("set", head);
  const std::size_t limit = file_limit(name, first);
  if (size <= static_cast<double>(limit)) return true;
  // The native reader's words (src/io/bounded_read.h failure_text), for a file not read at all.
  apply_action(*app_state,
               RefuseFile{name, "'" + name.substr(0, 200) + "' is " +
                                    stagemem_io::limit_text(static_cast<std::size_t>(size)) +
                                    ", larger than the limit of " + stagemem_io::limit_text(limit) +
                                    ": not read"},
               web_app->platform);
  return false;
}

void load_bytes_from_page(const std::string& name, const val& bytes) {
  if (!app_state) return;
  // One copy, straight from the page's Uint8Array into the bytes the decoder reads.
  std::string text(bytes["length"].as<std::size_t>(), '\0');
  val(emscripten::typed_memory_view(text.size(), reinterpret_cast<std::uint8_t*>(text.data())))
      .call<void>("set", bytes);
  apply_action(*app_state, LoadFile{name, std::move(text)}, web_app->platform);
}

val get_snapshot() {
  val out = val::object();
  if (!app_state) return out;
  const SnapshotTab& snap = app_state->snapshot;
  const stagemem::SnapshotSummary& s = snap.summary;
  out.set("loaded", snap.loaded);
  out.set("fromLink", snap.from_link);
  out.set("file", snap.file);
  out.set("stage", static_cast<double>(snap.stage));
  out.set("fileBytes", static_cast<double>(snap.file_bytes));
  out.set("error", snap.error);
  out.set("errorFile", snap.error_file);
  out.set("reservedBytes", static_cast<double>(s.reserved_bytes));
  out.set("activeBytes", static_cast<double>(s.active_bytes));
  out.set("optimizerStateSeen", s.optimizer_state_seen);
  out.set("lazyStateNote", s.optimizer_state_seen
                               ? std::string()
                               : std::string(stagemem::snapshot_lazy_state_note()));
  out.set("peakText", snap.loaded ? stagemem::snapshot_peak_text(s) : std::string());
  out.set("link", snapshot_link_part(*app_state));
  val curves = val::array();
  for (const auto& curve : s.live_bytes)
    curves.call<void>("push", static_cast<double>(curve.size()));
  out.set("curves", curves);
  const auto& stages = app_state->report.stages;
  val rows = val::array();
  val verdicts = val::array();
  val peak = val::object();
  val segments = val::object();
  if (snap.loaded && snap.stage >= 0 && snap.stage < static_cast<std::int64_t>(stages.size())) {
    const stagemem::StageReport& stage = stages[static_cast<std::size_t>(snap.stage)];
    const auto compared = stagemem::compare_snapshot(s, stage);
    for (const auto& row : compared) {
      val item = val::object();
      item.set("bucket", std::string(stagemem::snapshot_bucket_name(row.bucket)));
      item.set("key", std::string(stagemem::snapshot_bucket_key(row.bucket)));
      item.set("measuredBytes", static_cast<double>(row.measured_bytes));
      item.set("derivedBytes", static_cast<double>(row.derived_bytes));
      item.set("gapBytes", static_cast<double>(row.gap_bytes));
      item.set("match", std::string(stagemem::snapshot_match_name(row.match)));
      item.set("status", stagemem::snapshot_row_status(row));
      val terms = val::array();
      for (const stagemem::Term* t : row.derived_terms)
        terms.call<void>("push", stagemem::term_name(*t));
      item.set("derivedTerms", terms);
      rows.call<void>("push", item);
    }
    for (const auto& v : stagemem::snapshot_verdicts(compared)) {
      val item = val::object();
      item.set("title", std::string(v.title));
      item.set("buckets", v.buckets);
      verdicts.call<void>("push", item);
    }
    const stagemem::SegmentComparison c = stagemem::compare_segments(s, stage);
    segments.set("text", stagemem::segment_comparison_text(c, stagemem::reserved_moment_text(stage),
                                                           app_state->display.unit));
    segments.set("measured", c.measured);
    segments.set("derived", c.derived);
    segments.set("measuredSegments", static_cast<double>(c.measured_segments));
    segments.set("derivedSegments", static_cast<double>(c.derived_segments));
    segments.set("measuredReservedBytes", static_cast<double>(c.measured_reserved_bytes));
    segments.set("derivedReservedBytes", static_cast<double>(c.derived_reserved_bytes));
    val sizes = val::array();
    for (const stagemem::SegmentSizeRow& r : c.rows) {
      val item = val::object();
      item.set("pool", std::string(r.small_pool ? "small" : "large"));
      item.set("bytes", static_cast<double>(r.segment_bytes));
      item.set("measuredCount", static_cast<double>(r.measured_count));
      item.set("derivedCount", static_cast<double>(r.derived_count));
      sizes.call<void>("push", item);
    }
    segments.set("bySize", sizes);
    const auto p = stagemem::compare_snapshot_peak(
        s, stage, stagemem::moment_name(stage, stagemem::peak_moment(stage)));
    peak.set("derivedBytes", static_cast<double>(p.derived_bytes));
    peak.set("gapBytes", static_cast<double>(p.gap_bytes));
    peak.set("comparison", p.text);
  }
  peak.set("found", s.peak.found);
  peak.set("device", static_cast<double>(s.peak.device));
  peak.set("event", static_cast<double>(s.peak.event));
  peak.set("liveBytes", static_cast<double>(s.peak.live_bytes));
  peak.set("size", static_cast<double>(s.peak.size));
  peak.set("bucket", std::string(stagemem::snapshot_bucket_name(s.peak.attribution.bucket)));
  peak.set("where", s.peak.where);
  out.set("rows", rows);
  out.set("verdicts", verdicts);
  out.set("peak", peak);
  out.set("segments", segments);
  return out;
}

void request_redraw(int frames) {
  if (app_state) request_frames(*app_state, std::clamp(frames, 1, 600));
}

val idle_stats() {
  val out = val::object();
  if (!app_state) return out;
  out.set("framesDrawn", static_cast<double>(app_state->frame_count));
  out.set("idleCallbacks", static_cast<double>(app_state->redraw.idle_callbacks));
  return out;
}

val history_stats() {
  val out = val::object();
  if (!app_state) return out;
  out.set("undo", static_cast<double>(app_state->history.undo.size()));
  out.set("redo", static_cast<double>(app_state->history.redo.size()));
  return out;
}

val frame_time_stats() {
  val out = val::object();
  if (!app_state) return out;
  out.set("meanMs", static_cast<double>(app_state->frame_times.mean()));
  out.set("maxMs", static_cast<double>(app_state->frame_times.max()));
  out.set("frames", app_state->frame_times.count);
  out.set("userInterfaceMeanMs", static_cast<double>(app_state->user_interface_times.mean()));
  out.set("userInterfaceMaxMs", static_cast<double>(app_state->user_interface_times.max()));
  return out;
}

// Rectangles are stored in ImGui coordinates (device pixels); the page's mouse events use CSS
// pixels, and the canvas fills the page from its top-left corner.
val css_rect(const WidgetRect& rect) {
  if (!rect.drawn || rect.frame + 1 != app_state->frame_count) return val::null();
  const double scale = app_state->ui_scale;
  val out = val::object();
  out.set("x", rect.min_x / scale);
  out.set("y", rect.min_y / scale);
  out.set("width", (rect.max_x - rect.min_x) / scale);
  out.set("height", (rect.max_y - rect.min_y) / scale);
  return out;
}

val get_widget_rect(const std::string& name) {
  if (!app_state) return val::null();
  for (std::size_t i = 0; i < widget_names.size(); ++i) {
    if (widget_names[i] == name) return css_rect(app_state->widget_rects[i]);
  }
  constexpr std::string_view bar_prefix = "stage_bar_";
  if (name.starts_with(bar_prefix)) {
    const std::string digits = name.substr(bar_prefix.size());
    if (digits.empty() || digits.size() > 6 ||
        digits.find_first_not_of("0123456789") != std::string::npos) {
      return val::null();
    }
    const auto index = static_cast<std::size_t>(std::stoul(digits));
    const auto& bars = app_state->views.stages.bar_rects;
    if (index < bars.size()) return css_rect(bars[index]);
  }
  constexpr std::string_view row_prefix = "compare_row_";
  if (name.starts_with(row_prefix)) {
    const std::string digits = name.substr(row_prefix.size());
    if (digits.empty() || digits.size() > 6 ||
        digits.find_first_not_of("0123456789") != std::string::npos) {
      return val::null();
    }
    const auto index = static_cast<std::size_t>(std::stoul(digits));
    const auto& rows = app_state->views.compare.row_rects;
    return index < rows.size() ? css_rect(rows[index]) : val::null();
  }
  constexpr std::string_view field_prefix = "field_";
  if (name.starts_with(field_prefix)) {
    const auto fields = stagemem::config_fields();
    const auto& editors = app_state->views.config.editors;
    for (std::size_t i = 0; i < fields.size() && i < editors.size(); ++i) {
      if (fields[i].key == std::string_view(name).substr(field_prefix.size())) {
        return css_rect(editors[i].rect);
      }
    }
    return val::null();
  }
  constexpr std::string_view option_prefix = "option_";
  if (name.starts_with(option_prefix)) {
    const std::string_view wanted = std::string_view(name).substr(option_prefix.size());
    for (const auto& [option, rect] : app_state->views.config.option_rects) {
      if (option == wanted) return css_rect(rect);
    }
    return val::null();
  }
  constexpr std::string_view cell_prefix = "sweep_cell_";
  if (name.starts_with(cell_prefix)) {
    unsigned x = 0, y = 0;
    const char* begin = name.data() + cell_prefix.size();
    const char* end = name.data() + name.size();
    const auto [middle, error] = std::from_chars(begin, end, x);
    if (error != std::errc() || middle == end || *middle != '_') return val::null();
    const auto [last, error_y] = std::from_chars(middle + 1, end, y);
    if (error_y != std::errc() || last != end) return val::null();
    const Sweep& sweep = app_state->sweep;
    const WidgetRect& grid = app_state->views.sweep.heat_map_rect;
    if (x >= sweep.columns || y >= sweep.rows) return val::null();
    const float width = (grid.max_x - grid.min_x) / static_cast<float>(sweep.columns);
    const float height = (grid.max_y - grid.min_y) / static_cast<float>(sweep.rows);
    WidgetRect cell = grid;
    cell.min_x = grid.min_x + width * static_cast<float>(x);
    cell.min_y = grid.min_y + height * static_cast<float>(y);
    cell.max_x = cell.min_x + width;
    cell.max_y = cell.min_y + height;
    return css_rect(cell);
  }
  return val::null();
}

val get_ui_state() {
  val out = val::object();
  if (!app_state) return out;
  const Views& views = app_state->views;
  out.set("selectedStage", static_cast<double>(app_state->selected_stage));
  out.set("hoveredStage", static_cast<double>(views.stages.hovered_stage));
  out.set("hoveredTerm", static_cast<double>(views.stages.hovered_term));
  constexpr const char* tab_names[] = {"stages", "sweep",    "cross_checks", "model",
                                       "plan",   "timeline", "snapshot",     "compare"};
  static_assert(std::size(tab_names) == static_cast<std::size_t>(MainTab::count));
  out.set("mainTab", std::string(tab_names[static_cast<std::size_t>(app_state->main_tab)]));
  out.set("catalogueTerms", static_cast<double>(views.model.catalogue.size()));
  out.set("catalogueShown", static_cast<double>(views.model.catalogue_rows.size()));
  out.set("hoveredCell", static_cast<double>(views.sweep.hovered_cell));
  out.set("stackedLayout", app_state->stacked_layout);
  out.set("version", std::string(app_version()));
  out.set("commit", std::string(app_commit()));
  out.set("gpusPerNode", views.summary.gpus_per_node);
  out.set("truncatedLabels", views.config.truncated_labels);
  out.set("showFrameTimes", views.status.show_frame_times);
  out.set("chartScrolls", views.stages.chart_scrolls);
  out.set("axisLabelStep", static_cast<double>(views.stages.axis_label_step));
  out.set("legendTerms", static_cast<double>(app_state->report_labels.legend.size()));
  // The chart's legend names and each stage's labels as drawn (in the unit shown: `unit`).
  val legend = val::array();
  for (const LegendEntry& entry : app_state->report_labels.legend) {
    legend.call<void>("push", entry.name);
  }
  out.set("legendNames", legend);
  out.set("unit", std::string(stagemem::enum_name(app_state->display.unit)));
  val peaks = val::array();
  val headrooms = val::array();
  for (const StageLabels& stage : app_state->report_labels.stages) {
    peaks.call<void>("push", stage.peak_gib);
    headrooms.call<void>("push", stage.headroom);
  }
  out.set("stagePeakLabels", peaks);
  out.set("stageHeadroomLabels", headrooms);
  out.set("deviceLabel", app_state->report_labels.device);
  // Why "Compare with bf16" is disabled (its tooltip); "" when it is offered.
  const char* bf16_unavailable = bf16_comparison_unavailable(*app_state);
  out.set("bf16ComparisonUnavailable",
          std::string(bf16_unavailable != nullptr ? bf16_unavailable : ""));
  out.set("uiScale", app_state->ui_scale);
  // Where ImGui saw the mouse in its last frame, in CSS pixels (to debug a click that missed).
  const ImVec2 mouse = ImGui::GetIO().MousePos;
  out.set("mouseX", mouse.x / app_state->ui_scale);
  out.set("mouseY", mouse.y / app_state->ui_scale);
  val fonts = val::array();
  const ImFontAtlas* atlas = ImGui::GetIO().Fonts;
  for (const ImFont* font : atlas->Fonts)
    fonts.call<void>("push", std::string(font->GetDebugName()));
  out.set("fonts", fonts);
  return out;
}

val get_timeline() {
  val out = val::object();
  if (!app_state) return out;
  const TimelineTab& tab = app_state->timeline;
  const TimelineView& view = app_state->views.timeline;
  const stagemem::StageTimeline& t = tab.timeline;
  out.set("stage", static_cast<double>(tab.built_stage));
  out.set("chunks", static_cast<double>(t.chunks));
  out.set("peakEvent", static_cast<double>(t.peak_event));
  out.set("peakName", tab.peak_name);
  out.set("peakHeadline", tab.peak_headline);
  out.set("hoveredEvent", static_cast<double>(view.hovered_event));
  out.set("hoveredName", view.hovered_name);
  const auto& stages = app_state->report.stages;
  const bool built =
      tab.built_stage >= 0 && tab.built_stage < static_cast<std::int64_t>(stages.size());
  out.set("peakBytes",
          built ? static_cast<double>(stages[static_cast<std::size_t>(tab.built_stage)].peak_bytes)
                : 0.0);
  val events = val::array();
  for (const stagemem::TimelineEvent& e : t.events) {
    val item = val::object();
    item.set("phase", std::string(stagemem::phase_name(e.phase)));
    item.set("liveBytes", static_cast<double>(e.live_bytes));
    events.call<void>("push", item);
  }
  out.set("events", events);
  std::string transient;
  double live = 0;
  if (built && view.hovered_event >= 0 &&
      view.hovered_event < static_cast<std::int64_t>(t.events.size())) {
    const stagemem::StageReport& s = stages[static_cast<std::size_t>(tab.built_stage)];
    const stagemem::TimelineEvent& e = t.events[static_cast<std::size_t>(view.hovered_event)];
    live = static_cast<double>(e.live_bytes);
    if (e.transient >= 0 && e.transient < static_cast<std::int64_t>(s.terms.size()))
      transient = stagemem::term_name(s.terms[static_cast<std::size_t>(e.transient)]);
  }
  out.set("hoveredLiveBytes", live);
  out.set("hoveredTransient", transient);
  const MeasuredOverlay& m = view.measured;
  val measured = val::object();
  const bool drawn = m.frame + 1 == app_state->frame_count && m.drawn;
  measured.set("drawn", drawn);
  measured.set("fromLink", m.from_link);
  measured.set("points", static_cast<double>(m.points));
  measured.set("ownScale", m.own_scale);
  measured.set("axisTopBytes", static_cast<double>(m.axis_top_bytes));
  const double ratio = app_state->ui_scale > 0 ? app_state->ui_scale : 1.0;
  measured.set("peakX", m.peak_x / ratio);
  measured.set("peakY", m.peak_y / ratio);
  measured.set("legend", m.legend);
  measured.set("axisNote", m.axis_note);
  out.set("measured", measured);
  return out;
}

val get_sweep() {
  val out = val::object();
  if (!app_state) return out;
  Sweep& sweep = app_state->sweep;
  update_sweep(sweep, app_state->config);
  val axes = val::array();
  for (std::size_t i = 0; i < sweep.axes.size(); ++i) {
    const SweepAxisEdit& axis = sweep.axes[i];
    val item = val::object();
    item.set("key", std::string(axis.key()));
    // The grid's values (those some valid cell holds), the values as typed, and why the others
    // were dropped.
    val values = val::array();
    for (const auto& v : sweep_values(sweep, i)) values.call<void>("push", v);
    item.set("values", values);
    val typed = val::array();
    for (const auto& v : axis.axis.values) typed.call<void>("push", v);
    item.set("typedValues", typed);
    item.set("droppedCount", static_cast<double>(sweep.dropped_count[i]));
    item.set("dropped", sweep.dropped_text[i]);
    item.set("error", axis.error);
    axes.call<void>("push", item);
  }
  out.set("axes", axes);
  out.set("columns", static_cast<double>(sweep.columns));
  out.set("rows", static_cast<double>(sweep.rows));
  out.set("deviceBytes", static_cast<double>(sweep_device_bytes(sweep)));
  val cells = val::array();
  for (std::size_t i = 0; i < sweep.run.cells.size(); ++i) {
    const stagemem::SweepCell& c = sweep.run.cells[i];
    val cell = val::object();
    cell.set("x", static_cast<double>(i % sweep.columns));
    cell.set("y", static_cast<double>(i / sweep.columns));
    cell.set("valid", c.valid);
    cell.set("peak", static_cast<double>(c.max_peak_bytes));
    cell.set("headroom", static_cast<double>(c.min_headroom_bytes));
    cell.set("bindingStage", static_cast<double>(c.binding_stage));
    cell.set("current", c.is_base);
    cell.set("gpus", static_cast<double>(c.world_size));
    cell.set("label", sweep_cell_label(sweep, i, app_state->display.unit));
    cell.set("detail", sweep_cell_detail(sweep, i, app_state->display.unit));
    cells.call<void>("push", cell);
  }
  out.set("cells", cells);
  out.set("sweepMs", sweep.last_milliseconds);
  out.set("computeMs", sweep.compute_milliseconds);
  out.set("longestSliceMs", sweep.longest_slice_milliseconds);
  out.set("slices", static_cast<double>(sweep.slices));
  out.set("complete", sweep.complete);
  out.set("computedCells", static_cast<double>(sweep.run.evaluated));
  out.set("sweeps", static_cast<double>(sweep.sweeps));
  out.set("heatMapDraws", static_cast<double>(app_state->views.sweep.heat_map.draws));
  out.set("modelError", sweep.model_error);
  return out;
}

val get_sweep_progress() {
  val out = val::object();
  if (!app_state) return out;
  const Sweep& sweep = app_state->sweep;
  out.set("complete", sweep.complete);
  out.set("computedCells", static_cast<double>(sweep.run.evaluated));
  out.set("cellCount", static_cast<double>(sweep.run.cells.size()));
  out.set("sweepMs", sweep.last_milliseconds);
  out.set("computeMs", sweep.compute_milliseconds);
  out.set("longestSliceMs", sweep.longest_slice_milliseconds);
  out.set("slices", static_cast<double>(sweep.slices));
  out.set("sweeps", static_cast<double>(sweep.sweeps));
  return out;
}

std::string set_sweep_axis_from_page(int axis, const std::string& key, const std::string& values) {
  if (!app_state) return "app: not started";
  if (axis != 0 && axis != 1) return "axis: 0 (columns) or 1 (rows)";
  const auto index = static_cast<std::size_t>(axis);
  apply_action(*app_state, SetSweepAxis{index, key, values}, web_app->platform);
  return app_state->sweep.axes[index].error;
}

std::string get_markdown_table() {
  if (!app_state) return "";
  refresh_report(*app_state);
  if (!app_state->report_valid || report_stale(*app_state)) return "";
  return copied_markdown(*app_state, web_app->platform);
}

// The comparison with the pinned baseline: comparison_json's document (what `stagemem diff
// --json` writes for the two links), parsed, plus `app`: {stage (the Compare tab's chosen stage;
// -1: B's binding stage), changes (the settings changed, as the tab shows them), baselineLink
// (the base= pair the page's link carries)}; null when no baseline is pinned.
val get_comparison() {
  if (!app_state) return val::null();
  refresh_report(*app_state);
  const std::string text = comparison_json_text(*app_state);
  if (text.empty()) return val::null();
  val out = val::global("JSON").call<val>("parse", text);
  val app = val::object();
  app.set("stage", static_cast<double>(app_state->views.compare.stage));
  app.set("changes", app_state->baseline.changes_text);
  app.set("baselineLink", app_state->baseline.link_pair);
  out.set("app", app);
  return out;
}

val get_scaling() {
  if (!app_state) return val::null();
  refresh_report(*app_state);
  refresh_scaling(*app_state);
  const ScalingState& s = app_state->scaling;
  const std::string text = scaling_json_text(*app_state);
  val out = text.empty() ? val::object() : val::global("JSON").call<val>("parse", text);
  val app = val::object();
  app.set("points", static_cast<double>(s.points.points.size()));
  app.set("stage", static_cast<double>(s.points.stage));
  app.set("headline", s.headline);
  app.set("notes", s.notes);
  app.set("error", s.error);
  app.set("inputError", s.input_error);
  app.set("drawn", app_state->views.cross_checks.scaling_drawn);
  app.set("pointsText", app_state->views.cross_checks.points_text);
  out.set("app", app);
  return out;
}

std::string get_report_json() {
  if (!app_state) return "";
  refresh_report(*app_state);
  return report_json_text(*app_state);
}

// The Plan tab as drawn last frame and its last search (plan_tab.h, PlanView).
val get_plan() {
  val out = val::object();
  if (!app_state) return out;
  const PlanTab& tab = app_state->plan;
  const PlanView& view = app_state->views.plan;
  out.set("searching", tab.search != nullptr);
  out.set("hasResult", tab.has_result);
  out.set("inputError", tab.input_error);
  out.set("margin", tab.inputs.margin);
  out.set("recipes", tab.inputs.recipes);
  out.set("sharding", tab.inputs.sharding);
  out.set("progressBarDrawn", view.progress_bar_drawn);
  out.set("status", view.status);
  out.set("axisLowGpus", static_cast<double>(view.axis_low_gpus));
  out.set("axisHighGpus", static_cast<double>(view.axis_high_gpus));
  out.set("currentRow", static_cast<double>(view.current_row));
  out.set("changedNote", view.changed_note);
  const stagemem::PlanResult& r = tab.result;
  out.set("deviceBytes", static_cast<double>(r.device_bytes));
  out.set("marginBytes", static_cast<double>(r.margin_bytes));
  out.set("hasMinimum", r.has_minimum);
  out.set("minimumGpus", static_cast<double>(r.has_minimum ? r.minimum.gpus : 0));
  val frontier = val::array();
  for (const stagemem::PlanEntry& e : r.frontier) {
    val item = val::object();
    item.set("gpus", static_cast<double>(e.gpus));
    item.set("peakBytes", static_cast<double>(e.peak_bytes));
    item.set("headroomBytes", static_cast<double>(e.headroom_bytes));
    item.set("spareBytes", static_cast<double>(e.spare_bytes()));
    item.set("fits", e.fits());
    item.set("fp8Recipe", std::string(stagemem::enum_name(e.candidate.recipe)));
    item.set("sharding", std::string(stagemem::enum_name(e.candidate.sharding)));
    frontier.call<void>("push", item);
  }
  out.set("frontier", frontier);
  return out;
}

}  // namespace

void register_web_app(WebApp* app) {
  web_app = app;
  app_state = &app->state;
}

EMSCRIPTEN_BINDINGS(stagemem) {
  emscripten::function("frameCount", &frame_count);
  emscripten::function("heatStripDraws", &heat_strip_draws);
  emscripten::function("getConfig", &get_config);
  emscripten::function("setConfigValue", &set_config_value);
  emscripten::function("getReport", &get_report);
  emscripten::function("getLinkProblems", &get_link_problems);
  emscripten::function("stagememApplyFragment", &apply_fragment_from_page);
  emscripten::function("frameTimeStats", &frame_time_stats);
  emscripten::function("getWidgetRect", &get_widget_rect);
  emscripten::function("getUiState", &get_ui_state);
  emscripten::function("getMarkdownTable", &get_markdown_table);
  emscripten::function("getReportJson", &get_report_json);
  emscripten::function("getComparison", &get_comparison);
  emscripten::function("getScaling", &get_scaling);
  emscripten::function("getSweep", &get_sweep);
  emscripten::function("getSweepProgress", &get_sweep_progress);
  emscripten::function("getTimeline", &get_timeline);
  emscripten::function("stagememPaste", &paste_from_page);
  emscripten::function("stagememLoadFile", &load_file_from_page);
  emscripten::function("stagememLoadBytes", &load_bytes_from_page);
  emscripten::function("stagememAcceptFile", &accept_file_from_page);
  emscripten::function("getSnapshot", &get_snapshot);
  emscripten::function("requestRedraw", &request_redraw);
  emscripten::function("getIdleStats", &idle_stats);
  emscripten::function("getHistory", &history_stats);
  emscripten::function("setSweepAxis", &set_sweep_axis_from_page);
  emscripten::function("getPlan", &get_plan);
}
