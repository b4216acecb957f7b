#include "render/comparison.h"

#include <algorithm>
#include <cstdlib>

#include <nlohmann/json.hpp>

#include "base/checked_math.h"
#include "base/text_escaping.h"
#include "config/config_fields.h"
#include "render/report_json.h"
#include "render/report_markdown.h"
#include "render/report_text.h"
#include "render/table.h"
#include "render/vocabulary.h"
#include "report/term_names.h"

namespace stagemem {
namespace {

using json = nlohmann::ordered_json;

constexpr std::size_t max_setting_text = 80;
// Markdown escapes '>' (markdown_cell), so a wiki page's source would read "-&gt;".
constexpr std::string_view markdown_arrow = " \u2192 ";

std::string shortened(std::string text) {
  if (text.size() <= max_setting_text) return text;
  text.resize(max_setting_text - 3);
  return text + "...";
}

// Below 10 MiB an amount in GiB with two decimals reads as 0.00 though it is not: such amounts
// are written in bytes, so a changed term never looks unchanged.
constexpr std::int64_t small_amount_bytes = std::int64_t{10} << 20;

bool small(std::int64_t bytes) {
  return bytes != 0 && bytes > -small_amount_bytes && bytes < small_amount_bytes;
}

const StageReport* stage_of(const Report& report, std::int64_t index) {
  if (index < 0 || index >= static_cast<std::int64_t>(report.stages.size())) return nullptr;
  return &report.stages[static_cast<std::size_t>(index)];
}

const Term* term_of(const Report& report, std::int64_t stage, std::int32_t term) {
  const StageReport* s = stage_of(report, stage);
  if (s == nullptr || term < 0 || term >= static_cast<std::int32_t>(s->terms.size())) {
    return nullptr;
  }
  return &s->terms[static_cast<std::size_t>(term)];
}

// A compared term's name: A's, "A's -> B's" when the two reports name it differently (a dtype
// changed), B's for a term only B has.
std::string compared_term_name(const ComparedReports& c, std::int64_t stage,
                               const TermComparison& t, std::string_view arrow = " -> ") {
  const Term* a = term_of(c.a, stage, t.a_term);
  const Term* b = term_of(c.b, stage, t.b_term);
  if (a == nullptr) return term_name(*b) + " (B only)";
  if (b == nullptr) return term_name(*a) + " (A only)";
  std::string a_name = term_name(*a);
  std::string b_name = term_name(*b);
  return a_name == b_name ? a_name : a_name + std::string(arrow) + b_name;
}

Family compared_family(const ComparedReports& c, std::int64_t stage, const TermComparison& t) {
  const Term* a = term_of(c.a, stage, t.a_term);
  return a != nullptr ? a->family : term_of(c.b, stage, t.b_term)->family;
}

std::string side_fits(const Report& report, std::int64_t index) {
  const StageReport* s = stage_of(report, index);
  return s == nullptr ? "-" : std::string(fits_text(*s, report));
}

std::string side_layers(const Report& report, std::int64_t index) {
  const StageReport* s = stage_of(report, index);
  return s == nullptr ? "-" : stage_layers_text(*s);
}

std::string side_peak(const Report& report, std::int64_t index, AmountUnit unit) {
  const StageReport* s = stage_of(report, index);
  return s == nullptr ? "-" : comparison_amount_text(s->peak_bytes, unit);
}

// The replayed peak reserved; "-" when the side has no such stage or it was not replayed.
std::string side_reserved(std::int64_t bytes, AmountUnit unit) {
  return bytes < 0 ? "-" : comparison_amount_text(bytes, unit);
}

// "0 (binding A, B)", "3 (binding B)", "5".
std::string stage_cell(const ComparedReports& c, std::int64_t index) {
  const bool a = index == c.comparison.a_binding_stage;
  const bool b = index == c.comparison.b_binding_stage;
  std::string cell = std::to_string(index);
  if (a && b) return cell + " (binding A, B)";
  if (a) return cell + " (binding A)";
  if (b) return cell + " (binding B)";
  return cell;
}

}  // namespace

std::string comparison_amount_text(std::int64_t bytes, AmountUnit unit) {
  return small(bytes) ? group_digits(bytes) + " B" : amount_text(bytes, unit);
}

std::string comparison_delta_text(std::int64_t bytes, AmountUnit unit) {
  if (bytes == 0) return "0 B";
  return small(bytes) ? (bytes > 0 ? "+" : "") + group_digits(bytes) + " B"
                      : signed_gib_text(bytes, unit);
}

Table comparison_stage_table(const ComparedReports& c) {
  Table table{.columns = {{"stage", Align::right},
                          {"layers A"},
                          {"layers B"},
                          {"peak A", Align::right},
                          {"peak B", Align::right},
                          {"difference", Align::right},
                          {"reserved A", Align::right},
                          {"reserved B", Align::right},
                          {"fits A"},
                          {"fits B"}}};
  for (const StageComparison& s : c.comparison.stages) {
    table.rows.push_back({stage_cell(c, s.index), side_layers(c.a, s.index),
                          side_layers(c.b, s.index), side_peak(c.a, s.index, c.unit),
                          side_peak(c.b, s.index, c.unit),
                          comparison_delta_text(s.peak_delta_bytes, c.unit),
                          side_reserved(s.a_peak_reserved_bytes, c.unit),
                          side_reserved(s.b_peak_reserved_bytes, c.unit), side_fits(c.a, s.index),
                          side_fits(c.b, s.index)});
  }
  return table;
}

namespace {

// The terms of one stage whose bytes differ, largest difference first (equal ones in the
// comparison's order).
std::vector<const TermComparison*> changed(const StageComparison& s) {
  std::vector<const TermComparison*> out;
  for (const TermComparison& t : s.terms) {
    if (t.delta_bytes != 0) out.push_back(&t);
  }
  std::stable_sort(out.begin(), out.end(), [](const TermComparison* x, const TermComparison* y) {
    // |delta| as unsigned: -2^63 cannot occur (bytes are >= 0), but the comparison stays exact.
    return std::llabs(x->delta_bytes) > std::llabs(y->delta_bytes);
  });
  return out;
}

}  // namespace

Table changed_terms_table(const ComparedReports& c, const StageComparison& s,
                          std::string_view arrow) {
  Table table{.columns = {{"term"},
                          {"family"},
                          {"A", Align::right},
                          {"B", Align::right},
                          {"difference", Align::right}}};
  for (const TermComparison* t : changed(s)) {
    table.rows.push_back({compared_term_name(c, s.index, *t, arrow),
                          std::string(family_name(compared_family(c, s.index, *t))),
                          t->a_term >= 0 ? comparison_amount_text(t->a_bytes, c.unit) : "-",
                          t->b_term >= 0 ? comparison_amount_text(t->b_bytes, c.unit) : "-",
                          comparison_delta_text(t->delta_bytes, c.unit)});
  }
  return table;
}

namespace {

// The stages whose changed terms are listed: both binding stages, or every stage.
std::vector<const StageComparison*> listed_stages(const ComparedReports& c, bool all) {
  std::vector<const StageComparison*> out;
  for (const StageComparison& s : c.comparison.stages) {
    if (all || s.index == c.comparison.a_binding_stage || s.index == c.comparison.b_binding_stage) {
      out.push_back(&s);
    }
  }
  return out;
}

}  // namespace

// Terms of A and B together: a term only one side has counts.
std::string changed_terms_heading(const StageComparison& s) {
  return "stage " + std::to_string(s.index) + ": " + std::to_string(changed_terms(s)) + " of " +
         std::to_string(s.terms.size()) + " terms changed";
}

// The side's model, layout and every training setting that changes memory (settings_text, the
// app's summary line); the settings that differ are listed whole by setting_changes.
std::string comparison_side_summary(const Report& report, const Config& config) {
  return report.model + ", " + layout_text(config) + "; " + settings_text(config);
}

std::string binding_peaks_text(const Comparison& c, std::string_view arrow, AmountUnit unit) {
  return comparison_amount_text(c.a_binding_peak_bytes, unit) + std::string(arrow) +
         comparison_amount_text(c.b_binding_peak_bytes, unit) + " (" +
         comparison_delta_text(c.binding_peak_delta_bytes, unit) + ")";
}

namespace {

json side_json(const Report& report, std::string_view link) {
  const StageReport* binding = stage_of(report, report.binding_stage);
  json fits = nullptr;
  if (report.device.bytes > 0) fits = stages_not_fitting(report) == 0;
  json out = {{"model", report.model}};
  if (!link.empty()) out["link"] = std::string(link);
  out["device"] = {{"name", report.device.name}, {"bytes", report.device.bytes}};
  out["binding_stage"] = report.binding_stage;
  out["binding_peak_bytes"] = binding != nullptr ? binding->peak_bytes : 0;
  out["fits"] = fits;
  out["verdict"] = verdict_text(report);
  return out;
}

json term_comparison_json(const ComparedReports& c, std::int64_t stage, const TermComparison& t) {
  const Term* a = term_of(c.a, stage, t.a_term);
  const Term* b = term_of(c.b, stage, t.b_term);
  const Term* named = a != nullptr ? a : b;
  return {{"name", term_name(*named)},
          {"a_name", a != nullptr ? json(term_name(*a)) : json(nullptr)},
          {"b_name", b != nullptr ? json(term_name(*b)) : json(nullptr)},
          {"family", std::string(family_name(named->family))},
          {"a_bytes", t.a_bytes},
          {"b_bytes", t.b_bytes},
          {"delta_bytes", t.delta_bytes},
          {"a_counts_in_peak", a != nullptr ? json(a->counts_in_peak) : json(nullptr)},
          {"b_counts_in_peak", b != nullptr ? json(b->counts_in_peak) : json(nullptr)}};
}

json stage_fits_json(const Report& report, std::int64_t index) {
  const StageReport* s = stage_of(report, index);
  if (s == nullptr || report.device.bytes <= 0) return nullptr;
  return s->headroom_bytes >= 0;
}

}  // namespace

std::vector<SettingChange> setting_changes(const Config& a, const Config& b) {
  std::vector<SettingChange> out;
  for (const ConfigField& field : config_fields()) {
    if (field_equals(field, a, b)) continue;
    out.push_back(
        {std::string(field.key), format_field_text(field, a), format_field_text(field, b)});
  }
  return out;
}

std::string setting_changes_text(const std::vector<SettingChange>& changes,
                                 std::string_view arrow) {
  if (changes.empty()) return "none";
  std::string out;
  for (const SettingChange& change : changes) {
    if (!out.empty()) out += ", ";
    const auto shown = [](const std::string& text) {
      return text.empty() ? std::string("(none)") : shortened(text);
    };
    out += change.key + " " + shown(change.a_text) + std::string(arrow) + shown(change.b_text);
  }
  return out;
}

std::string comparison_text(const ComparedReports& c, const ComparisonTextOptions& options) {
  std::string out;
  out +=
      "A: " + comparison_side_summary(c.a, c.a_config) + "\n   " + verdict_text(c.a, c.unit) + "\n";
  out +=
      "B: " + comparison_side_summary(c.b, c.b_config) + "\n   " + verdict_text(c.b, c.unit) + "\n";
  out +=
      "settings changed: " + setting_changes_text(setting_changes(c.a_config, c.b_config)) + "\n";
  out += "binding peak: " + binding_peaks_text(c.comparison, " -> ", c.unit) + "\n\n";
  out += text_table(comparison_stage_table(c));
  for (const StageComparison* s : listed_stages(c, options.all_stages)) {
    out += "\n" + changed_terms_heading(*s) + "\n";
    if (changed_terms(*s) > 0) out += text_table(changed_terms_table(c, *s, " -> "));
  }
  return out;
}

std::string comparison_markdown(const ComparedReports& c,
                                const ComparisonMarkdownOptions& options) {
  std::string out;
  out += "**stagemem** comparison of per-rank device memory per pipeline stage, B - A (" +
         std::string(c.unit == AmountUnit::gb ? "GB = 10^9" : "GiB = 2^30") + " bytes)\n\n";
  out += "- A: " + markdown_cell(comparison_side_summary(c.a, c.a_config)) + "\n";
  out += "- B: " + markdown_cell(comparison_side_summary(c.b, c.b_config)) + "\n";
  out +=
      "- Settings changed: " +
      markdown_cell(setting_changes_text(setting_changes(c.a_config, c.b_config), markdown_arrow)) +
      "\n";
  out += "- Verdict A: **" + markdown_cell(verdict_text(c.a, c.unit)) + "**\n";
  out += "- Verdict B: **" + markdown_cell(verdict_text(c.b, c.unit)) + "**\n";
  out +=
      "- Binding peak: " + markdown_cell(binding_peaks_text(c.comparison, markdown_arrow, c.unit)) +
      "\n\n";
  out += markdown_table(comparison_stage_table(c));
  for (const StageComparison* s : listed_stages(c, options.all_stages)) {
    out += "\n#### " + markdown_cell(changed_terms_heading(*s)) + "\n\n";
    if (changed_terms(*s) > 0) out += markdown_table(changed_terms_table(c, *s, markdown_arrow));
  }
  if (!options.comparison_link.empty()) {
    out += '\n' + markdown_link_line(options.comparison_link, "Open this comparison in stagemem",
                                     "Comparison");
  }
  if (!options.a_link.empty()) {
    out += '\n' + markdown_link_line(options.a_link, "Open A in stagemem", "A");
  }
  if (!options.b_link.empty()) {
    out += '\n' + markdown_link_line(options.b_link, "Open B in stagemem", "B");
  }
  return out;
}

std::string comparison_csv(const ComparedReports& c) {
  Table table{.columns = {{"stage", Align::right, CellKind::number},
                          {"term"},
                          {"family"},
                          {"a_bytes", Align::right, CellKind::number},
                          {"b_bytes", Align::right, CellKind::number},
                          {"delta_bytes", Align::right, CellKind::number},
                          {"in_a"},
                          {"in_b"}}};
  for (const StageComparison& s : c.comparison.stages) {
    for (const TermComparison& t : s.terms) {
      table.rows.push_back({std::to_string(s.index), compared_term_name(c, s.index, t),
                            std::string(family_name(compared_family(c, s.index, t))),
                            std::to_string(t.a_bytes), std::to_string(t.b_bytes),
                            std::to_string(t.delta_bytes), t.a_term >= 0 ? "yes" : "no",
                            t.b_term >= 0 ? "yes" : "no"});
    }
    table.rows.push_back({std::to_string(s.index), "peak", "", std::to_string(s.a_peak_bytes),
                          std::to_string(s.b_peak_bytes), std::to_string(s.peak_delta_bytes),
                          s.in_a ? "yes" : "no", s.in_b ? "yes" : "no"});
    // The replayed reserved and the device figures: empty cells on a side where one is unknown,
    // and the difference only when both are known.
    const auto figure_row = [&](const char* name, std::int64_t a, std::int64_t b) {
      if (a < 0 && b < 0) return;
      std::int64_t delta = 0;
      const bool both = a >= 0 && b >= 0 && checked_sub(b, a, &delta);
      table.rows.push_back({std::to_string(s.index), name, "", a >= 0 ? std::to_string(a) : "",
                            b >= 0 ? std::to_string(b) : "", both ? std::to_string(delta) : "",
                            a >= 0 ? "yes" : "no", b >= 0 ? "yes" : "no"});
    };
    figure_row("peak reserved", s.a_peak_reserved_bytes, s.b_peak_reserved_bytes);
    figure_row("device peak", s.a_device_peak_bytes, s.b_device_peak_bytes);
  }
  return csv_table(table);
}

namespace {

json known_or_null(std::int64_t bytes) {
  return bytes >= 0 ? json(bytes) : json(nullptr);
}

}  // namespace

std::string comparison_json(const ComparedReports& c, std::string_view a_link,
                            std::string_view b_link) {
  json changes = json::array();
  for (const SettingChange& change : setting_changes(c.a_config, c.b_config)) {
    changes.push_back({{"field", change.key}, {"a", change.a_text}, {"b", change.b_text}});
  }
  json stages = json::array();
  for (const StageComparison& s : c.comparison.stages) {
    json terms = json::array();
    for (const TermComparison& t : s.terms) terms.push_back(term_comparison_json(c, s.index, t));
    const StageReport* a = stage_of(c.a, s.index);
    const StageReport* b = stage_of(c.b, s.index);
    stages.push_back({{"index", s.index},
                      {"in_a", s.in_a},
                      {"in_b", s.in_b},
                      {"a_layers", a != nullptr ? json(stage_layers_text(*a)) : json(nullptr)},
                      {"b_layers", b != nullptr ? json(stage_layers_text(*b)) : json(nullptr)},
                      {"a_peak_bytes", s.a_peak_bytes},
                      {"b_peak_bytes", s.b_peak_bytes},
                      {"peak_delta_bytes", s.peak_delta_bytes},
                      {"a_peak_reserved_bytes", known_or_null(s.a_peak_reserved_bytes)},
                      {"b_peak_reserved_bytes", known_or_null(s.b_peak_reserved_bytes)},
                      {"a_device_peak_bytes", known_or_null(s.a_device_peak_bytes)},
                      {"b_device_peak_bytes", known_or_null(s.b_device_peak_bytes)},
                      {"a_fits", stage_fits_json(c.a, s.index)},
                      {"b_fits", stage_fits_json(c.b, s.index)},
                      {"changed_terms", changed_terms(s)},
                      {"terms", terms}});
  }
  const json out = {{"schema_version", report_schema_version},
                    {"kind", "diff"},
                    {"a", side_json(c.a, a_link)},
                    {"b", side_json(c.b, b_link)},
                    {"settings_changed", changes},
                    {"binding_peak_delta_bytes", c.comparison.binding_peak_delta_bytes},
                    {"stages", stages}};
  std::string text = out.dump(2, ' ', false, json::error_handler_t::replace);
  text += '\n';
  return text;
}

}  // namespace stagemem
