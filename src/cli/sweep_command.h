// sweep_command.h — `stagemem sweep`: per-stage peaks and fits over a grid of configurations.
//
// Any scalar field flag may take a comma-separated list (`--seq 4096,8192,16384 --mbs 1,2,4
// --recompute none,full`); the grid is their cartesian product, each point applied over the rest
// of the configuration. The grid is the core's sweep engine's (plan/sweep.h: which fields can be
// swept, the model resolved once per distinct model, per-stage peaks only); this file only prints
// it. Points that are not valid configurations (e.g. a sequence not divisible by CP) are rows
// naming the error, not failures.
// Output: text, CSV or Markdown (--format) or JSON (--json).
// Exit codes: 0 the grid was computed, 2 bad input (the error names the flag).
#pragma once

#include <string_view>
#include <vector>

int run_sweep(const std::vector<std::string_view>& args);
