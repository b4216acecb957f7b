#include "scaling_command.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <optional>
#include <string>

#include "command_steps.h"
#include "config/measurement_text.h"
#include "config/scaling_points.h"
#include "config/url_fragment.h"
#include "estimate/scaling.h"
#include "measured/memory_log.h"
#include "render/scaling_text.h"

namespace {

using stagemem::Diagnostics;
using Args = std::vector<std::string_view>;

constexpr std::array<stagemem_cli::CommandOption, 6> scaling_options = {{
    {"--point", "AXIS=VALUE:PEAK",
     "a measured point, repeatable, at least 2 (AXIS seq or mbs; PEAK an amount with an optional "
     "@source, or a Megatron memory log whose largest max allocated on the stage is read: "
     "seq=4096:61.2GiB, seq=4096:run4k.log; ./4096 for a file named like an amount); replaces a "
     "link's scaling= points",
     true},
    {"--stage", "N",
     "the pipeline stage the peaks were measured on (default: the link's scaling_stage=, else the "
     "stage that binds at the point with the most tokens)"},
    {"--format", "F", "text | markdown | json (default text)"},
    {"--json", "",
     "JSON (the same as --format json): docs/report-schema.md, \"The scaling "
     "cross-check\""},
    {"--terms", "",
     "text and markdown: the constant and linear terms too, not only the "
     "not-linear ones"},
    stagemem_cli::units_option,
}};

constexpr std::array<std::string_view, 3> scaling_formats = {"text", "markdown", "json"};

constexpr const char* scaling_help =
    "usage: stagemem scaling [LINK] [configuration flags] --point AXIS=VALUE:PEAK "
    "--point ... [options]\n\n"
    "The scaling cross-check: measured peaks of one configuration at two or more sequence\n"
    "lengths (seq) or micro-batch sizes (mbs), fitted as measured = a + b x tokens (tokens = seq\n"
    "/ CP x mbs, one micro-batch on one rank; least squares, an exact line through two points),\n"
    "next to the derived a (the stage's terms at its peak that are the same at every point:\n"
    "resident state and token-independent transients) and the derived b (the terms exactly\n"
    "proportional to tokens), with the gap of each and each point's measured and derived peak.\n"
    "A term that is neither (e.g. materialized attention scores, S^2) is named as not linear and\n"
    "kept out of both. Measured values never feed the model.\n"
    "  stagemem scaling --preset llama-3.1-8b --pp 4 --point seq=4096:30.1GiB "
    "--point seq=8192:38.5GiB\n"
    "  stagemem scaling --preset llama-3.1-8b --pp 4 --point seq=4096:run4k.log "
    "--point seq=8192:run8k.log\n"
    "A LINK (or --url LINK) may carry the points as the app writes them (scaling= keys).\n\n"
    "output:\n";
constexpr const char* scaling_help_end =
    "\nExit codes: 0 success, 2 bad input (the error names the point, the field and the allowed "
    "values).\n";

bool is_link(std::string_view word) {
  return !word.starts_with("-") &&
         (word.find('#') != std::string_view::npos || word.starts_with("v="));
}

// A leading link spelled as --url, so the configuration parser reads it.
Args spelled(const Args& args) {
  if (args.empty() || !is_link(args[0])) return args;
  Args out = {"--url", args[0]};
  out.insert(out.end(), args.begin() + 1, args.end());
  return out;
}

// The scaling= points and scaling_stage= of the last --url that carries points.
stagemem::ScalingPoints link_points(const Args& args, Diagnostics& d) {
  stagemem::ScalingPoints out;
  for (std::size_t i = 0; i + 1 < args.size(); ++i) {
    if (args[i] != "--url") continue;
    stagemem::DecodedScalingLink decoded = stagemem::decode_scaling_link(args[i + 1]);
    for (const auto& e : decoded.diagnostics.errors) d.error(e.field, e.message);
    for (const auto& w : decoded.diagnostics.warnings) d.warn(w.field, w.message);
    if (decoded.scaling) out = std::move(*decoded.scaling);
  }
  return out;
}

// A --point whose peak is a memory log: its index among the points and the file's path.
struct LogPoint {
  std::size_t index = 0;
  std::string path;
  std::string field;
};

// The --point values as points; those naming a file are left with 0 bytes and listed in `logs`.
std::vector<stagemem::ScalingPoint> flag_points(const std::vector<std::string>& texts,
                                                std::vector<LogPoint>& logs, Diagnostics& d) {
  std::vector<stagemem::ScalingPoint> points;
  for (std::size_t i = 0; i < texts.size(); ++i) {
    const std::string field = "--point[" + std::to_string(i) + "]";
    std::string_view rest;
    const auto head = stagemem::parse_scaling_point_head(texts[i], d, field, &rest);
    if (!head) continue;
    if (stagemem::parse_byte_amount(rest.substr(0, rest.find('@')))) {
      if (auto point = stagemem::parse_scaling_point_text(texts[i], d, field))
        points.push_back(std::move(*point));
      continue;
    }
    if (rest.empty()) {
      d.error(field + ".bytes", "expected a measured peak (" + stagemem::allowed_amounts() +
                                    ") or a memory log file after ':'");
      continue;
    }
    logs.push_back({.index = points.size(), .path = std::string(rest), .field = field});
    points.push_back({.axis = head->axis, .value = head->value});
  }
  return points;
}

// The largest max allocated figure of `stage`'s ranks in the log, as the point's peak.
void read_log_point(const LogPoint& log, const stagemem::Config& config, std::int64_t stage,
                    stagemem::ScalingPoint& point, Diagnostics& d) {
  const auto text = stagemem_cli::read_text_file(log.path, log.field, stagemem::max_log_bytes, d);
  if (!text) return;
  const std::string name = log.path.substr(log.path.rfind('/') + 1);
  const auto readings = stagemem::parse_memory_log(*text, log.field, d);
  if (!d.ok()) return;
  const auto measurements = stagemem::memory_log_measurements(
      readings, config.parallel, name, log.field, stagemem::max_measurements, d);
  const stagemem::Measurement* best = nullptr;
  for (const auto& m : measurements) {
    if (m.figure == stagemem::MemoryFigure::max_allocated && m.stage == stage &&
        (best == nullptr || m.bytes > best->bytes)) {
      best = &m;
    }
  }
  if (best == nullptr) {
    d.error(log.field, "'" + name.substr(0, 60) +
                           "' has no Megatron memory report line (\"[Rank r] (after N "
                           "iterations) memory (MB) | ... | max allocated: ...\") of a rank on "
                           "stage " +
                           std::to_string(stage));
    return;
  }
  point.measured_bytes = best->bytes;
  point.source = ("max allocated, " + best->source).substr(0, stagemem::max_source_length);
}

std::optional<std::int64_t> stage_option(const stagemem_cli::CommandLine& line, Diagnostics& d) {
  const std::optional<std::string> text = line.option("--stage");
  if (!text) return std::nullopt;
  const bool digits =
      !text->empty() && text->size() <= 7 &&
      std::all_of(text->begin(), text->end(), [](char c) { return c >= '0' && c <= '9'; });
  if (!digits) {
    d.error("--stage", "'" + text->substr(0, 40) + "' is not a pipeline stage (0, 1, ...)");
    return std::nullopt;
  }
  return std::stoll(*text);
}

}  // namespace

int run_scaling(const Args& raw_args) {
  const Args args = spelled(raw_args);
  stagemem_cli::CommandLine line =
      stagemem_cli::parse_command_line(args, {.options = scaling_options});
  if (line.help) {
    stagemem_cli::print_command_help(scaling_help, scaling_options, scaling_help_end);
    return stagemem_cli::exit_ok;
  }
  Diagnostics& d = line.diagnostics;
  std::string format =
      line.option("--json") ? "json" : stagemem_cli::checked_format(line, scaling_formats, d);
  const stagemem::AmountUnit unit = stagemem_cli::checked_units(line, d);
  stagemem::ScalingPoints scaling = link_points(args, d);
  std::vector<LogPoint> logs;
  if (const auto texts = line.option_values("--point"); !texts.empty())
    scaling.points = flag_points(texts, logs, d);
  if (const auto stage = stage_option(line, d)) scaling.stage = *stage;
  if (!d.ok()) return stagemem_cli::refuse(d);
  if (!logs.empty()) {
    // The stage decides which ranks' readings a log gives: known before the bytes are.
    const std::int64_t stage = stagemem::scaling_stage(line.config, scaling, d);
    if (!d.ok()) return stagemem_cli::refuse(d);
    for (const LogPoint& log : logs)
      read_log_point(log, line.config, stage, scaling.points[log.index], d);
    if (!d.ok()) return stagemem_cli::refuse(d);
  }
  const stagemem::ScalingCheck check = stagemem::scaling_cross_check(line.config, scaling);
  if (!check.diagnostics.ok()) return stagemem_cli::refuse(d, check.diagnostics);
  const std::string link =
      "#" + stagemem::encode_fragment(line.config) + stagemem::scaling_fragment(scaling);
  const bool all_terms = line.option("--terms").has_value();
  std::string text;
  if (format == "json") {
    text = stagemem::scaling_json(check, link);
  } else if (format == "markdown") {
    text = stagemem::scaling_markdown(check, {.unit = unit, .all_terms = all_terms, .link = link});
  } else {
    text = stagemem::scaling_text(check, {.unit = unit, .all_terms = all_terms});
  }
  std::fputs(text.c_str(), stdout);
  return stagemem_cli::finish(stagemem_cli::exit_ok, check.diagnostics, d);
}
