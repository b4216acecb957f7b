// units.h — byte and count formatting shared by every front end and by term formulas.
//
// Purpose: one place that turns int64 byte counts into labelled text. GiB/MiB are binary
// (2^30, 2^20), GB is decimal (10^9); every string carries its unit.
// Limitations: English digit grouping only.
#pragma once

#include <cstdint>
#include <string>

namespace stagemem {

inline constexpr double bytes_per_gib = 1024.0 * 1024.0 * 1024.0;
inline constexpr double bytes_per_mib = 1024.0 * 1024.0;
inline constexpr double bytes_per_gb = 1e9;

std::string group_digits(std::int64_t value);                  // 8030261248 -> "8,030,261,248"
std::string format_gib(std::int64_t bytes, int decimals = 2);  // "14.96 GiB"
std::string format_mib(std::int64_t bytes, int decimals = 1);  // "224.0 MiB"
std::string format_gb(std::int64_t bytes, int decimals = 2);   // "2.58 GB"

}  // namespace stagemem
