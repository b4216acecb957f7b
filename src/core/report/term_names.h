// term_names.h — a term's name: what it is called in every report, measurement and error.
//
// Purpose: a name identifies a term beyond a report: a measured reading of one term
// (`term:NAME`, config/measurement_text.h) is matched by it, and errors about a term quote it.
// So names live with the schema, below the estimate that matches them; the rest of a term's text
// (formula with its numbers, scaling, source) is the renderers' (render/term_text.h).
// Units: none (text). Limitations: English only; a name, once published in links, must keep
// its spelling (a link's `term:` reading refers to it).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "config/config.h"
#include "report/report.h"
#include "report/term_info.h"

namespace stagemem {

std::string term_name(const Term& term);
// A generic term's name from its catalogue entry (activation pieces before they become terms).
std::string term_name(const TermInfo& info, TermGroup group, std::int64_t name_value);
// Whether the term's name carries its name_value (a "{}" in the catalogue's name, e.g. the TE
// dummy buffers' "4 distinct weight shapes"): one term whose name differs between stages.
bool term_name_has_number(const Term& term);
// Such a name with `number_text` in the number's place ("4 or 5"): the name of the term over
// several stages (the chart's legend).
std::string term_name_with_number(const Term& term, std::string_view number_text);
// A named gap's label: "allocator fragmentation", "runtime context", ... (a gap row is named
// "gap: " + this).
std::string_view gap_label(GapKind kind);

}  // namespace stagemem
