// report_csv.h — the report as CSV for a spreadsheet: `stagemem report --format csv` (one row
// per term) and `stagemem report --timeline --format csv` (one row per event).
//
// Purpose: the columns of docs/report-schema.md's JSON, flattened; written by csv_table
// (table.h), so numbers stay numbers and every text cell is escaped (text_escaping.h).
// Units: bytes (integers). Limitations: a stage's layers are one text cell ("0-3,24-27").
#pragma once

#include <string>

#include "report/report.h"

namespace stagemem {

// stage,layers,term,family,tag,allocated_at,bytes,formula,stage_peak_bytes,
// stage_peak_reserved_bytes,stage_device_peak_bytes,fit_basis: the last four are the stage's
// (report JSON's peak_bytes, peak_reserved_bytes, device_peak_bytes, fit_basis) on each of its
// rows; an unknown figure is an empty cell.
std::string report_csv(const Report& report);
// stage,event,phase,micro_batch,chunk,resident_bytes,activation_bytes,transient_bytes,
// gap_bytes,live_bytes,transient,inside,peak (micro_batch and chunk empty for the optimizer
// step; peak 1 on the stage's peak event).
std::string timeline_csv(const Report& report);

}  // namespace stagemem
