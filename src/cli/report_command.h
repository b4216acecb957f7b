// report_command.h — `stagemem report` (the per-stage table as text, Markdown, CSV or JSON) and
// `stagemem probe-check` (the optimizer-state probe measurements next to derived values).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "report/report.h"

int run_report(const std::vector<std::string_view>& args);
int run_probe_check(const std::vector<std::string_view>& args);

// "0-11" or "0-5,48-53" (one range per virtual stage): the layers a stage holds.
std::string layers_text(const stagemem::StageReport& stage);
