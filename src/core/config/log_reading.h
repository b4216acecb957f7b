// log_reading.h — one rank's Megatron memory report line as the measurements it becomes, and
// the compact link form of those measurements.
//
// Purpose: measured/memory_log.h turns a log line
//   [Rank 6] (after 2 iterations) memory (MB) | allocated: 53199.09 | max allocated: 84019.37 |
//       reserved: 84732.0 | max reserved: 84732.0
// into up to four measurements (allocated, max allocated, reserved, max reserved) that share one
// source text, "Megatron memory report, train.log line 9: [Rank 6] (after 2 iterations), TP 0
// CP 0 DP 1 EP 0". Written as four `measured=` keys a link repeats that ~100-character source
// four times. The compact form holds the numbers once:
//
//   reading=rRANK/sSTAGE/iN/lLINE/cTP.CP.DP.EP=
//           ALLOCATED,MAX_ALLOCATED[,RESERVED[,MAX_RESERVED]]@LOG   (one line, no break)
//   e.g. reading=r6/s1/i2/l9/c0.0.1.0=53199.09MiB,84019.37MiB,84732MiB,84732MiB@train.log
//
// RESERVED may be "-" (the line did not print it) when MAX_RESERVED follows. Amounts are
// measurement_text.h's (byte_amount_text: the shortest text that parses back to the same
// bytes). Decoding rebuilds exactly the measurements the reading made, sources included; the
// encoder uses the compact form only for a run of measurements that it rebuilds exactly
// (log_reading_at), and writes anything else (edited by hand, another label) as `measured=`.
// The text is split at the first '=' and then at the first '@': LOG may hold any text.
// Units: bytes (int64), at most max_config_bytes.
// Limitations: only the label Megatron's training_log prints, "(after N iterations)"; LOG is at
// most 40 printable ASCII characters (what memory_log_measurements keeps of a file name).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/diagnostics.h"
#include "config/config.h"

namespace stagemem {

inline constexpr std::size_t max_log_name_length = 40;

struct LogReading {
  std::string log;             // the log's name (printable ASCII, at most max_log_name_length)
  std::int64_t line = 1;       // 1-based line number in the log
  std::int64_t rank = 0;       // the global rank that printed it
  std::int64_t stage = 0;      // its pipeline stage
  std::int64_t iteration = 0;  // "(after N iterations)"
  std::array<std::int64_t, 4> coordinates{};  // the rank's TP, CP, DP and EP coordinates
  std::int64_t allocated = 0;
  std::int64_t max_allocated = 0;
  std::int64_t reserved = -1;      // -1: the line does not print it
  std::int64_t max_reserved = -1;  // -1: the line does not print it
  friend bool operator==(const LogReading&, const LogReading&) = default;
};

// "train.log line 9: [Rank 6] (after 2 iterations), TP 0 CP 0 DP 1 EP 0" for any label (the
// measured reader's lines may carry others); the measurements' source is "Megatron memory
// report, " + this.
std::string log_reading_where(std::string_view log, std::int64_t line, std::int64_t rank,
                              std::string_view label,
                              const std::array<std::int64_t, 4>& coordinates);
// "(after 2 iterations)": the label of Megatron's training_log report.
std::string iterations_label(std::int64_t iteration);

// The measurements of one reading, in the order allocated, max allocated, reserved, max
// reserved (those printed), each with the iteration, the rank and the shared source.
std::vector<Measurement> log_reading_measurements(const LogReading& reading);

// The compact text (without "reading="), and back; errors name `field` (e.g. "url.reading[0]").
std::string log_reading_text(const LogReading& reading);
std::optional<LogReading> parse_log_reading_text(std::string_view text, Diagnostics& diagnostics,
                                                 const std::string& field);

// The reading whose measurements are exactly measurements[at, at + count), count 2 to 4; none
// when the measurements there are not one reading's (a different source, an edited number).
struct LogReadingRun {
  LogReading reading;
  std::size_t count = 0;
};
std::optional<LogReadingRun> log_reading_at(const std::vector<Measurement>& measurements,
                                            std::size_t at);

}  // namespace stagemem
