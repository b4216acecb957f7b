// report_text.h — the report as plain text for a terminal: `stagemem report` (term by term),
// `stagemem report --timeline` (pass by pass) and `stagemem check` (the CI gate's table).
//
// Purpose: the CLI prints these and nothing else, so the same words (vocabulary.h) and amounts
// ("N B (x.xx GiB)") appear in the text as in the JSON, the CSV and the Markdown.
// Units: GiB (2^30 B) with two decimals beside exact bytes, or GB (10^9 B) when asked
// (AmountUnit, vocabulary.h).
// Limitations: fixed-width columns sized for typical names (a longer term name pushes its row
// right); English only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "config/config.h"
#include "render/vocabulary.h"
#include "report/report.h"

namespace stagemem {

// The terms `stagemem check` lists for a stage that does not fit (text, Markdown and JSON).
inline constexpr std::size_t check_largest_terms = 5;

// Header (model, optimizer and dtypes, schedule, device), every term of every stage with its
// amount, family, tag, allocation point and formula, each stage's totals, the binding stage and
// the cross-checks with their explanations. `config`: the configuration of `report`.
std::string report_text(const Report& report, const Config& config,
                        AmountUnit unit = AmountUnit::gib);

// Every event of every stage's step (timeline.h) with its live bytes by family; the peak event
// is marked '*'.
std::string timeline_text(const Report& report, AmountUnit unit = AmountUnit::gib);

// The stages whose peak exceeds the device (0 when no device was chosen).
std::int64_t stages_not_fitting(const Report& report);
// "check passed: every stage fits h200 (least headroom: stage 0, 83.90 GiB)" or
// "check FAILED: 2 of 16 stages do not fit h200".
std::string check_result_text(const Report& report, AmountUnit unit = AmountUnit::gib);
// `stagemem check`: the device, each stage's layers, peak, headroom and fit, each stage that
// does not fit with its largest terms, and check_result_text. `report` has a device.
std::string check_text(const Report& report, AmountUnit unit = AmountUnit::gib);

}  // namespace stagemem
