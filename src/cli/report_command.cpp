#include "report_command.h"

#include <array>
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "command_steps.h"
#include "config/config.h"
#include "config/url_fragment.h"
#include "estimate/cross_check.h"
#include "estimate/estimate.h"
#include "render/cross_check_text.h"
#include "render/report_csv.h"
#include "render/report_json.h"
#include "render/report_markdown.h"
#include "render/report_text.h"
#include "report/report.h"

namespace {

using stagemem::Diagnostics;

constexpr std::array<stagemem_cli::CommandOption, 5> report_options = {{
    {"--json", "",
     "JSON: stages[] {index, layers, terms[], peak_bytes, peak_moment}, binding_stage, "
     "device_bytes, cross_checks[] (the same as --format json)"},
    {"--format", "F",
     "text | markdown | csv | json (default text); markdown: summary, per-stage table and the "
     "link fragment, as the app's Copy as Markdown"},
    {"--terms", "", "markdown: also every stage's full term table"},
    {"--timeline", "",
     "the step timeline instead: per stage every forward/backward pass and the optimizer step "
     "with live bytes by family, and the peak moment (text, csv or json)"},
    stagemem_cli::units_option,
}};

constexpr std::array<std::string_view, 4> report_formats = {"text", "markdown", "csv", "json"};

constexpr const char* report_help =
    "usage: stagemem report [options]\n\nPer-stage memory per rank, term by term.\n\n"
    "output:\n";
constexpr const char* report_help_end =
    "\nExit codes: 0 success, 2 bad input (the error names the field and the allowed "
    "values).\n";

// What the report prints: --format (or --json), and the timeline instead of the terms.
struct ReportOutput {
  std::string format;
  bool json = false;
  bool timeline = false;
  stagemem::AmountUnit unit = stagemem::AmountUnit::gib;  // --units: text and Markdown
};

ReportOutput read_report_output(const stagemem_cli::CommandLine& line, Diagnostics& d) {
  ReportOutput output{.format = stagemem_cli::checked_format(line, report_formats, d)};
  output.json = line.option("--json").has_value() || output.format == "json";
  output.timeline = line.option("--timeline").has_value();
  output.unit = stagemem_cli::checked_units(line, d);
  if (output.timeline && output.format == "markdown") {
    d.error("--format", "--timeline prints text, csv or json, not markdown");
  }
  return output;
}

std::string link_of(const stagemem::Config& config) {
  return "#" + stagemem::encode_fragment(config);
}

// The step timeline (timeline.h): JSON, CSV or text.
void print_timeline(const stagemem::Report& report, const stagemem::Config& config,
                    const ReportOutput& output) {
  const std::string text = output.json ? stagemem::timeline_json(report, link_of(config))
                           : output.format == "csv" ? stagemem::timeline_csv(report)
                                                    : stagemem::timeline_text(report, output.unit);
  std::fputs(text.c_str(), stdout);
}

// The terms of every stage as Markdown (the app's Copy as Markdown), CSV or text.
void print_report(const stagemem::Report& report, const stagemem::Config& config,
                  const ReportOutput& output, bool terms) {
  std::string text;
  if (output.format == "markdown") {
    const stagemem::MarkdownOptions options{
        .link = link_of(config), .terms = terms, .unit = output.unit};
    text = stagemem::report_markdown(report, config, options);
  } else if (output.format == "csv") {
    text = stagemem::report_csv(report);
  } else {
    text = stagemem::report_text(report, config, output.unit);
  }
  std::fputs(text.c_str(), stdout);
}

}  // namespace

int run_report(const std::vector<std::string_view>& args) {
  stagemem_cli::CommandLine line =
      stagemem_cli::parse_command_line(args, {.options = report_options});
  if (line.help) {
    stagemem_cli::print_command_help(report_help, report_options, report_help_end);
    return stagemem_cli::exit_ok;
  }
  const stagemem::Config& config = line.config;
  Diagnostics& d = line.diagnostics;
  const ReportOutput output = read_report_output(line, d);
  if (!d.ok()) return stagemem_cli::refuse(d);
  const stagemem::Report report = stagemem::estimate(config);
  if (!report.diagnostics.ok()) return stagemem_cli::refuse(d, report.diagnostics);

  if (output.timeline) {
    print_timeline(report, config, output);
    // timeline_json has no place for warnings: printed with the text and CSV only.
    return output.json ? stagemem_cli::exit_ok
                       : stagemem_cli::finish(stagemem_cli::exit_ok, d, report.diagnostics);
  }
  if (output.json) {
    // The JSON carries the warnings (report_json takes them).
    std::fputs(stagemem::report_json(report, config, link_of(config), d).c_str(), stdout);
    return stagemem_cli::exit_ok;
  }
  d.warnings.insert(d.warnings.end(), report.diagnostics.warnings.begin(),
                    report.diagnostics.warnings.end());
  print_report(report, config, output, line.option("--terms").has_value());
  return stagemem_cli::finish(stagemem_cli::exit_ok, d);  // warnings only here
}

namespace {

constexpr const char* probe_check_help =
    "usage: stagemem probe-check [--json]\n\nThe users' optimizer-state "
    "measurements on a 99M-parameter probe (TP 1, PP 1, EP 1, world = DP) next to "
    "the derived bytes per parameter, with the gap.\n";

void print_probe_json(const std::vector<stagemem::ProbeCrossCheck>& checks) {
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const auto& c : checks) {
    rows.push_back(
        {{"optimizer", std::string(stagemem::optimizer_kind_name(c.measurement.optimizer))},
         {"data_parallel", c.measurement.data_parallel},
         {"derived_bytes_per_parameter", c.derived_bytes_per_parameter},
         {"derived_formula", stagemem::probe_formula(c)},
         {"measured_bytes_per_parameter", c.measurement.measured_bytes_per_parameter},
         {"gap_bytes_per_parameter", c.gap_bytes_per_parameter},
         {"ratio", c.ratio},
         {"explanations", stagemem::probe_explanations(c)}});
  }
  stagemem_cli::print_json(rows);
}

void print_probe_text(const std::vector<stagemem::ProbeCrossCheck>& checks) {
  std::printf("%-18s %-5s %-80s %8s %9s %8s %7s\n", "optimizer", "DP", "derived formula (B/param)",
              "derived", "measured", "gap", "ratio");
  for (const auto& c : checks) {
    const std::string dp =
        c.measurement.data_parallel == 0 ? "any" : std::to_string(c.measurement.data_parallel);
    std::printf("%-18s %-5s %-80s %8.2f %9.2f %+8.2f %7.3f\n",
                std::string(stagemem::optimizer_kind_name(c.measurement.optimizer)).c_str(),
                dp.c_str(), stagemem::probe_formula(c).c_str(), c.derived_bytes_per_parameter,
                c.measurement.measured_bytes_per_parameter, c.gap_bytes_per_parameter, c.ratio);
  }
  std::printf("\nmeasured values never feed the model; the gaps are shown, not absorbed.\n");
}

}  // namespace

// probe-check takes no configuration: its two flags are read here, the first unknown argument
// refused.
int run_probe_check(const std::vector<std::string_view>& args) {
  bool json_output = false;
  for (std::string_view a : args) {
    if (a == "--json") {
      json_output = true;
    } else if (a == "--help" || a == "-h") {
      std::fputs(probe_check_help, stdout);
      return stagemem_cli::exit_ok;
    } else {
      std::fprintf(stderr, "error: %s: unknown argument; see `stagemem probe-check --help`\n",
                   std::string(a).c_str());
      return stagemem_cli::exit_bad_input;
    }
  }
  const auto checks = stagemem::optimizer_state_probe_cross_checks();
  if (json_output) {
    print_probe_json(checks);
  } else {
    print_probe_text(checks);
  }
  return stagemem_cli::exit_ok;
}
