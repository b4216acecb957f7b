// report_json.h — the one JSON form of a report, written by the CLI (`report --json`), the app's
// Download JSON and the web bindings alike (Module.getReport() is this document parsed, plus
// the app's state); `check --json` and `report --timeline --json` are documents of the same
// schema (all documented in docs/report-schema.md).
//
// Purpose: values in, text out. Per stage it says which phase binds, what is stored, the co-live
// transient, the peak moment, the optimizer step, micro-batches in flight per chunk and, per term,
// `counts_in_peak`: the terms marked so sum exactly to the stage's `peak_bytes`.
// Units: bytes (integers) everywhere. Limitations: integers are exact in JSON but a JavaScript
// reader sees doubles, exact only below 2^53 bytes (8 PiB).
#pragma once

#include <string>
#include <string_view>

#include "config/config.h"
#include "report/report.h"

namespace stagemem {

inline constexpr int report_schema_version = 1;

// `config` is the configuration `report` was computed from (MEASURED terms reference its
// source text); `link` is the configuration's link fragment ("" to leave it out); `warnings`
// are the input warnings of whoever read the configuration (CLI flags, a pasted link), listed
// after the report's own. Two-space indented, one trailing newline.
std::string report_json(const Report& report, const Config& config, std::string_view link,
                        const Diagnostics& input_warnings);

// `stagemem check --json` (docs/report-schema.md, "The check"): the check's verdict — `kind`
// "check", `fits`, the device, `binding_stage` and per stage its layers (as text), peak,
// headroom, fit and five largest terms — with the whole report_json document under `report`.
// `report` has a device.
std::string check_json(const Report& report, const Config& config, std::string_view link,
                       const Diagnostics& input_warnings);

// The step timeline of every stage (timeline.h): its events with live bytes by family and the
// peak moment (`stagemem report --timeline --json`; docs/report-schema.md, "The timeline").
std::string timeline_json(const Report& report, std::string_view link);

}  // namespace stagemem
