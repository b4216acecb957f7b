// params_command.h — `stagemem params`: exact parameter counts per component, stage and rank.
//
// Reads a model from a Hugging Face config.json (--hf-config FILE) or a preset (--preset NAME),
// lays it out with the parallel flags and prints a table (or JSON with --json).
// Exit codes: 0 success, 2 bad input (every error names the field).
#pragma once

#include <string_view>
#include <vector>

int run_params(const std::vector<std::string_view>& args);
