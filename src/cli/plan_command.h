// plan_command.h — `stagemem plan`: the smallest GPU count a model trains on and the frontier of
// what fits at each GPU count (`stagemem layout`, the advisor for one layout: layout_command.h).
//
// plan: the configuration sources and flags fix the model, device, seq, gbs and everything not
// searched; `--gpus-per-node N`, `--min-gpus N`, `--max-gpus N` (or `--min-nodes`/`--max-nodes`)
// and the parallel flags bound the space: `--tp 1,2,4` allows those values, `--tp 2` fixes one,
// an absent flag searches plan.h's default range (only flags typed on the command line bound the
// search; values from --config/--url are replaced by it). Searched: --tp --pp --vpp --cp --ep
// --etp --dp --mbs --recompute --sp --optimizer.
// Output: text, CSV, Markdown (--format) or JSON (--json or --format json) with `minimum`
// {gpus, nodes, link, megatron_args, config, peak_bytes, headroom_bytes, ...}, `frontier`,
// `configurations_searched` and `configurations_per_second`.
// Exit codes: 0 something fits, 1 nothing in the space fits, 2 bad input.
#pragma once

#include <string_view>
#include <vector>

int run_plan(const std::vector<std::string_view>& args);
