#include "check_command.h"
#include "render/term_text.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "base/units.h"
#include "config_sources.h"
#include "estimate/estimate.h"
#include "render/vocabulary.h"
#include "report/report.h"
#include "report_command.h"

namespace {

using stagemem::format_gib;
using stagemem::group_digits;
using stagemem_cli::exit_bad_input;

constexpr int exit_does_not_fit = 1;
constexpr std::size_t largest_terms_shown = 5;

constexpr std::array<stagemem_cli::CommandOption, 2> check_options = {{
    {"--json", "",
     "JSON: fits, device, stages[] {index, peak_bytes, headroom_bytes, fits, "
     "largest_terms[]}"},
    {"--format", "F", "text | markdown (default text)"},
}};

// The terms that make up the stage's peak, largest first: resident and measured gap rows, and
// the terms of the binding phase (activations and the co-live transient, or the optimizer step).
std::vector<const stagemem::Term*> largest_terms(const stagemem::StageReport& stage) {
  std::vector<const stagemem::Term*> terms;
  for (const stagemem::Term& term : stage.terms) {
    const bool in_peak = term.family == stagemem::Family::activation ? !stage.optimizer_phase_binds
                                                                     : term.counts_in_peak;
    if (in_peak && term.bytes > 0) terms.push_back(&term);
  }
  std::stable_sort(
      terms.begin(), terms.end(),
      [](const stagemem::Term* a, const stagemem::Term* b) { return a->bytes > b->bytes; });
  if (terms.size() > largest_terms_shown) terms.resize(largest_terms_shown);
  return terms;
}

std::string gib_number(std::int64_t bytes) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.2f",
                static_cast<double>(bytes) / stagemem::bytes_per_gib);
  return buffer;
}

void print_json(const stagemem::Report& report, bool fits) {
  using json = nlohmann::ordered_json;
  json stages = json::array();
  for (const auto& s : report.stages) {
    json terms = json::array();
    for (const stagemem::Term* t : largest_terms(s)) {
      terms.push_back({{"name", stagemem::term_name(*t)},
                       {"family", std::string(stagemem::family_name(t->family))},
                       {"bytes", t->bytes}});
    }
    stages.push_back({{"index", s.index},
                      {"layers", layers_text(s)},
                      {"peak_bytes", s.peak_bytes},
                      {"headroom_bytes", s.headroom_bytes},
                      {"fits", s.headroom_bytes >= 0},
                      {"largest_terms", terms}});
  }
  const json out = {{"model", report.model},
                    {"fits", fits},
                    {"device", {{"name", report.device.name}, {"bytes", report.device.bytes}}},
                    {"binding_stage", report.binding_stage},
                    {"stages", stages}};
  std::printf("%s\n", out.dump(2, ' ', false, json::error_handler_t::replace).c_str());
}

void print_text(const stagemem::Report& report, bool markdown) {
  std::printf(markdown ? "**%s** on **%s** (%s B, %s per rank)\n\n"
                       : "model %s on %s: %s B (%s) per rank\n\n",
              report.model.c_str(), report.device.name.c_str(),
              group_digits(report.device.bytes).c_str(), format_gib(report.device.bytes).c_str());
  if (markdown) {
    std::printf("| stage | layers | peak GiB | headroom GiB | fits |\n|---:|---|---:|---:|---|\n");
  } else {
    std::printf("%-6s %-16s %14s %14s  %s\n", "stage", "layers", "peak", "headroom", "fits");
  }
  for (const auto& s : report.stages) {
    const bool fits = s.headroom_bytes >= 0;
    if (markdown) {
      std::printf("| %lld | %s | %s | %s | %s |\n", static_cast<long long>(s.index),
                  layers_text(s).c_str(), gib_number(s.peak_bytes).c_str(),
                  gib_number(s.headroom_bytes).c_str(), fits ? "yes" : "**NO**");
    } else {
      std::printf("%-6lld %-16s %14s %14s  %s\n", static_cast<long long>(s.index),
                  layers_text(s).c_str(), format_gib(s.peak_bytes).c_str(),
                  format_gib(s.headroom_bytes).c_str(), fits ? "yes" : "NO");
    }
  }
  for (const auto& s : report.stages) {
    if (s.headroom_bytes >= 0) continue;
    std::printf(markdown
                    ? "\n**Stage %lld does not fit**: peak %s (%s B) exceeds %s by %s (%s B).\n"
                      "Largest terms:\n\n"
                    : "\nstage %lld does not fit: peak %s (%s B) exceeds %s by %s (%s B)\n"
                      "  largest terms:\n",
                static_cast<long long>(s.index), format_gib(s.peak_bytes).c_str(),
                group_digits(s.peak_bytes).c_str(), report.device.name.c_str(),
                format_gib(-s.headroom_bytes).c_str(), group_digits(-s.headroom_bytes).c_str());
    for (const stagemem::Term* t : largest_terms(s)) {
      std::printf(markdown ? "1. %s: %s (%s B, %s)\n" : "    %-66s %12s  %s B  [%s]\n",
                  stagemem::term_name(*t).c_str(), format_gib(t->bytes).c_str(),
                  group_digits(t->bytes).c_str(),
                  std::string(stagemem::family_name(t->family)).c_str());
    }
  }
}

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
  std::int64_t failing = 0;
  for (const auto& s : report.stages) failing += s.headroom_bytes < 0 ? 1 : 0;
  if (line.option("--json")) {
    print_json(report, failing == 0);
  } else {
    print_text(report, format == "markdown");
    if (failing > 0) {
      std::printf("\ncheck FAILED: %lld of %zu stages do not fit %s\n",
                  static_cast<long long>(failing), report.stages.size(),
                  report.device.name.c_str());
    } else {
      const auto& binding =
          report.stages[static_cast<std::size_t>(std::max<std::int64_t>(0, report.binding_stage))];
      std::printf("\ncheck passed: every stage fits %s (least headroom: stage %lld, %s)\n",
                  report.device.name.c_str(), static_cast<long long>(binding.index),
                  format_gib(binding.headroom_bytes).c_str());
    }
  }
  stagemem_cli::print_diagnostics(report.diagnostics);  // warnings only here
  stagemem_cli::print_diagnostics(d);
  return failing > 0 ? exit_does_not_fit : 0;
}
