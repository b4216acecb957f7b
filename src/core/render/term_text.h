// term_text.h — the text of a term (name, formula with its numbers, scaling, source), rendered
// on demand for whoever displays it (tooltip, table, CLI text, JSON).
//
// Purpose: the estimate computes numbers only; front ends call these when they show a term.
// Units: none (text). Limitations: a MEASURED term's source is the user's text in the
// configuration the report was computed from, so term_source needs that configuration.
#pragma once

#include <string>
#include <string_view>

#include "config/config.h"
#include "report/report.h"
#include "report/term_info.h"
#include "report/term_names.h"

namespace stagemem {

std::string term_formula(const Term& term);
std::string term_scaling(const Term& term);
// "" unless the term is MEASURED; `config` is the configuration the report was computed from.
std::string_view term_source(const Term& term, const Config& config);

}  // namespace stagemem
