// cross_check_text.h — the sentences of a cross-check: the terms it summed and what could
// explain its gap, rendered from its numbers and term references (report/report.h CrossCheck).
//
// Purpose: the estimate keeps a cross-check as numbers; the CLI, the app, the JSON writer and the
// browser call these when they show one, so every front end says the same thing.
// Units: bytes as "N B (x.xx GiB)". Limitations: `stage` must be the stage the check was computed
// on (its term indices point into that stage's terms).
#pragma once

#include <string>
#include <vector>

#include "estimate/cross_check.h"
#include "render/vocabulary.h"
#include "report/report.h"

namespace stagemem {

// The names of the terms summed into the derived figure, in report order.
std::vector<std::string> cross_check_alive_names(const CrossCheck& check, const StageReport& stage);
// One sentence per explanation, most specific first; amounts in `unit` (vocabulary.h).
std::vector<std::string> cross_check_explanations(const CrossCheck& check, const StageReport& stage,
                                                  AmountUnit unit = AmountUnit::gib);
// The cross-checks' one-line verdict, read first: the peak reading that binds (a steady-state
// peak reading, max allocated before an unspecified figure before max reserved, the largest
// measured), e.g. "measured 61.2 GiB max allocated on stage 0 (rank 3, after 10 iterations) vs
// derived 58.9 GiB: derived is 3.8 % under (2 more readings below)". The percentage is the gap
// over the measured figure. "" when the report has no cross-checks.
std::string cross_check_verdict(const Report& report, AmountUnit unit = AmountUnit::gib);
// The index in report.cross_checks of the reading cross_check_verdict speaks of; -1 when none.
std::int64_t verdict_cross_check(const Report& report);
// One line per cross-check, the numbers before the details: "measured 61.20 GiB vs derived
// 58.90 GiB, gap +2.30 GiB, x1.039".
std::string cross_check_line(const CrossCheck& check);

// The stage a check belongs to in `report`, or nullptr when the report has no such stage.
const StageReport* cross_check_stage(const Report& report, const CrossCheck& check);

// The users' optimizer-state probe (estimate/cross_check.h): its derived formula, e.g.
// "2 (bf16 weight) + 4 (fp32 grad) + 8 (fp32 master + momentum) / 8", and its explanations.
std::string probe_formula(const ProbeCrossCheck& check);
std::vector<std::string> probe_explanations(const ProbeCrossCheck& check);

}  // namespace stagemem
