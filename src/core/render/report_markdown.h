// report_markdown.h — the report as Markdown for a wiki page, and the one-line summaries that the
// app's first screen shows too. One writer: `Copy as Markdown` in the app and
// `stagemem report --format markdown` in the CLI both call report_markdown.
//
// Purpose: what a reader of a wiki page needs first: a summary (model, parallel layout, GPUs,
// device, verdict), a per-stage table (stage, layers, peak, headroom, fits, binding phase, the
// three largest terms) and the link that reproduces it; the full term table only on request.
// Every value written into the text goes through markdown_cell (text_escaping.h), so a model
// name or a measurement source can neither become HTML nor break a table.
// Units: GiB (2^30 B) with two decimals in the text; exact bytes in the term table.
// Limitations: the link is what the caller passes (the CLI has no site address: it passes the
// fragment, written as code).
#pragma once

#include <string>

#include "config/config.h"
#include "report/report.h"

namespace stagemem {

struct MarkdownOptions {
  // A whole link ("https://.../#v=1&...") is written as a Markdown link; anything else (a bare
  // fragment) as code. Empty: no link line.
  std::string link;
  bool terms = false;  // append every stage's full term table
};

// `config`: the configuration the report was computed from (for the layout and the training
// summary). A report with errors gives a list of the errors instead of tables.
std::string report_markdown(const Report& report, const Config& config,
                            const MarkdownOptions& options);

// "fits: stage 1 binds at 224.7 of 288.0 GiB" / "stage 0 is 71.6 GiB over (peak 359.6 of
// 288.0 GiB)" / "no device chosen: stage 1 peaks at 224.7 GiB"; "" for a report with errors.
std::string verdict_text(const Report& report);
// "TP 8 x PP 4 x CP 1 x DP 2 = 64 GPUs; EP 1, ETP 1, sequence parallel off"
std::string layout_text(const Config& config);
// The stage's three largest terms: "weights (bf16) 16.31 GiB; ..." (terms alive at its peak).
std::string largest_terms_text(const StageReport& stage, std::size_t count = 3);
// "forward/backward" or "optimizer step".
std::string_view binding_phase_name(const StageReport& stage);

}  // namespace stagemem
