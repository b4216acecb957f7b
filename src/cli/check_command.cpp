#include "check_command.h"

#include <array>
#include <cstdio>
#include <string>

#include "config/url_fragment.h"
#include "config_sources.h"
#include "estimate/estimate.h"
#include "render/report_json.h"
#include "render/report_markdown.h"
#include "render/report_text.h"
#include "report/report.h"

namespace {

using stagemem_cli::exit_bad_input;

constexpr int exit_does_not_fit = 1;

constexpr std::array<stagemem_cli::CommandOption, 2> check_options = {{
    {"--json", "",
     "JSON: fits, device, stages[] {index, layers, peak_bytes, headroom_bytes, fits, "
     "largest_terms[]} and the whole report (docs/report-schema.md, \"The check\")"},
    {"--format", "F", "text | markdown (default text)"},
}};

}  // namespace

int run_check(const std::vector<std::string_view>& args) {
  stagemem_cli::CommandLine line =
      stagemem_cli::parse_command_line(args, {.options = check_options});
  if (line.help) {
    std::printf(
        "usage: stagemem check --device NAME|--device-bytes N [options]\n\n"
        "Does every pipeline stage's peak fit the device? For CI jobs.\n"
        "Exit codes: 0 every stage fits, 1 a stage does not fit (printed with its overflow "
        "and its largest terms), 2 bad input.\n\noutput:\n%s%s",
        stagemem_cli::command_options_help(check_options).c_str(),
        stagemem_cli::configuration_flags_help().c_str());
    return 0;
  }
  stagemem::Diagnostics& d = line.diagnostics;
  const std::string format = line.option("--format").value_or("text");
  if (format != "text" && format != "markdown") {
    d.error("--format", "'" + format.substr(0, 32) + "' is not one of: text, markdown");
  }
  if (d.ok() && line.config.device.preset.empty() && line.config.device.bytes == 0) {
    d.error("device",
            "check compares each stage with a device: give --device NAME (see "
            "`stagemem devices`) or --device-bytes N");
  }
  if (!d.ok()) {
    stagemem_cli::print_diagnostics(d);
    return exit_bad_input;
  }
  const stagemem::Report report = stagemem::estimate(line.config);
  if (!report.diagnostics.ok()) {
    stagemem_cli::print_diagnostics(d);
    stagemem_cli::print_diagnostics(report.diagnostics);
    return exit_bad_input;
  }
  if (line.option("--json")) {
    const std::string link = "#" + stagemem::encode_fragment(line.config);
    std::fputs(stagemem::check_json(report, line.config, link, d).c_str(), stdout);
  } else {
    std::fputs(format == "markdown" ? stagemem::check_markdown(report).c_str()
                                    : stagemem::check_text(report).c_str(),
               stdout);
  }
  stagemem_cli::print_diagnostics(report.diagnostics);  // warnings only here
  stagemem_cli::print_diagnostics(d);
  return stagemem::stages_not_fitting(report) > 0 ? exit_does_not_fit : 0;
}
