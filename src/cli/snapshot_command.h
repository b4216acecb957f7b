// snapshot_command.h — `stagemem snapshot FILE [configuration flags] [--stage N] [--json]`:
// a PyTorch allocator snapshot (torch.cuda.memory._dump_snapshot()) attributed to stagemem's
// term families, next to the derived terms of one stage of the configuration.
// Exit codes: 0 success, 2 bad input (an unreadable file names the byte offset or the field).
#pragma once

#include <string_view>
#include <vector>

int run_snapshot(const std::vector<std::string_view>& args);
