// config_sources.h — the one command-line parser of a configuration, shared by every command.
//
// Sources apply left to right, each over what came before: `--config FILE.json`, `--url LINK`
// (a whole pasted link or its fragment), `--preset NAME`, `--hf-config FILE` (a Hugging Face
// config.json, becomes the custom model), `--production-layout` (the preset's production parallel
// layout and the optimizer that run uses, e.g. kimi-k3's distributed Muon; a later `--optimizer`
// overrides it), `--measured TEXT`, `--gap TEXT` (appended; measurement_text.h), and one flag per
// field of the field table (config_fields.h): `--KEY VALUE` with the table's key, '_' or '-' alike
// (`--recompute-modules core_attn,moe_act`). Boolean fields also take `--KEY` alone (true) and
// `--no-KEY` (false). Setting `stages`, `first_layers`, `last_layers` or `layout` also selects the
// matching `split`. Megatron-style aliases (`--tensor-model-parallel-size`, `--seq-length`,
// `--micro-batch-size`, `--recompute-granularity`, ...) map onto the same fields.
// With lists allowed (`sweep`, `plan`), a comma-separated value of a field the sweep engine can
// sweep (plan/sweep.h: sweepable) becomes a sweep axis.
// Every error names the flag as typed and the allowed values.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config/config_fields.h"
#include "plan/sweep.h"

namespace stagemem_cli {

// An option of one command beside the configuration flags.
struct CommandOption {
  std::string_view name;        // "--format"
  std::string_view value_name;  // "" for a switch, else e.g. "F"
  std::string_view help;
  bool repeatable = false;  // may be given more than once (`scaling --point`), each kept in order
};

struct ParseRules {
  std::span<const CommandOption> options{};
  bool allow_lists = false;       // sweep axes
  bool allow_positional = false;  // positional words are returned, not errors
  // The configuration the sources apply over (`diff`: B's flags over A's configuration), its
  // model counting as given; nullptr: the defaults.
  const stagemem::Config* start = nullptr;
};

struct CommandLine {
  stagemem::Config config;
  stagemem::Diagnostics diagnostics;
  std::vector<std::pair<std::string_view, std::string>> options;  // command options, in order
  std::vector<std::string> positional;
  // Sweep axes (plan/sweep.h), each named by its flag as typed (for messages and column titles).
  std::vector<stagemem::SweepAxis> axes;
  bool help = false;
  bool model_given = false;  // a source named the model (preset, custom, HF config, file, link)

  // The last value given for a command option; "" for a switch that was given.
  std::optional<std::string> option(std::string_view name) const;
  // Every value given for a repeatable command option, in order.
  std::vector<std::string> option_values(std::string_view name) const;
};

CommandLine parse_command_line(std::span<const std::string_view> args, const ParseRules& rules);

// "--tp N    tensor parallel size\n      an integer in [1, 1024]; default 1\n" for every field,
// then the sources and the aliases: the help text every command shares.
std::string configuration_flags_help();
std::string command_options_help(std::span<const CommandOption> options);

// The key a flag spells, as the field table and the aliases write it: without the leading "--",
// '-' as '_' ("--seq-length" -> "seq_length").
std::string flag_key(std::string_view flag);

// A file's whole contents, read with the bounded reader (src/io/bounded_read.h): at most `limit`
// bytes, the limit of the kind of input it is (e.g. stagemem::max_config_json_bytes). On failure
// (cannot open or read it, or more than `limit` bytes: reading stops at limit + 1) nullopt and an
// error naming `flag` with the path, and the limit in bytes and in a binary unit.
std::optional<std::string> read_text_file(const std::string& path, std::string_view flag,
                                          std::size_t limit, stagemem::Diagnostics& diagnostics);

}  // namespace stagemem_cli
