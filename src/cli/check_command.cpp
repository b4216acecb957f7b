#include "check_command.h"

#include <array>
#include <cstdio>
#include <string>

#include "command_steps.h"
#include "config/url_fragment.h"
#include "estimate/estimate.h"
#include "render/report_json.h"
#include "render/report_markdown.h"
#include "render/report_text.h"
#include "report/report.h"

namespace {

constexpr int exit_does_not_fit = 1;

constexpr std::array<stagemem_cli::CommandOption, 3> check_options = {{
    {"--json", "",
     "JSON: fits, device, stages[] {index, layers, peak_bytes, headroom_bytes, fits, "
     "largest_terms[]} and the whole report (docs/report-schema.md, \"The check\")"},
    {"--format", "F", "text | markdown | json (default text; json is --json)"},
    stagemem_cli::units_option,
}};

constexpr std::array<std::string_view, 3> check_formats = {"text", "markdown", "json"};

constexpr const char* check_help =
    "usage: stagemem check --device NAME|--device-bytes N [options]\n\n"
    "Does every pipeline stage's peak fit the device? For CI jobs.\n"
    "Exit codes: 0 every stage fits, 1 a stage does not fit (printed with its overflow "
    "and its largest terms), 2 bad input.\n\noutput:\n";

// check compares with a device: one must be given.
void require_device(const stagemem_cli::CommandLine& line, stagemem::Diagnostics& d) {
  if (d.ok() && line.config.device.preset.empty() && line.config.device.bytes == 0) {
    d.error("device",
            "check compares each stage with a device: give --device NAME (see "
            "`stagemem devices`) or --device-bytes N");
  }
}

// The verdict: JSON with the whole report (--json), else Markdown or text.
void print_check(const stagemem::Report& report, const stagemem_cli::CommandLine& line,
                 const std::string& format, stagemem::AmountUnit unit) {
  std::string text;
  if (format == "json") {
    const std::string link = "#" + stagemem::encode_fragment(line.config);
    text = stagemem::check_json(report, line.config, link, line.diagnostics);
  } else {
    text = format == "markdown" ? stagemem::check_markdown(report, unit)
                                : stagemem::check_text(report, unit);
  }
  std::fputs(text.c_str(), stdout);
}

}  // namespace

int run_check(const std::vector<std::string_view>& args) {
  stagemem_cli::CommandLine line =
      stagemem_cli::parse_command_line(args, {.options = check_options});
  if (line.help) {
    stagemem_cli::print_command_help(check_help, check_options);
    return stagemem_cli::exit_ok;
  }
  stagemem::Diagnostics& d = line.diagnostics;
  const std::string format = stagemem_cli::json_or_checked_format(line, check_formats, d);
  const stagemem::AmountUnit unit = stagemem_cli::checked_units(line, d);
  require_device(line, d);
  if (!d.ok()) return stagemem_cli::refuse(d);
  const stagemem::Report report = stagemem::estimate(line.config);
  if (!report.diagnostics.ok()) return stagemem_cli::refuse(d, report.diagnostics);
  print_check(report, line, format, unit);
  const int verdict =
      stagemem::stages_not_fitting(report) > 0 ? exit_does_not_fit : stagemem_cli::exit_ok;
  return stagemem_cli::finish(verdict, report.diagnostics, d);  // warnings only here
}
