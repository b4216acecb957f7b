// snapshot_command.h — `stagemem snapshot FILE [configuration flags] [--stage N] [--json]`:
// a PyTorch allocator snapshot (torch.cuda.memory._dump_snapshot()) attributed to stagemem's
// term families, next to the derived terms of one stage of the configuration. Without FILE, a
// --url link's snapshot= entries (snapshot_link.h: the summary the app's links carry) stand in.
// Exit codes: 0 success, 2 bad input (an unreadable file names the byte offset or the field).
#pragma once

#include <string_view>
#include <vector>

int run_snapshot(const std::vector<std::string_view>& args);
