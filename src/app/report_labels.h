// report_labels.h — display strings of a report, built once when the report changes so that
// drawing a frame formats nothing and allocates nothing (bars, tooltips and tables reuse them).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "report.h"

struct TermLabels {
  std::string gib;          // "1.30 GiB"
  std::string exact_bytes;  // "1,397,817,344 B"
};

struct StageLabels {
  std::string title;              // "Stage 3: layers 12-15" (table heading, tooltip first line)
  std::string axis;               // "stage 3" (under the bar)
  std::string peak_gib;           // above the bar
  std::string peak_bytes;         // exact
  std::vector<TermLabels> terms;  // parallel to StageReport::terms
  std::vector<std::size_t> terms_by_size;  // indices into terms, largest first
};

struct ReportLabels {
  std::vector<StageLabels> stages;  // parallel to Report::stages
  std::string total_parameters;     // "8,030,261,248"
};

ReportLabels make_report_labels(const stagemem::Report& report);
