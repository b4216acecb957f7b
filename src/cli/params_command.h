// params_command.h — `stagemem params`: exact parameter counts per component, stage and rank.
//
// Reads the configuration with the flags every command shares (config_sources.h); the model must
// be named (--preset, --hf-config, --custom, --config or --url). Lays it out with the parallel
// flags and prints a table (or JSON with --json).
// Exit codes: 0 success, 2 bad input (every error names the field).
#pragma once

#include <string_view>
#include <vector>

int run_params(const std::vector<std::string_view>& args);
