// report_command.h — `stagemem report` (the per-stage table as text, Markdown, CSV or JSON, each
// written by its core writer: render/report_text.h, report_markdown.h, report_csv.h,
// report_json.h) and
// `stagemem probe-check` (the optimizer-state probe measurements next to derived values).
#pragma once

#include <string_view>
#include <vector>

int run_report(const std::vector<std::string_view>& args);
int run_probe_check(const std::vector<std::string_view>& args);
