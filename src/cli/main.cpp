// stagemem — command-line front end of the estimator.
//
// `stagemem report [--preset NAME] [--tp N] [--pp N] [--ep N] [--url LINK]` prints the
// per-stage table. Sources apply left to right, so a later flag overrides an earlier --url.
// Exit codes: 0 success, 2 bad input (every error names the field and the allowed range).
#include <charconv>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "params_command.h"
#include "presets.h"
#include "report.h"
#include "units.h"
#include "url_fragment.h"

namespace {

constexpr int exit_bad_input = 2;

constexpr const char* usage_text =
    "usage: stagemem <command> [options]\n"
    "\n"
    "Per-stage device memory of pipeline-parallel training, term by term.\n"
    "\n"
    "commands:\n"
    "  report     print the per-stage memory table\n"
    "  presets    list the built-in models\n"
    "  params     exact parameter counts per component, stage and rank (`params --help`)\n"
    "\n"
    "options of report (applied left to right; later ones override earlier ones):\n"
    "  --preset NAME   built-in model (see `stagemem presets`)\n"
    "  --url LINK      a whole stagemem link or its fragment, e.g. '#v=1&pp=8'\n"
    "  --tp N          tensor parallel size      (integer >= 1)\n"
    "  --pp N          pipeline parallel size    (integer in [1, layers])\n"
    "  --ep N          expert parallel size      (integer >= 1)\n"
    "  --etp N         expert tensor parallel    (integer >= 1)\n"
    "\n"
    "  --help          this text\n"
    "  --version       the version\n";

void print_errors(const stagemem::Diagnostics& d) {
  for (const auto& e : d.errors) std::fprintf(stderr, "error: %s: %s\n", e.field.c_str(), e.message.c_str());
  for (const auto& w : d.warnings) std::fprintf(stderr, "warning: %s: %s\n", w.field.c_str(), w.message.c_str());
}

bool parse_positive(std::string_view flag, std::string_view text, std::int64_t& out,
                    stagemem::Diagnostics& d) {
  std::int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size() || value < 1) {
    d.error(std::string(flag), "'" + std::string(text) + "' is not an integer >= 1");
    return false;
  }
  out = value;
  return true;
}

void print_report(const stagemem::Report& report) {
  using stagemem::format_gib;
  using stagemem::group_digits;
  std::printf("model %s: %s parameters\n\n", report.model.c_str(),
              group_digits(report.total_parameters).c_str());
  std::printf("%-6s %-10s %-18s %-24s %s\n", "stage", "layers", "params/rank", "term", "bytes/rank");
  for (const auto& stage : report.stages) {
    const std::string layers = std::to_string(stage.first_layer) + "-" +
                               std::to_string(stage.first_layer + stage.layer_count - 1);
    for (const auto& term : stage.terms) {
      std::printf("%-6lld %-10s %-18s %-24s %s (%s B)\n", static_cast<long long>(stage.index),
                  layers.c_str(), group_digits(stage.parameters_per_rank).c_str(), term.name.c_str(),
                  format_gib(term.bytes).c_str(), group_digits(term.bytes).c_str());
    }
  }
  if (report.binding_stage >= 0) {
    std::printf("\nlargest stage: %lld\n", static_cast<long long>(report.binding_stage));
  }
}

int run_report(const std::vector<std::string_view>& args) {
  stagemem::Config config;
  stagemem::Diagnostics d;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string_view flag = args[i];
    if (flag == "--help" || flag == "-h") {
      std::fputs(usage_text, stdout);
      return 0;
    }
    if (i + 1 >= args.size()) {
      d.error(std::string(flag), flag.starts_with("--") ? "needs a value" : "unknown argument");
      break;
    }
    const std::string_view value = args[++i];
    if (flag == "--preset") {
      config.model = std::string(value);
    } else if (flag == "--url") {
      auto decoded = stagemem::decode_fragment(value);
      for (auto& w : decoded.diagnostics.warnings) d.warnings.push_back(w);
      for (auto& e : decoded.diagnostics.errors) d.errors.push_back(e);
      config = decoded.config;
    } else if (flag == "--tp") {
      parse_positive(flag, value, config.parallel.tensor_parallel, d);
    } else if (flag == "--pp") {
      parse_positive(flag, value, config.parallel.pipeline_parallel, d);
    } else if (flag == "--ep") {
      parse_positive(flag, value, config.parallel.expert_parallel, d);
    } else if (flag == "--etp") {
      parse_positive(flag, value, config.parallel.expert_tensor_parallel, d);
    } else {
      d.error(std::string(flag), "unknown option; see `stagemem report --help`");
    }
  }
  if (!d.ok()) {
    print_errors(d);
    return exit_bad_input;
  }
  const stagemem::Report report = stagemem::estimate(config);
  print_errors(d);  // warnings only at this point
  if (!report.diagnostics.ok()) {
    print_errors(report.diagnostics);
    return exit_bad_input;
  }
  print_report(report);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string_view> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    std::fputs(usage_text, args.empty() ? stderr : stdout);
    return args.empty() ? exit_bad_input : 0;
  }
  if (args[0] == "--version") {
    std::printf("stagemem %s\n", STAGEMEM_VERSION);
    return 0;
  }
  if (args[0] == "report") return run_report({args.begin() + 1, args.end()});
  if (args[0] == "params") return run_params({args.begin() + 1, args.end()});
  if (args[0] == "presets") {
    for (std::string_view name : stagemem::preset_names()) std::printf("%.*s\n", static_cast<int>(name.size()), name.data());
    return 0;
  }
  std::fprintf(stderr, "error: command: unknown command '%s'; expected one of: report, presets\n",
               std::string(args[0]).c_str());
  return exit_bad_input;
}
