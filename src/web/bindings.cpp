// bindings.cpp — the Embind API the page and the browser tests use. Plain values cross the
// boundary (numbers, strings, plain objects); byte counts go out as doubles, exact below 2^53.
//
//   Module.frameCount()                 frames drawn so far
//   Module.getConfig()                  {model, tp, pp, ep, etp} as decoded and edited
//   Module.setConfigValue(key, value)   edit one field; returns "" or an error naming the field
//   Module.getReport()                  {model, totalParameters, bindingStage, stages[], errors[]}
//   Module.getLinkProblems()            [{field, message}] of the banner ([] when none shown)
//   Module.heatStripDraws()             times our own shader ran
//   Module.stagememApplyFragment(text)  apply a fragment (hashchange)
#include <emscripten/bind.h>
#include <emscripten/val.h>

#include "app.h"
#include "browser.h"
#include "state.h"

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

double frame_count() { return app_state ? static_cast<double>(app_state->frame_count) : 0.0; }
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
  if (!(number >= 1.0 && number <= 1048576.0) || number != static_cast<double>(static_cast<std::int64_t>(number))) {
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

}  // namespace

void register_app_state(AppState* state) { app_state = state; }

EMSCRIPTEN_BINDINGS(stagemem) {
  emscripten::function("frameCount", &frame_count);
  emscripten::function("heatStripDraws", &heat_strip_draws);
  emscripten::function("getConfig", &get_config);
  emscripten::function("setConfigValue", &set_config_value);
  emscripten::function("getReport", &get_report);
  emscripten::function("getLinkProblems", &get_link_problems);
  emscripten::function("stagememApplyFragment", &apply_fragment_from_page);
}
