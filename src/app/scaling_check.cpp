#include "scaling_check.h"

#include <utility>

#include "config/url_fragment.h"
#include "render/scaling_text.h"

bool apply_scaling_link(AppState& state, std::string_view link) {
  stagemem::DecodedScalingLink decoded = stagemem::decode_scaling_link(link);
  for (auto& e : decoded.diagnostics.errors) state.link_problems.push_back(std::move(e));
  for (auto& w : decoded.diagnostics.warnings) state.link_problems.push_back(std::move(w));
  stagemem::ScalingPoints points =
      decoded.scaling ? std::move(*decoded.scaling) : stagemem::ScalingPoints{};
  if (points != state.scaling.points) {
    state.scaling.points = std::move(points);
    ++state.scaling.generation;
  }
  state.scaling.input_error.clear();
  state.scaling.has_check = false;  // the link may set another unit: its texts again
  return !state.scaling.points.points.empty();
}

void set_scaling_points(AppState& state, std::string_view text, std::string_view stage_text) {
  stagemem::ScalingPoints points;
  stagemem::Diagnostics d;
  std::size_t line = 0;
  while (!text.empty()) {
    const auto end = text.find('\n');
    std::string_view item = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view{} : text.substr(end + 1);
    while (!item.empty() && (item.back() == ' ' || item.back() == '\r')) item.remove_suffix(1);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    ++line;
    if (item.empty()) continue;
    if (auto point = stagemem::parse_scaling_point_text(item, d, "line " + std::to_string(line))) {
      points.points.push_back(std::move(*point));
    }
  }
  if (!stage_text.empty()) {
    std::int64_t stage = 0;
    bool digits = stage_text.size() <= 7;
    for (char c : stage_text) {
      digits = digits && c >= '0' && c <= '9';
      if (digits) stage = stage * 10 + (c - '0');
    }
    if (!digits) {
      d.error("stage", "'" + std::string(stage_text.substr(0, 20)) +
                           "' is not a pipeline stage (0, 1, ...); empty: the binding stage");
    }
    points.stage = stage;
  }
  if (points.points.size() > stagemem::max_scaling_points) {
    d.error("points", "at most " + std::to_string(stagemem::max_scaling_points));
  }
  if (!d.ok()) {
    state.scaling.input_error.clear();
    for (const auto& e : d.errors) state.scaling.input_error += e.field + ": " + e.message + "\n";
    return;
  }
  state.scaling.input_error.clear();
  if (points.points.empty()) points.stage = -1;
  if (points != state.scaling.points) {
    state.scaling.points = std::move(points);
    ++state.scaling.generation;
  }
}

void refresh_scaling(AppState& state) {
  ScalingState& s = state.scaling;
  if (s.points.points.empty()) {
    s.has_check = false;
    s.checked_points = s.generation;
    return;
  }
  if (!state.report_valid) return;
  if (s.has_check && s.checked_points == s.generation &&
      s.checked_report == state.report_generation) {
    return;
  }
  // The configuration of the report on screen: an invalid edit keeps the last valid one.
  s.check = stagemem::scaling_cross_check(state.reported_config, s.points);
  s.has_check = true;
  s.checked_points = s.generation;
  s.checked_report = state.report_generation;
  s.error.clear();
  for (const auto& e : s.check.diagnostics.errors) s.error += e.field + ": " + e.message + "\n";
  s.subject.clear();
  s.headline.clear();
  s.notes.clear();
  s.fit_table = {};
  s.points_table = {};
  s.not_linear_table = {};
  if (!s.check.diagnostics.ok()) return;
  const stagemem::AmountUnit unit = state.display.unit;
  s.subject = stagemem::scaling_subject_text(s.check);
  s.headline = stagemem::scaling_headline(s.check, unit);
  s.notes = stagemem::scaling_notes(s.check);
  s.fit_table = stagemem::scaling_fit_table(s.check, unit);
  s.points_table = stagemem::scaling_points_table(s.check, unit);
  s.not_linear_table =
      stagemem::scaling_terms_table(s.check, stagemem::TermScaling::not_linear, unit);
}

std::string scaling_json_text(const AppState& state) {
  const ScalingState& s = state.scaling;
  if (!s.has_check || !s.check.diagnostics.ok()) return {};
  return stagemem::scaling_json(s.check, "#" + stagemem::encode_fragment(state.reported_config) +
                                             stagemem::scaling_fragment(s.points));
}
