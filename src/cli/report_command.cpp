#include "report_command.h"

#include <array>
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "config/config.h"
#include "config/url_fragment.h"
#include "config_sources.h"
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

using stagemem_cli::exit_bad_input;
using stagemem_cli::print_diagnostics;

constexpr std::array<stagemem_cli::CommandOption, 4> report_options = {{
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
}};

}  // namespace

int run_report(const std::vector<std::string_view>& args) {
  stagemem_cli::CommandLine line =
      stagemem_cli::parse_command_line(args, {.options = report_options});
  if (line.help) {
    std::printf(
        "usage: stagemem report [options]\n\nPer-stage memory per rank, term by term.\n\n"
        "output:\n%s%s\nExit codes: 0 success, 2 bad input (the error names the field "
        "and the allowed values).\n",
        stagemem_cli::command_options_help(report_options).c_str(),
        stagemem_cli::configuration_flags_help().c_str());
    return 0;
  }
  const stagemem::Config& config = line.config;
  Diagnostics& d = line.diagnostics;
  const std::string format = line.option("--format").value_or("text");
  const bool json_output = line.option("--json").has_value() || format == "json";
  const bool timeline = line.option("--timeline").has_value();
  if (format != "text" && format != "markdown" && format != "csv" && format != "json") {
    d.error("--format", "'" + format.substr(0, 32) + "' is not one of: text, markdown, csv, json");
  } else if (timeline && format == "markdown") {
    d.error("--format", "--timeline prints text, csv or json, not markdown");
  }
  if (!d.ok()) {
    print_diagnostics(d);
    return exit_bad_input;
  }
  const stagemem::Report report = stagemem::estimate(config);
  if (!report.diagnostics.ok()) {
    print_diagnostics(d);
    print_diagnostics(report.diagnostics);
    return exit_bad_input;
  }
  if (timeline) {
    if (json_output) {
      std::fputs(stagemem::timeline_json(report, "#" + stagemem::encode_fragment(config)).c_str(),
                 stdout);
      return 0;
    }
    std::fputs(format == "csv" ? stagemem::timeline_csv(report).c_str()
                               : stagemem::timeline_text(report).c_str(),
               stdout);
    print_diagnostics(d);
    print_diagnostics(report.diagnostics);
    return 0;
  }
  if (json_output) {
    std::fputs(
        stagemem::report_json(report, config, "#" + stagemem::encode_fragment(config), d).c_str(),
        stdout);
    return 0;
  }
  d.warnings.insert(d.warnings.end(), report.diagnostics.warnings.begin(),
                    report.diagnostics.warnings.end());
  if (format == "markdown") {
    const stagemem::MarkdownOptions options{.link = "#" + stagemem::encode_fragment(config),
                                            .terms = line.option("--terms").has_value()};
    std::fputs(stagemem::report_markdown(report, config, options).c_str(), stdout);
  } else if (format == "csv") {
    std::fputs(stagemem::report_csv(report).c_str(), stdout);
  } else {
    std::fputs(stagemem::report_text(report, config).c_str(), stdout);
  }
  print_diagnostics(d);  // warnings only here
  return 0;
}

int run_probe_check(const std::vector<std::string_view>& args) {
  bool json_output = false;
  for (std::string_view a : args) {
    if (a == "--json") {
      json_output = true;
    } else if (a == "--help" || a == "-h") {
      std::fputs(
          "usage: stagemem probe-check [--json]\n\nThe users' optimizer-state "
          "measurements on a 99M-parameter probe (TP 1, PP 1, EP 1, world = DP) next to "
          "the derived bytes per parameter, with the gap.\n",
          stdout);
      return 0;
    } else {
      std::fprintf(stderr, "error: %s: unknown argument; see `stagemem probe-check --help`\n",
                   std::string(a).c_str());
      return exit_bad_input;
    }
  }
  const auto checks = stagemem::optimizer_state_probe_cross_checks();
  if (json_output) {
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
    std::printf("%s\n", rows.dump(2).c_str());
    return 0;
  }
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
  return 0;
}
