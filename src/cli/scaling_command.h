// scaling_command.h — `stagemem scaling`: measured peaks of one configuration at two or more
// sequence lengths or micro-batch sizes, fitted as a + b x tokens, next to the derived constant
// and slope of one stage (estimate/scaling.h), written by render/scaling_text.h as text,
// Markdown or JSON. A point's peak is an amount (`--point seq=4096:61.2GiB`) or a Megatron memory
// log whose max allocated of the stage it reads (`--point seq=4096:train.log`).
#pragma once

#include <string_view>
#include <vector>

int run_scaling(const std::vector<std::string_view>& args);
