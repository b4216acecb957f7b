// report_labels.h — display strings and bar geometry of a report, built once when the report
// changes so that drawing a frame formats nothing and allocates nothing (bars, tooltips, tables
// and the cross-check panel reuse them).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "render/vocabulary.h"
#include "report/report.h"

struct TermLabels {
  std::string gib;           // "1.30 GiB"
  std::string exact_bytes;   // "1,397,817,344 B"
  std::uint32_t colour = 0;  // ImU32: its legend colour (grey when in no bar)
};

// One row of the chart's legend: a term that is part of some stage's bar.
struct LegendEntry {
  std::string name;
  stagemem::Family family = stagemem::Family::resident;
  std::uint32_t colour = 0;  // ImU32; the same on every stage, unique within the report
};

// One piece of a stage's stacked bar: a term alive at the stage's peak.
struct BarSegment {
  std::size_t term = 0;      // index into StageReport::terms
  std::int64_t bottom = 0;   // bytes below it in the stack
  std::int64_t top = 0;      // bottom + the term's bytes
  std::uint32_t colour = 0;  // ImU32, the term's legend colour
};

struct StageLabels {
  std::string title;              // "Stage 3: layers 12-15,36-39" (table heading, tooltip)
  std::string axis;               // "stage 3" (under the bar)
  std::string peak_gib;           // above the bar
  std::string peak_bytes;         // exact
  std::string peak_reserved;      // "66.72 GiB" (allocator replay) or "-" when not replayed
  std::string device_peak;        // reserved + measured device rows, or "not measured"
  std::string fit_basis;          // vocabulary.h fit_basis_text: what headroom is measured against
  std::string headroom;           // "12.40 GiB" or "-3.10 GiB (does not fit)" or "no device"
  std::string non_parameter;      // "62.10 GiB"
  std::string phase;              // binding_phase_name: "forward-backward" / "optimizer-step"
  std::string in_flight;          // "8" or "4, 3" (per VPP chunk)
  std::string flat_margin;        // "+4.20 GiB (over-provisions)" / "-1.10 GiB (under)" / ""
  std::vector<TermLabels> terms;  // parallel to StageReport::terms
  std::vector<std::size_t> terms_by_size;  // indices into terms, largest first
  std::vector<BarSegment> segments;        // bottom to top: resident, gaps, activations, transients
};

struct CrossCheckLabels {
  // vocabulary.h's words, as the CLI prints them:
  std::string title;     // measurement_title: "max-allocated at steady-state-peak, stage 1, rank 4"
  std::string measured;  // bytes_text: "151,502,187,725 B (141.10 GiB)"
  std::string derived;
  std::string gap;    // measured - derived (negative: "-1,024 B (-0.00 GiB)")
  std::string ratio;  // ratio_text: "x1.123" or "n/a (nothing derived is alive)"
  std::vector<std::string> explanations;  // render/cross_check_text.h
  std::vector<std::string> alive_terms;   // the names of the terms summed
  std::string line;  // cross_check_line: "measured 61.20 GiB vs derived 58.90 GiB, gap ..."
};

struct ReportLabels {
  std::vector<StageLabels> stages;             // parallel to Report::stages
  std::vector<CrossCheckLabels> cross_checks;  // parallel to Report::cross_checks
  std::string cross_check_verdict;             // cross_check_verdict: the one line read first
  std::int64_t verdict_check = -1;             // the cross-check it speaks of
  std::string total_parameters;                // "8,030,261,248"
  std::string device;                          // "mi355x: 288.00 GiB" or ""
  std::string flat_headroom;                   // "82.00 GiB" or ""
  std::string headroom_column;      // the summary's header: "headroom vs reserved" (fit_basis_name)
  std::int64_t scale_bytes = 1;     // the chart's full height: largest of peaks, device, flat line
  std::vector<LegendEntry> legend;  // by family (resident, gaps, activations, transients)
};

// Amounts in `unit` (the toolbar's GiB/GB toggle, AppState::display).
ReportLabels make_report_labels(const stagemem::Report& report,
                                stagemem::AmountUnit unit = stagemem::AmountUnit::gib);
