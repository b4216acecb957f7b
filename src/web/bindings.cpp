// bindings.cpp — the Embind API the page and the browser tests use. Plain values cross the
// boundary (numbers, strings, plain objects); byte counts go out as doubles, exact below 2^53.
//
//   Module.frameCount()                 frames drawn so far
//   Module.getConfig()                  {model, tp, pp, ep, etp} as decoded and edited
//   Module.setConfigValue(key, value)   edit one field; returns "" or an error naming the field
//   Module.getReport()                  {model, totalParameters, bindingStage, stages[], errors[]};
//                                       each stage has terms[] of {name, bytes, tag}
//   Module.getLinkProblems()            [{field, message}] of the banner ([] when none shown)
//   Module.heatStripDraws()             times our own shader ran
//   Module.stagememApplyFragment(text)  apply a fragment (hashchange)
//   Module.frameTimeStats()             {meanMs, maxMs, frames, userInterfaceMeanMs,
//                                       userInterfaceMaxMs}: CPU time of the frame function over
//                                       the last frames, and of its part before GL submission
//   Module.getWidgetRect(name)          {x, y, width, height} in CSS pixels of a widget drawn in
//                                       the last frame (widget_rects.h names, or "stage_bar_N");
//                                       null when unknown or not drawn
//   Module.getUiState()                 {selectedStage, hoveredStage, stackedLayout, uiScale,
//                                        mouseX, mouseY, fonts[]}
//   Module.getMarkdownTable()           what "Copy as Markdown" copies
//   Module.getReportJson()              what "Download JSON" saves
#include <emscripten/bind.h>
#include <emscripten/val.h>

#include "app.h"
#include "browser.h"
#include "imgui.h"
#include "markdown_table.h"
#include "report_json.h"
#include "state.h"
#include "url_fragment.h"

namespace {

using emscripten::val;

// The page's single app. Embind free functions cannot carry a context pointer, so this one
// file-scope pointer is the handle; it is set once in main() and never changes.
AppState* app_state = nullptr;

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
  return app_state ? static_cast<double>(app_state->heat_strip.draws) : 0.0;
}

val get_config() {
  val out = val::object();
  if (!app_state) return out;
  const stagemem::Config& c = app_state->config;
  out.set("model", c.model);
  out.set("tp", static_cast<double>(c.parallel.tensor_parallel));
  out.set("pp", static_cast<double>(c.parallel.pipeline_parallel));
  out.set("ep", static_cast<double>(c.parallel.expert_parallel));
  out.set("etp", static_cast<double>(c.parallel.expert_tensor_parallel));
  return out;
}

std::string set_config_value(const std::string& key, val value) {
  if (!app_state) return "app: not started";
  stagemem::Config& c = app_state->config;
  if (key == "model") {
    if (!value.isString()) return "model: a preset name (string) is expected";
    c.model = value.as<std::string>();
    return "";
  }
  std::int64_t* target = key == "tp"    ? &c.parallel.tensor_parallel
                         : key == "pp"  ? &c.parallel.pipeline_parallel
                         : key == "ep"  ? &c.parallel.expert_parallel
                         : key == "etp" ? &c.parallel.expert_tensor_parallel
                                        : nullptr;
  if (target == nullptr) return key + ": unknown field; known: model, tp, pp, ep, etp";
  if (!value.isNumber()) return key + ": an integer >= 1 is expected";
  const double number = value.as<double>();
  if (!(number >= 1.0 && number <= 1048576.0) ||
      number != static_cast<double>(static_cast<std::int64_t>(number))) {
    return key + ": an integer in [1, 1048576] is expected";
  }
  *target = static_cast<std::int64_t>(number);
  return "";
}

val get_report() {
  val out = val::object();
  if (!app_state) return out;
  refresh_report(*app_state);
  const stagemem::Report& r = app_state->report;
  out.set("model", r.model);
  out.set("totalParameters", static_cast<double>(r.total_parameters));
  out.set("bindingStage", static_cast<double>(r.binding_stage));
  out.set("errors", field_messages(r.diagnostics.errors));
  val stages = val::array();
  for (const auto& s : r.stages) {
    val stage = val::object();
    stage.set("index", static_cast<double>(s.index));
    stage.set("firstLayer", static_cast<double>(s.first_layer));
    stage.set("layerCount", static_cast<double>(s.layer_count));
    stage.set("parametersPerRank", static_cast<double>(s.parameters_per_rank));
    stage.set("peakBytes", static_cast<double>(s.peak_bytes));
    val terms = val::array();
    for (const auto& t : s.terms) {
      val term = val::object();
      term.set("name", t.name);
      term.set("bytes", static_cast<double>(t.bytes));
      term.set("tag", std::string(stagemem::tag_name(t.tag)));
      terms.call<void>("push", term);
    }
    stage.set("terms", terms);
    stages.call<void>("push", stage);
  }
  out.set("stages", stages);
  return out;
}

val get_link_problems() {
  if (!app_state || !app_state->link_banner_visible) return val::array();
  return field_messages(app_state->link_problems);
}

void apply_fragment_from_page(const std::string& fragment) {
  if (app_state) apply_fragment(*app_state, fragment);
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
    if (index < app_state->bar_rects.size()) return css_rect(app_state->bar_rects[index]);
  }
  return val::null();
}

val get_ui_state() {
  val out = val::object();
  if (!app_state) return out;
  out.set("selectedStage", static_cast<double>(app_state->selected_stage));
  out.set("hoveredStage", static_cast<double>(app_state->hovered_stage));
  out.set("stackedLayout", app_state->stacked_layout);
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

std::string get_markdown_table() {
  if (!app_state) return "";
  refresh_report(*app_state);
  return markdown_table(app_state->report);
}

std::string get_report_json() {
  if (!app_state) return "";
  refresh_report(*app_state);
  return report_json(app_state->report, stagemem::encode_fragment(app_state->config));
}

}  // namespace

void register_app_state(AppState* state) {
  app_state = state;
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
}
