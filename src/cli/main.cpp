// stagemem — command-line front end of the estimator.
//
// Dispatches the commands; each lives in its own file (report_command, check_command,
// diff_command, scaling_command, sweep_command, params_command, plan_command, layout_command,
// url_command, snapshot_command); all read the configuration through one parser (config_sources.h)
// and share the steps of command_steps.h (help, output format, diagnostics and exit codes). Exit
// codes: 0 success, 1 `check` found a stage that does not fit, 2 bad input (every error names the
// field and the allowed range).
#include <array>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "check_command.h"
#include "command_steps.h"
#include "config/devices.h"
#include "diff_command.h"
#include "layout_command.h"
#include "model/presets.h"
#include "params_command.h"
#include "plan_command.h"
#include "render/vocabulary.h"
#include "report_command.h"
#include "scaling_command.h"
#include "snapshot_command.h"
#include "sweep_command.h"
#include "url_command.h"

namespace {

constexpr const char* usage_text =
    "usage: stagemem <command> [options]\n"
    "\n"
    "Per-stage device memory of pipeline-parallel training, term by term.\n"
    "\n"
    "commands:\n"
    "  report       print the per-stage memory table (`report --help` lists every option)\n"
    "  check        exit 0 when every stage fits the device, 1 when one does not (CI gate)\n"
    "  diff         two configurations side by side: per stage and term, B - A\n"
    "  scaling      measured peaks at 2+ sizes fitted as a + b x tokens, next to derived a, b\n"
    "  sweep        per-stage peaks and fits over lists, e.g. --seq 4096,8192 --mbs 1,2\n"
    "  params       exact parameter counts per component, stage and rank\n"
    "  plan         the fewest GPUs that fit and the best layouts per GPU count (0 fits, 1 not)\n"
    "  layout       advise an uneven --pipeline-model-parallel-layout for one configuration\n"
    "  url          `url encode` flags -> link fragment; `url decode LINK` -> JSON\n"
    "  presets      list the built-in models\n"
    "  devices      list the device presets with their usable bytes and sources\n"
    "  probe-check  the optimizer-state probe measurements next to derived values\n"
    "  snapshot     an allocator snapshot's bytes per term family next to the derived terms\n"
    "\n"
    "The configuration comes from --config FILE.json, --url LINK, --preset NAME, --hf-config FILE\n"
    "and one flag per field (Megatron-like: --tp --pp --vpp --cp --ep --etp --dp --seq --mbs "
    "--gbs\n"
    "--recompute ... --device NAME | --device-bytes N), applied left to right; `COMMAND --help`\n"
    "lists them all. Exit codes: 0 success, 1 `check` does not fit, 2 bad input.\n"
    "\n"
    "  --help       this text\n"
    "  --version    the version\n";

using Args = std::vector<std::string_view>;

// `devices` and `presets` take no options: --help, or an error for anything else.
int listing_help(std::string_view command, std::string_view argument) {
  const bool help = argument == "--help" || argument == "-h";
  std::fprintf(help ? stdout : stderr, "%susage: stagemem %s\n\n%s\n",
               help ? "" : "error: unexpected argument\n", std::string(command).c_str(),
               command == "devices"
                   ? "Lists the device presets (--device NAME) with their usable bytes and sources."
                   : "Lists the built-in models (--preset NAME).");
  return help ? stagemem_cli::exit_ok : stagemem_cli::exit_bad_input;
}

int run_devices(const Args& args) {
  if (!args.empty()) return listing_help("devices", args[0]);
  for (const auto& device : stagemem::device_presets()) {
    std::printf("%-10s %s  %s\n  source: %s\n", std::string(device.name).c_str(),
                stagemem::bytes_text(device.bytes).c_str(),
                std::string(device.display_name).c_str(), std::string(device.source).c_str());
  }
  return stagemem_cli::exit_ok;
}

int run_presets(const Args& args) {
  if (!args.empty()) return listing_help("presets", args[0]);
  for (std::string_view name : stagemem::preset_names())
    std::printf("%.*s\n", static_cast<int>(name.size()), name.data());
  return stagemem_cli::exit_ok;
}

struct Command {
  std::string_view name;
  int (*run)(const Args& args);  // the arguments after the command's name
};
constexpr std::array<Command, 13> commands = {{
    {"report", run_report},
    {"params", run_params},
    {"check", run_check},
    {"diff", run_diff},
    {"scaling", run_scaling},
    {"sweep", run_sweep},
    {"plan", run_plan},
    {"layout", run_layout},
    {"url", run_url},
    {"snapshot", run_snapshot},
    {"probe-check", run_probe_check},
    {"devices", run_devices},
    {"presets", run_presets},
}};

}  // namespace

int main(int argc, char** argv) {
  const Args args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    std::fputs(usage_text, args.empty() ? stderr : stdout);
    return args.empty() ? stagemem_cli::exit_bad_input : stagemem_cli::exit_ok;
  }
  if (args[0] == "--version") {
    std::printf("stagemem %s\n", STAGEMEM_VERSION);
    return stagemem_cli::exit_ok;
  }
  for (const Command& command : commands) {
    if (command.name == args[0]) return command.run({args.begin() + 1, args.end()});
  }
  std::fprintf(
      stderr,
      "error: command: unknown command '%s'; expected one of: report, check, diff, scaling, sweep, "
      "params, plan, layout, url, presets, devices, probe-check, snapshot\n",
      std::string(args[0]).c_str());
  return stagemem_cli::exit_bad_input;
}
