// scaling_text.h — the scaling cross-check (estimate/scaling.h) as text, Markdown and JSON:
// `stagemem scaling` prints these and the app's Cross-checks tab draws the same cells.
//
// Purpose: one answer in three depths. A headline (measured a and b next to derived a and b,
// with the gap of each); the fit table (a and b: measured, derived, gap, gap %); the points table
// (per point the tokens, measured peak, derived peak, their gap, and with three or more points
// the fitted value and the residual); then the derived terms by scaling: the not-linear ones by
// name with their bytes at each point (never folded into a or b), and, on request, the constant
// and linear ones.
// Units: GiB (2^30 B) or GB (10^9 B) as asked, in bytes below 10 MiB (comparison.h's cells);
// slopes in MiB/KiB/B per token (MB/KB/B with GB), three significant decimals; JSON in bytes and
// bytes per token (the slopes as numbers with a fraction, labelled "_per_token"), documented in
// docs/report-schema.md, "The scaling cross-check".
// Limitations: term names are those of the first point whose stage has the term.
#pragma once

#include <string>
#include <string_view>

#include "estimate/scaling.h"
#include "render/table.h"
#include "render/vocabulary.h"

namespace stagemem {

// "2.613 MiB/token", "812.4 KiB/token", "96 B/token" (MB/KB with AmountUnit::gb).
std::string bytes_per_token_text(double bytes_per_token, AmountUnit unit = AmountUnit::gib);
// The same with a sign: "+0.061 MiB/token", "-12 B/token", "0 B/token".
std::string bytes_per_token_delta_text(double bytes_per_token, AmountUnit unit = AmountUnit::gib);
// "+3.7 %", "-0.2 %"; "-" when there is no percentage (derived 0).
std::string gap_percent_text(bool has_percent, double percent);
// "seq 4096": a point as the tables name it.
std::string scaling_point_name(const ScalingPoint& point);
// "tokens = seq / CP x mbs = 4096 / 1 x 1 at seq 4096" is too long for a cell; this is the one
// sentence that says what tokens are and which stage is compared.
std::string scaling_subject_text(const ScalingCheck& check);
// "measured a 40.12 GiB + 2.613 MiB/token vs derived 38.70 GiB + 2.550 MiB/token (stage 0):
// constant +1.42 GiB (+3.7 %), slope +0.063 MiB/token (+2.5 %)".
std::string scaling_headline(const ScalingCheck& check, AmountUnit unit = AmountUnit::gib);
// "not linear in tokens (in neither a nor b): attention scores ..." or "" when every term is
// constant or linear; then a note when the peak moment moves between points.
std::string scaling_notes(const ScalingCheck& check);

// Rows a and b: quantity, measured, derived, gap (measured - derived), gap %.
Table scaling_fit_table(const ScalingCheck& check, AmountUnit unit = AmountUnit::gib);
// One row per point: the varied field, tokens, measured, derived peak, gap, gap %, and with three
// or more points fitted (a + b x tokens) and residual.
Table scaling_points_table(const ScalingCheck& check, AmountUnit unit = AmountUnit::gib);
// The terms of one scaling: term, family, then the bytes at each point.
Table scaling_terms_table(const ScalingCheck& check, TermScaling scaling,
                          AmountUnit unit = AmountUnit::gib);
// "constant" / "linear" / "not linear".
std::string_view term_scaling_name(TermScaling scaling);

struct ScalingTextOptions {
  AmountUnit unit = AmountUnit::gib;
  bool all_terms = false;  // the constant and linear terms too, not only the not-linear ones
  std::string link{};      // Markdown: the link that reproduces the check ("" leaves it out)
};
std::string scaling_text(const ScalingCheck& check, const ScalingTextOptions& options);
std::string scaling_markdown(const ScalingCheck& check, const ScalingTextOptions& options);
// `kind` "scaling": the stage, the axis, the fit (measured/derived a and b, the gaps), the points
// (each with its text form, scaling_points.h, which parses back to the point) and every term with
// its scaling and bytes per point. Two-space indented, one trailing newline.
std::string scaling_json(const ScalingCheck& check, std::string_view link);

}  // namespace stagemem
