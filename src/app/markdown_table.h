// markdown_table.h — the per-stage report as a Markdown table for a wiki page ("Copy as
// Markdown").
//
// One row per stage: stage, layers, parameters per rank, one column per term (the union of the
// stages' term names, in the order they first appear; "0" where a stage lacks the term), the peak
// in GiB and exactly in bytes. GiB are binary (2^30 B). A caption line above the table names the
// model and the binding stage. An invalid report gives its errors as a list instead.
// Kept free of ImGui and the browser so it can move to the core when the CLI needs the same text.
#pragma once

#include <string>

#include "report.h"

std::string markdown_table(const stagemem::Report& report);
