// report_markdown.h — the report as Markdown for a wiki page: `stagemem report --format
// markdown`, the app's Copy as Markdown (Module.getMarkdownTable) and `stagemem check --format
// markdown` all call these.
//
// Purpose: what a reader of a wiki page needs first: a summary (model, parallel layout, GPUs,
// device; every setting that changes memory in words: sequence, micro-batch, global batch and
// micro-batches per step, schedule, recompute, precision, optimizer; every other field that
// differs from the defaults as its link key; the verdict), a per-stage table (stage, layers,
// peak, headroom, fits, binding phase, the three largest terms) and the link that reproduces it;
// the full term table only on request. Every table is a Table (table.h) and every value written
// into the text goes through markdown_cell (text_escaping.h), so a model name or a measurement
// source can neither become HTML nor break a table. The words are vocabulary.h's.
// Units: GiB (2^30 B), or GB (10^9 B) when asked, with two decimals in the text; exact bytes in
// the term table.
// Limitations: the link is what the caller passes (the CLI has no site address: it passes the
// fragment, written as code).
#pragma once

#include <string>
#include <string_view>

#include "config/config.h"
#include "render/vocabulary.h"
#include "report/report.h"

namespace stagemem {

struct MarkdownOptions {
  // A whole link ("https://.../#v=1&...") is written as a Markdown link; anything else (a bare
  // fragment) as code. Empty: no link line.
  std::string link;
  bool terms = false;                 // append every stage's full term table
  AmountUnit unit = AmountUnit::gib;  // the unit of every amount (vocabulary.h)
};

// `config`: the configuration the report was computed from (for the layout and the training
// summary). A report with errors gives a list of the errors instead of tables.
std::string report_markdown(const Report& report, const Config& config,
                            const MarkdownOptions& options);

// `stagemem check --format markdown`: the device, a table of every stage's peak and headroom
// (GiB) and whether it fits, each stage that does not fit with its largest terms, and the
// check's one-line result (check_result_text, report_text.h). `report` has a device.
std::string check_markdown(const Report& report, AmountUnit unit = AmountUnit::gib);

// The line that reproduces a configuration: a whole link ("https://...#v=1&...") as
// "[<link_text>](<link>)", a bare fragment as "<fragment_label> (stagemem link fragment): `#...`".
std::string markdown_link_line(const std::string& link,
                               std::string_view link_text = "Open this configuration in stagemem",
                               std::string_view fragment_label = "Configuration");

// "TP 8 x PP 4 x CP 1 x DP 2 = 64 GPUs; EP 1, ETP 1, sequence parallel off"
std::string layout_text(const Config& config);

}  // namespace stagemem
