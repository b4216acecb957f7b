#include "diff_command.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <optional>
#include <string>

#include "command_steps.h"
#include "config/low_precision_rules.h"
#include "config/url_fragment.h"
#include "estimate/compare.h"
#include "estimate/estimate.h"
#include "render/comparison.h"
#include "report/report.h"

namespace {

using stagemem::Diagnostics;
using Args = std::vector<std::string_view>;

constexpr std::array<stagemem_cli::CommandOption, 5> diff_options = {{
    {"--versus-bf16", "",
     "one configuration against itself computed in bf16 (A: no quantised recipe, bf16 "
     "weights; B: as given): what fp8 / MX / NVFP4 changed, term by term"},
    {"--json", "", "JSON (the same as --format json): docs/report-schema.md, \"The diff\""},
    {"--format", "F",
     "text | markdown | csv | json (default text); csv: one row per stage and term with "
     "a_bytes, b_bytes, delta_bytes, then each stage's peak, peak reserved and device peak"},
    {"--terms", "",
     "text and markdown: the changed terms of every stage, not only the binding stages"},
    stagemem_cli::units_option,
}};

constexpr std::array<std::string_view, 4> diff_formats = {"text", "markdown", "csv", "json"};

constexpr const char* diff_help =
    "usage: stagemem diff A B [options]            A, B: each a link or a JSON file\n"
    "       stagemem diff [A's flags] -- [B's flags]\n"
    "       stagemem diff LINK [options]           LINK carries both (the app's base= key)\n"
    "       stagemem diff --versus-bf16 [flags]    the configuration (B) against its bf16 twin "
    "(A)\n\n"
    "Two configurations side by side: what settings differ, each side's verdict, every stage's\n"
    "peak in A and B with the difference (B - A), and the terms whose bytes changed, largest\n"
    "first, terms matched by what they are (\"weights (bf16)\" and \"weights (fp8 + bf16)\" are "
    "one\n"
    "term).\n\n"
    "In the first form each of A and B is a whole configuration: a link or its fragment (it holds\n"
    "'#' or starts with 'v='), or a JSON file (`stagemem url decode` writes one); flags after "
    "them\n"
    "apply to both. In the second form A is its flags (a first word may be a link or a JSON "
    "file),\n"
    "and B's flags apply over A's configuration, so B need only say what changes:\n"
    "  stagemem diff --preset deepseek-v3 --tp 2 --sp --pp 16 --ep 64 --device h200 -- --tp 4\n"
    "unless B's first word is a link or a JSON file, which is a whole configuration again.\n"
    "In the third form the link is one the app wrote with a pinned baseline: A is the baseline\n"
    "(its base= key), B the link's own configuration; flags after it apply to both.\n\n"
    "output:\n";
constexpr const char* diff_help_end =
    "\nExit codes: 0 success, 2 bad input (the error names the side, the field and the allowed "
    "values).\n";

bool is_link(std::string_view word) {
  return word.find('#') != std::string_view::npos || word.starts_with("v=");
}

// A group's words with a leading whole configuration (a link or a JSON file) spelled as its
// source flag; `whole` says whether there was one.
std::vector<std::string_view> spelled(const Args& words, bool& whole) {
  whole = !words.empty() && !words[0].starts_with("-");
  if (!whole) return words;
  std::vector<std::string_view> out = {is_link(words[0]) ? "--url" : "--config", words[0]};
  out.insert(out.end(), words.begin() + 1, words.end());
  return out;
}

// One side's configuration, with its errors named by the side ("A: --tp: ...").
struct Side {
  stagemem_cli::CommandLine line;
  std::string name;  // "A" or "B"
};

Side parse_side(std::string name, const std::vector<std::string_view>& words,
                const stagemem::Config* start) {
  Side side{
      .line = stagemem_cli::parse_command_line(words, {.options = diff_options, .start = start}),
      .name = std::move(name)};
  for (auto& e : side.line.diagnostics.errors) e.field = side.name + ": " + e.field;
  for (auto& w : side.line.diagnostics.warnings) w.field = side.name + ": " + w.field;
  return side;
}

// --versus-bf16: B is the one configuration given, A its bf16 twin (low_precision_rules.h).
std::pair<Side, Side> parse_versus_bf16(const Args& args, Diagnostics& d) {
  bool whole = false;
  Side b = parse_side("B", spelled(args, whole), nullptr);
  Side a = b;
  a.name = "A";
  if (b.line.diagnostics.ok()) {
    if (!stagemem::uses_low_precision(b.line.config)) {
      d.error("--versus-bf16",
              "the configuration computes and stores nothing in low precision (give a recipe: "
              "--fp8-recipe tensor | mxfp8 | block | delayed | nvfp4, or Megatron's "
              "--fp8-format)");
    }
    a.line.config = stagemem::bf16_twin(b.line.config);
  }
  return {std::move(a), std::move(b)};
}

// A and B from the command line, in either form (diff_help).
std::pair<Side, Side> parse_sides(const Args& args, Diagnostics& d) {
  const auto versus = std::find(args.begin(), args.end(), std::string_view("--versus-bf16"));
  if (versus != args.end()) {
    Args rest(args.begin(), versus);
    rest.insert(rest.end(), versus + 1, args.end());
    if (std::find(rest.begin(), rest.end(), std::string_view("--")) != rest.end()) {
      d.error("--versus-bf16", "takes one configuration: A is its bf16 twin (no `--`)");
      return {};
    }
    return parse_versus_bf16(rest, d);
  }
  const auto separator = std::find(args.begin(), args.end(), std::string_view("--"));
  if (separator != args.end()) {
    bool a_whole = false;
    bool b_whole = false;
    const auto a_words = spelled(Args(args.begin(), separator), a_whole);
    const auto b_words = spelled(Args(separator + 1, args.end()), b_whole);
    Side a = parse_side("A", a_words, nullptr);
    const stagemem::Config* start = b_whole || !a.line.diagnostics.ok() ? nullptr : &a.line.config;
    Side b = parse_side("B", b_words, start);
    return {std::move(a), std::move(b)};
  }
  const bool one_link = !args.empty() && is_link(args[0]) && !args[0].starts_with("-") &&
                        (args.size() == 1 || args[1].starts_with("-"));
  const stagemem::DecodedBaseline baseline =
      one_link ? stagemem::decode_baseline(args[0]) : stagemem::DecodedBaseline{};
  if (!baseline.present &&
      (args.size() < 2 || args[0].starts_with("-") || args[1].starts_with("-"))) {
    d.error("diff",
            "give two configurations: `stagemem diff A B` (each a link or a JSON file), "
            "`stagemem diff [A's flags] -- [B's flags]` or one link that carries a baseline "
            "(base=); see `stagemem diff --help`");
    return {};
  }
  const Args shared(args.begin() + (baseline.present ? 1 : 2), args.end());
  auto words_of = [&](std::string_view whole) {
    Args words = {whole};
    words.insert(words.end(), shared.begin(), shared.end());
    bool unused = false;
    return spelled(words, unused);
  };
  if (baseline.present) {
    // A is the link's baseline, with the shared flags over it; B the link itself.
    for (const auto& e : baseline.diagnostics.errors) d.error("A: " + e.field, e.message);
    if (!baseline.config) return {};
    Side a = parse_side("A", shared, &*baseline.config);
    for (const auto& w : baseline.diagnostics.warnings)
      a.line.diagnostics.warn("A: " + w.field, w.message);
    return {std::move(a), parse_side("B", words_of(args[0]), nullptr)};
  }
  return {parse_side("A", words_of(args[0]), nullptr), parse_side("B", words_of(args[1]), nullptr)};
}

// A command option given on either side; an error when the two sides give it differently.
std::optional<std::string> shared_option(const Side& a, const Side& b, std::string_view name,
                                         Diagnostics& d) {
  const std::optional<std::string> x = a.line.option(name);
  const std::optional<std::string> y = b.line.option(name);
  if (x && y && *x != *y) {
    d.error(std::string(name), "given as '" + *x + "' for A and '" + *y + "' for B; give it once");
  }
  return y ? y : x;
}

std::string output_format(const Side& a, const Side& b, Diagnostics& d) {
  if (shared_option(a, b, "--json", d)) return "json";
  const std::optional<std::string> format = shared_option(a, b, "--format", d);
  if (!format) return "text";
  if (std::find(diff_formats.begin(), diff_formats.end(), *format) == diff_formats.end()) {
    d.error("--format", "'" + *format + "' is not one of: text, markdown, csv, json");
  }
  return *format;
}

std::string link_of(const stagemem::Config& config) {
  return "#" + stagemem::encode_fragment(config);
}

void print_comparison(const stagemem::ComparedReports& compared, const std::string& format,
                      bool all_stages) {
  std::string text;
  if (format == "json") {
    text =
        stagemem::comparison_json(compared, link_of(compared.a_config), link_of(compared.b_config));
  } else if (format == "csv") {
    text = stagemem::comparison_csv(compared);
  } else if (format == "markdown") {
    text = stagemem::comparison_markdown(compared, {.a_link = link_of(compared.a_config),
                                                    .b_link = link_of(compared.b_config),
                                                    .all_stages = all_stages});
  } else {
    text = stagemem::comparison_text(compared, {.all_stages = all_stages});
  }
  std::fputs(text.c_str(), stdout);
}

// Each report's errors and warnings named by its side.
Diagnostics named(const Diagnostics& diagnostics, const std::string& side) {
  Diagnostics out = diagnostics;
  for (auto& e : out.errors) e.field = side + ": " + e.field;
  for (auto& w : out.warnings) w.field = side + ": " + w.field;
  return out;
}

}  // namespace

int run_diff(const Args& args) {
  if (std::find(args.begin(), args.end(), std::string_view("--help")) != args.end() ||
      std::find(args.begin(), args.end(), std::string_view("-h")) != args.end()) {
    stagemem_cli::print_command_help(diff_help, diff_options, diff_help_end);
    return stagemem_cli::exit_ok;
  }
  Diagnostics d;
  auto [a, b] = parse_sides(args, d);
  if (!d.ok()) return stagemem_cli::refuse(d);
  const std::string format = output_format(a, b, d);
  // --units: given on either side (twice only alike), read as report's.
  shared_option(a, b, "--units", d);
  const stagemem::AmountUnit unit =
      stagemem_cli::checked_units(b.line.option("--units") ? b.line : a.line, d);
  if (!a.line.diagnostics.ok() || !b.line.diagnostics.ok() || !d.ok()) {
    return stagemem_cli::refuse(a.line.diagnostics, b.line.diagnostics, d);
  }
  const stagemem::Report report_a = stagemem::estimate(a.line.config);
  const stagemem::Report report_b = stagemem::estimate(b.line.config);
  const Diagnostics a_report = named(report_a.diagnostics, "A");
  const Diagnostics b_report = named(report_b.diagnostics, "B");
  if (!a_report.ok() || !b_report.ok()) {
    return stagemem_cli::refuse(a.line.diagnostics, b.line.diagnostics, a_report, b_report);
  }
  const stagemem::Comparison comparison = stagemem::compare_reports(report_a, report_b);
  if (!comparison.diagnostics.ok()) return stagemem_cli::refuse(comparison.diagnostics);
  const bool all_stages = shared_option(a, b, "--terms", d).has_value();
  print_comparison({.a_config = a.line.config,
                    .a = report_a,
                    .b_config = b.line.config,
                    .b = report_b,
                    .comparison = comparison,
                    .unit = unit},
                   format, all_stages);
  return stagemem_cli::finish(stagemem_cli::exit_ok, a.line.diagnostics, b.line.diagnostics,
                              a_report, b_report);
}
