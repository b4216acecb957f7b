// diff_command.h — `stagemem diff A B`: two configurations' per-stage memory side by side, per
// stage the peaks and their difference, per term the bytes of each and the difference (B - A),
// terms matched by identity (estimate/compare.h), written by render/comparison.h as text,
// Markdown, CSV or JSON.
#pragma once

#include <string_view>
#include <vector>

int run_diff(const std::vector<std::string_view>& args);
