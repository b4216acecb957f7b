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
// The stage a check belongs to in `report`, or nullptr when the report has no such stage.
const StageReport* cross_check_stage(const Report& report, const CrossCheck& check);

// The users' optimizer-state probe (estimate/cross_check.h): its derived formula, e.g.
// "2 (bf16 weight) + 4 (fp32 grad) + 8 (fp32 master + momentum) / 8", and its explanations.
std::string probe_formula(const ProbeCrossCheck& check);
std::vector<std::string> probe_explanations(const ProbeCrossCheck& check);

}  // namespace stagemem
