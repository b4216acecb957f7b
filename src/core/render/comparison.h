// comparison.h — two configurations' reports side by side (estimate/compare.h) as text,
// Markdown, CSV and JSON: `stagemem diff A B` and the app's comparison with a pinned baseline
// (its Copy as Markdown) write it with these.
//
// Purpose: answer "what changed?" at three depths. First which settings differ (every field of
// the field table whose value differs, as "tp: 8 -> 4"), each side's verdict and the binding peak
// before and after; then every stage's peak in A and B with the difference; then the terms whose
// bytes changed, largest change first, for the binding stages (or every stage on request). CSV and
// JSON hold every term of every stage, unchanged ones too (docs/report-schema.md, "The diff").
// Units: GiB (2^30 B), or GB (10^9 B) when asked (ComparedReports::unit), with two decimals in
// text and Markdown, signed for differences ("+4.20 GiB"), in bytes below 10 MiB (so a change
// never reads 0.00); bytes (integers) in CSV and JSON. Differences are B - A.
// Limitations: a setting's text is cut to 80 characters in text and Markdown (an inline custom
// model is long; JSON keeps it whole); the reports must be those the comparison was made from.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"
#include "estimate/compare.h"
#include "render/table.h"
#include "render/vocabulary.h"
#include "report/report.h"

namespace stagemem {

// Both sides and their comparison, as compare_reports made it from `a` and `b`.
struct ComparedReports {
  const Config& a_config;
  const Report& a;
  const Config& b_config;
  const Report& b;
  const Comparison& comparison;
  AmountUnit unit = AmountUnit::gib;  // of the amounts in text and Markdown (vocabulary.h)
};

// One field of the field table (config_fields.h) whose value differs: its key and both texts.
struct SettingChange {
  std::string key;
  std::string a_text;
  std::string b_text;
};
std::vector<SettingChange> setting_changes(const Config& a, const Config& b);
// "tp 8 -> 4, sp 0 -> 1" (texts as the link writes them; `arrow` between them: Markdown writes
// " \u2192 "), "none" when nothing differs.
std::string setting_changes_text(const std::vector<SettingChange>& changes,
                                 std::string_view arrow = " -> ");

struct ComparisonTextOptions {
  bool all_stages = false;  // changed terms of every stage, not only the binding stages
};

// Plain text (`stagemem diff`): the two sides, what changed, the stage table, changed terms.
std::string comparison_text(const ComparedReports& compared, const ComparisonTextOptions& options);

struct ComparisonMarkdownOptions {
  // Each side's link (a whole link becomes a Markdown link, a fragment is written as code) and
  // the link of the comparison itself (the app's link that carries both); "" leaves one out.
  std::string a_link{};
  std::string b_link{};
  std::string comparison_link{};
  bool all_stages = false;
};
std::string comparison_markdown(const ComparedReports& compared,
                                const ComparisonMarkdownOptions& options);

// One row per stage and term: stage, term, family, a_bytes, b_bytes, delta_bytes, in_a, in_b.
std::string comparison_csv(const ComparedReports& compared);

// docs/report-schema.md, "The diff": `kind` "diff", each side's model, link, device, binding
// stage, binding peak and fit, the setting changes, and per stage `peak_delta_bytes` and per term
// `a_bytes`/`b_bytes`/`delta_bytes`. Two-space indented, one trailing newline.
std::string comparison_json(const ComparedReports& compared, std::string_view a_link,
                            std::string_view b_link);

// ---- The pieces the writers above are made of ----------------------------------------------
// For a front end that draws the comparison itself (the app's Compare tab), so that its cells are
// the ones `stagemem diff` prints and the two cannot disagree.

// "7.48 GiB"; under 10 MiB in bytes ("81,920 B"), so a changed term never reads 0.00 GiB.
std::string comparison_amount_text(std::int64_t bytes, AmountUnit unit = AmountUnit::gib);
// "-4.23 GiB", "+81,920 B", "0 B".
std::string comparison_delta_text(std::int64_t bytes, AmountUnit unit = AmountUnit::gib);
// "Llama-3.1-70B, TP 8 x PP 4 x DP 2 ...; sequence 8192, micro-batch 1, ...": one side.
std::string comparison_side_summary(const Report& report, const Config& config);
// "74.32 GiB -> 70.20 GiB (-4.12 GiB)": the binding peaks of A and B.
std::string binding_peaks_text(const Comparison& comparison, std::string_view arrow = " -> ",
                               AmountUnit unit = AmountUnit::gib);
// The stage table: stage (binding marks), layers A/B, peak A/B, difference, fits A/B; one row
// per entry of comparison.stages, in order.
Table comparison_stage_table(const ComparedReports& compared);
// "stage 0: 5 of 42 terms changed".
std::string changed_terms_heading(const StageComparison& stage);
// A stage's changed terms, largest difference first: term, family, A, B, difference.
Table changed_terms_table(const ComparedReports& compared, const StageComparison& stage,
                          std::string_view arrow = " -> ");

}  // namespace stagemem
