// layout_command.h — `stagemem layout`: the layout advisor (plan/layout_advisor.h) for the
// configuration's parallel layout.
//
// Prints the advised --pipeline-model-parallel-layout, the per-stage peaks against the even split
// and the gain, with the advised configuration's link and Megatron arguments.
// Output: text, Markdown (--format) or JSON (--json or --format json).
// Exit codes: 0 the advice was printed, 2 bad input.
#pragma once

#include <string_view>
#include <vector>

int run_layout(const std::vector<std::string_view>& args);
