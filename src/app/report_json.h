// report_json.h — the report as a JSON document ("Download JSON").
//
// A stand-in until the core provides the official JSON form (the CLI's): keep every use behind
// this one function so swapping it is a one-line change. Byte counts and parameter counts are
// exact JSON integers; names follow the browser API (camelCase). `fragment` is the link's
// configuration (url_fragment.h) so the file says what it was computed for.
#pragma once

#include <string>
#include <string_view>

#include "report.h"

std::string report_json(const stagemem::Report& report, std::string_view fragment);
