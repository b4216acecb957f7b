// command_steps.h — the steps every command shares, so each `run_<command>` reads as its own
// steps (parse flags -> read inputs -> compute -> print) and a shared step is written once.
//
// A command parses its flags (config_sources.h), answers --help with print_command_help, reads
// its output format with checked_format and its model with require_model / resolved_model, and
// ends with refuse (bad input: the diagnostics, exit 2) or finish (the warnings, its own exit
// code). Output goes through print_json or table_text, the same writer for every command.
// Exit codes: 0 success, 1 a command's "no" (check: a stage does not fit; plan: nothing fits),
// 2 bad input. Diagnostics go to stderr, errors then warnings of each set in the order given.
// Limitations: refuse and finish print every set they are given; a command whose output carries
// its warnings (report --json, params --json) returns without them, and probe-check, which takes
// no configuration, reads its two flags itself.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

#include "base/diagnostics.h"
#include "config_sources.h"
#include "model/model.h"
#include "render/table.h"
#include "render/vocabulary.h"

namespace stagemem_cli {

inline constexpr int exit_ok = 0;
inline constexpr int exit_bad_input = 2;

void print_diagnostics(const stagemem::Diagnostics& diagnostics);  // to stderr

// The end of a command refused as bad input: every set of diagnostics, then exit code 2.
template <typename... Sets>
int refuse(const Sets&... diagnostics) {
  (print_diagnostics(diagnostics), ...);
  return exit_bad_input;
}

// The end of a command that ran: its warnings (the diagnostics hold no errors here), then
// `exit_code`.
template <typename... Sets>
int finish(int exit_code, const Sets&... diagnostics) {
  (print_diagnostics(diagnostics), ...);
  return exit_code;
}

// `--help`: `intro` (usage and what the command does, ending where the options begin), the
// command's options, every configuration flag (configuration_flags_help), then `outro`.
void print_command_help(std::string_view intro, std::span<const CommandOption> options,
                        std::string_view outro = {});

// --format's value, "text" when it is absent; an error naming --format unless it is one of
// `formats` (the error lists them in this order).
std::string checked_format(const CommandLine& line, std::span<const std::string_view> formats,
                           stagemem::Diagnostics& diagnostics);
// --units, which report, check and sweep take: the unit of every amount in their text and
// Markdown (vocabulary.h: AmountUnit); JSON and CSV stay in bytes.
inline constexpr CommandOption units_option = {
    "--units", "U",
    "gib | gb: amounts in text and Markdown in GiB (2^30 B, the default) or GB (10^9 B); JSON and "
    "CSV stay in bytes"};
// --units's value (GiB when absent); an error naming --units unless it is gib or gb.
stagemem::AmountUnit checked_units(const CommandLine& line, stagemem::Diagnostics& diagnostics);
// For a command whose --json means --format json (plan, layout): "json" with --json, whatever
// --format says, else checked_format.
std::string json_or_checked_format(const CommandLine& line,
                                   std::span<const std::string_view> formats,
                                   stagemem::Diagnostics& diagnostics);

// An error naming `model` when no source named one; `hint` says which sources can.
void require_model(CommandLine& line, std::string_view hint);
// The configuration's model, resolved once the command line has no error; nullopt when it has
// one or the model does not resolve (its errors are then in line.diagnostics).
std::optional<stagemem::Model> resolved_model(CommandLine& line);

// `value` as two-space-indented JSON and a line break; text that is not UTF-8 is replaced.
void print_json(const nlohmann::ordered_json& value);
// `table` in `format`: "csv" or "markdown" as those, anything else as aligned text.
std::string table_text(const stagemem::Table& table, std::string_view format);

}  // namespace stagemem_cli
