// vocabulary.h — the words of a report, spelled once: families, tags, allocation points, step
// phases and peak moments, layer ranges, byte amounts with their unit and ratios.
//
// Purpose: the CLI's text and CSV, the Markdown writer, the JSON writer, the app's panels and the
// browser's API all name the same things; each spelling lives here, so they cannot disagree.
// Units: bytes in binary units (GiB, MiB) unless a function says GB; every amount is labelled.
// Limitations: English only.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "memory/timeline.h"
#include "report/report.h"

namespace stagemem {

std::string_view family_name(Family family);  // "resident", "activation", "transient", "gap"
std::string_view tag_name(Tag tag);           // "DERIVED", "MEASURED", "NOT MEASURED", ...
std::string_view allocation_point_name(AllocationPoint point);  // "model init", ...

// "layer 3" or "layers 3-7" (inclusive).
std::string layers_text(std::int64_t first, std::int64_t last);

// "stage 3, backward of micro-batch 2 on chunk 1 (layers 36-43), MoE dispatch ..." (the chunk is
// named only when the rank has more than one; a recompute working set names its layers).
std::string moment_name(const StageReport& stage, const PeakMoment& moment);
std::string event_name(const StageReport& stage, const TimelineEvent& event);

}  // namespace stagemem
