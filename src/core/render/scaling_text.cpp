#include "render/scaling_text.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "base/text_escaping.h"

#include "render/comparison.h"
#include "render/report_json.h"
#include "report/term_names.h"

namespace stagemem {
namespace {

using json = nlohmann::ordered_json;

std::string fixed(double value, int decimals) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f", decimals, value);
  return buffer;
}

const Term& term_of(const ScalingCheck& check, const ScalingTerm& row) {
  const auto p = static_cast<std::size_t>(row.first_point);
  const StageReport& stage = check.reports[p].stages[static_cast<std::size_t>(check.stage)];
  return stage.terms[static_cast<std::size_t>(row.term[p])];
}

// A fitted or measured amount that may be negative.
std::string signed_amount(std::int64_t bytes, AmountUnit unit) {
  return bytes < 0 ? comparison_delta_text(bytes, unit) : comparison_amount_text(bytes, unit);
}

std::string over_under(bool has_percent, double percent, double gap) {
  if (gap == 0.0) return "equal";
  const std::string side = gap > 0 ? "over" : "under";
  return has_percent ? "measured " + fixed(std::fabs(percent), 1) + " % " + side
                     : "measured " + side;
}

std::size_t count_of(const ScalingCheck& check, TermScaling scaling) {
  return static_cast<std::size_t>(
      std::count_if(check.terms.begin(), check.terms.end(),
                    [&](const ScalingTerm& row) { return row.scaling == scaling; }));
}

// `text` broken into lines of at most `width` bytes at spaces (a longer word stays whole).
std::string wrapped(std::string_view text, std::size_t width = 100) {
  std::string out;
  std::size_t line = 0;
  while (!text.empty()) {
    const auto space = text.find(' ');
    const std::string_view word = text.substr(0, space);
    text = space == std::string_view::npos ? std::string_view{} : text.substr(space + 1);
    if (line > 0 && line + 1 + word.size() > width) {
      out += '\n';
      line = 0;
    } else if (line > 0) {
      out += ' ';
      ++line;
    }
    out += word;
    line += word.size();
  }
  return out;
}

}  // namespace

std::string bytes_per_token_text(double bytes_per_token, AmountUnit unit) {
  const double magnitude = std::fabs(bytes_per_token);
  const double kilo = unit == AmountUnit::gb ? 1e3 : 1024.0;
  const bool gb = unit == AmountUnit::gb;
  if (magnitude >= kilo * kilo)
    return fixed(bytes_per_token / (kilo * kilo), 3) + (gb ? " MB/token" : " MiB/token");
  if (magnitude >= kilo)
    return fixed(bytes_per_token / kilo, 1) + (gb ? " KB/token" : " KiB/token");
  return fixed(bytes_per_token, magnitude >= 100.0 ? 0 : 2) + " B/token";
}

std::string bytes_per_token_delta_text(double bytes_per_token, AmountUnit unit) {
  if (bytes_per_token == 0.0) return "0 B/token";
  return (bytes_per_token > 0 ? "+" : "") + bytes_per_token_text(bytes_per_token, unit);
}

std::string gap_percent_text(bool has_percent, double percent) {
  if (!has_percent) return "-";
  return (percent > 0 ? "+" : "") + fixed(percent, 1) + " %";
}

std::string scaling_point_name(const ScalingPoint& point) {
  return std::string(enum_name(point.axis)) + " " + std::to_string(point.value);
}

std::string_view term_scaling_name(TermScaling scaling) {
  switch (scaling) {
    case TermScaling::constant:
      return "constant";
    case TermScaling::linear:
      return "linear";
    case TermScaling::not_linear:
      return "not linear";
  }
  return "not linear";
}

std::string scaling_subject_text(const ScalingCheck& check) {
  const Report& first = check.reports.front();
  return "Scaling cross-check of " + first.model + ", stage " + std::to_string(check.stage) +
         (check.stage_given ? "" : " (the binding stage at the most tokens)") + ", varying " +
         std::string(enum_name(check.axis)) + " over " + std::to_string(check.points.size()) +
         " measured points; tokens = seq / CP x mbs (one micro-batch on one rank). " +
         "Measured peaks are fitted as a + b x tokens " +
         (check.exact_line ? "(an exact line through two points)"
                           : "(least squares; residuals per point)") +
         "; derived a is the sum of the terms at the peak of the stage that are the same at every "
         "point "
         "(resident state, token-independent transients), derived b the terms exactly "
         "proportional to tokens. Measured values never feed the model.";
}

std::string scaling_headline(const ScalingCheck& check, AmountUnit unit) {
  return "measured " + signed_amount(check.measured_constant_bytes, unit) + " + " +
         bytes_per_token_text(check.measured_bytes_per_token, unit) + " x tokens vs derived " +
         comparison_amount_text(check.derived_constant_bytes, unit) + " + " +
         bytes_per_token_text(check.derived_bytes_per_token, unit) + " x tokens (stage " +
         std::to_string(check.stage) + "): constant " +
         comparison_delta_text(check.constant_gap_bytes, unit) + " (" +
         over_under(check.has_constant_gap_percent, check.constant_gap_percent,
                    static_cast<double>(check.constant_gap_bytes)) +
         "), slope " + bytes_per_token_delta_text(check.slope_gap_bytes_per_token, unit) + " (" +
         over_under(check.has_slope_gap_percent, check.slope_gap_percent,
                    check.slope_gap_bytes_per_token) +
         ")";
}

std::string scaling_notes(const ScalingCheck& check) {
  std::string out;
  if (const std::size_t n = count_of(check, TermScaling::not_linear); n > 0) {
    out += "not linear in tokens (in neither a nor b, shown by name): ";
    bool first = true;
    for (const ScalingTerm& row : check.terms) {
      if (row.scaling != TermScaling::not_linear) continue;
      out += (first ? "" : ", ") + term_name(term_of(check, row));
      first = false;
    }
    out += ".";
  }
  if (check.moment_moves) {
    out += std::string(out.empty() ? "" : " ") +
           "The stage's peak moment moves between points: terms that count in the peak at one "
           "point and not another are not linear.";
  }
  for (std::size_t p = 0; p < check.results.size() && !check.stage_given; ++p) {
    if (check.results[p].binding_stage == check.stage) continue;
    out += std::string(out.empty() ? "" : " ") + "At " + scaling_point_name(check.points[p]) +
           " stage " + std::to_string(check.results[p].binding_stage) + " binds, not stage " +
           std::to_string(check.stage) + ".";
  }
  return out;
}

Table scaling_fit_table(const ScalingCheck& check, AmountUnit unit) {
  Table table{.columns = {{"quantity"},
                          {"measured", Align::right},
                          {"derived", Align::right},
                          {"gap (measured - derived)", Align::right},
                          {"gap %", Align::right}}};
  table.rows.push_back(
      {"a (constant)", signed_amount(check.measured_constant_bytes, unit),
       comparison_amount_text(check.derived_constant_bytes, unit),
       comparison_delta_text(check.constant_gap_bytes, unit),
       gap_percent_text(check.has_constant_gap_percent, check.constant_gap_percent)});
  table.rows.push_back({"b (per token)", bytes_per_token_text(check.measured_bytes_per_token, unit),
                        bytes_per_token_text(check.derived_bytes_per_token, unit),
                        bytes_per_token_delta_text(check.slope_gap_bytes_per_token, unit),
                        gap_percent_text(check.has_slope_gap_percent, check.slope_gap_percent)});
  return table;
}

Table scaling_points_table(const ScalingCheck& check, AmountUnit unit) {
  Table table{.columns = {{"point"},
                          {"tokens", Align::right, CellKind::number},
                          {"measured", Align::right},
                          {"derived peak", Align::right},
                          {"gap", Align::right},
                          {"gap %", Align::right},
                          {"derived not linear", Align::right}}};
  if (!check.exact_line) {
    table.columns.push_back({"fitted a + b x tokens", Align::right});
    table.columns.push_back({"residual", Align::right});
  }
  for (std::size_t p = 0; p < check.results.size(); ++p) {
    const ScalingPointResult& r = check.results[p];
    const bool has_percent = r.derived_peak_bytes != 0;
    const double percent = has_percent ? 100.0 * static_cast<double>(r.peak_gap_bytes) /
                                             static_cast<double>(r.derived_peak_bytes)
                                       : 0.0;
    std::vector<std::string> row = {scaling_point_name(check.points[p]),
                                    std::to_string(r.tokens),
                                    comparison_amount_text(r.measured_bytes, unit),
                                    comparison_amount_text(r.derived_peak_bytes, unit),
                                    comparison_delta_text(r.peak_gap_bytes, unit),
                                    gap_percent_text(has_percent, percent),
                                    comparison_amount_text(r.not_linear_bytes, unit)};
    if (!check.exact_line) {
      row.push_back(signed_amount(r.fitted_bytes, unit));
      row.push_back(comparison_delta_text(r.residual_bytes, unit));
    }
    table.rows.push_back(std::move(row));
  }
  return table;
}

Table scaling_terms_table(const ScalingCheck& check, TermScaling scaling, AmountUnit unit) {
  Table table{.columns = {{"term"}, {"family"}}};
  for (const ScalingPoint& point : check.points)
    table.columns.push_back({scaling_point_name(point), Align::right});
  for (const ScalingTerm& row : check.terms) {
    if (row.scaling != scaling) continue;
    const Term& term = term_of(check, row);
    std::vector<std::string> cells = {term_name(term), std::string(family_name(term.family))};
    for (std::int64_t bytes : row.bytes) cells.push_back(comparison_amount_text(bytes, unit));
    table.rows.push_back(std::move(cells));
  }
  return table;
}

namespace {

// The sections every human-readable form has, each written by `table_writer`.
template <typename Heading, typename Writer>
std::string sections(const ScalingCheck& check, const ScalingTextOptions& options, Heading heading,
                     Writer table_writer) {
  std::string out = heading("fit: measured = a + b x tokens") +
                    table_writer(scaling_fit_table(check, options.unit)) + "\n" +
                    heading("points") + table_writer(scaling_points_table(check, options.unit));
  const TermScaling order[] = {TermScaling::not_linear, TermScaling::constant, TermScaling::linear};
  for (TermScaling scaling : order) {
    const std::size_t n = count_of(check, scaling);
    if (n == 0 || (!options.all_terms && scaling != TermScaling::not_linear)) continue;
    out += "\n" +
           heading(std::string(term_scaling_name(scaling)) + " terms (" + std::to_string(n) + ")") +
           table_writer(scaling_terms_table(check, scaling, options.unit));
  }
  if (!options.all_terms) {
    out += "\n" + std::to_string(count_of(check, TermScaling::constant)) + " constant and " +
           std::to_string(count_of(check, TermScaling::linear)) +
           " linear terms make derived a and b (--terms lists them).\n";
  }
  return out;
}

}  // namespace

std::string scaling_text(const ScalingCheck& check, const ScalingTextOptions& options) {
  std::string out = wrapped(scaling_subject_text(check)) + "\n\n" +
                    wrapped(scaling_headline(check, options.unit)) + "\n";
  if (const std::string notes = scaling_notes(check); !notes.empty()) out += wrapped(notes) + "\n";
  out += "\n";
  out += sections(
      check, options, [](const std::string& title) { return title + ":\n"; },
      [](const Table& table) { return text_table(table); });
  return out;
}

std::string scaling_markdown(const ScalingCheck& check, const ScalingTextOptions& options) {
  std::string out = "### " +
                    markdown_cell("Scaling cross-check: " + check.reports.front().model +
                                  ", stage " + std::to_string(check.stage)) +
                    "\n\n" + markdown_cell(scaling_subject_text(check)) + "\n\n**" +
                    markdown_cell(scaling_headline(check, options.unit)) + "**\n\n";
  if (const std::string notes = scaling_notes(check); !notes.empty())
    out += markdown_cell(notes) + "\n\n";
  out += sections(
      check, options, [](const std::string& title) { return "#### " + title + "\n\n"; },
      [](const Table& table) { return markdown_table(table); });
  if (!options.link.empty()) out += "\n[Open in stagemem](" + options.link + ")\n";
  return out;
}

std::string scaling_json(const ScalingCheck& check, std::string_view link) {
  json points = json::array();
  for (std::size_t p = 0; p < check.results.size(); ++p) {
    const ScalingPointResult& r = check.results[p];
    points.push_back({{"text", scaling_point_text(check.points[p])},
                      {"field", enum_name(check.points[p].axis)},
                      {"value", check.points[p].value},
                      {"source", check.points[p].source},
                      {"tokens", r.tokens},
                      {"measured_bytes", r.measured_bytes},
                      {"derived_peak_bytes", r.derived_peak_bytes},
                      {"peak_gap_bytes", r.peak_gap_bytes},
                      {"derived_constant_bytes", r.constant_bytes},
                      {"derived_linear_bytes", r.linear_bytes},
                      {"derived_not_linear_bytes", r.not_linear_bytes},
                      {"fitted_bytes", r.fitted_bytes},
                      {"residual_bytes", r.residual_bytes},
                      {"binding_stage", r.binding_stage}});
  }
  json terms = json::array();
  for (const ScalingTerm& row : check.terms) {
    const Term& term = term_of(check, row);
    terms.push_back({{"name", term_name(term)},
                     {"family", family_name(term.family)},
                     {"scaling", term_scaling_name(row.scaling)},
                     {"bytes", row.bytes}});
  }
  const json out = {
      {"schema_version", report_schema_version},
      {"kind", "scaling"},
      {"model", check.reports.front().model},
      {"link", link},
      {"stage", check.stage},
      {"stage_given", check.stage_given},
      {"field", enum_name(check.axis)},
      {"tokens", "sequence_length / context_parallel x micro_batch"},
      {"exact_line", check.exact_line},
      {"measured",
       {{"constant_bytes", check.measured_constant_bytes},
        {"bytes_per_token", check.measured_bytes_per_token}}},
      {"derived",
       {{"constant_bytes", check.derived_constant_bytes},
        {"bytes_per_token", check.derived_bytes_per_token},
        {"linear_bytes", check.derived_linear_bytes},
        {"linear_tokens", check.derived_linear_tokens}}},
      {"gap",
       {{"constant_bytes", check.constant_gap_bytes},
        {"constant_percent",
         check.has_constant_gap_percent ? json(check.constant_gap_percent) : json(nullptr)},
        {"bytes_per_token", check.slope_gap_bytes_per_token},
        {"slope_percent",
         check.has_slope_gap_percent ? json(check.slope_gap_percent) : json(nullptr)}}},
      {"moment_moves", check.moment_moves},
      {"points", points},
      {"terms", terms}};
  std::string text = out.dump(2, ' ', false, json::error_handler_t::replace);
  text += '\n';
  return text;
}

}  // namespace stagemem
