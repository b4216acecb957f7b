// measurement_text.h — measured values and byte amounts as short text, for links and the CLI.
//
// Purpose: one spelling of a measured value, shared by the URL fragment (`measured=` / `gap=`
// keys), the CLI flags (`--measured`, `--gap`) and the JSON form (amounts may be written as text):
//
//   measurement:  [FIGURE:]POINT[/STAGE][/rRANK][/iN]=AMOUNT@SOURCE
//                 POINT: after-model-init | after-optimizer-init | after-first-step |
//                        steady-state-peak | term:NAME (a term as the report names it)
//                 STAGE: the pipeline rank, default 0
//                 FIGURE, RANK (readings from a training log; not with term:NAME): which
//                        allocator figure it is (allocated | max-allocated | reserved |
//                        max-reserved) and the global rank that printed it, e.g.
//                        max-allocated:steady-state-peak/1/r6=81835.08MiB@train.log line 9
//                 N (a training log's reading, not with term:NAME): the iterations run when it
//                   was printed (Megatron's "(after N iterations)"), e.g. .../1/r6/i10=...
//                 e.g. after-first-step/0=141.1GiB@torch.cuda.memory_allocated run 17
//   gap:          KIND[/STAGE]=AMOUNT@SOURCE    (no /STAGE: the reading applies to every stage)
//                 e.g. runtime-context=512MiB@nvidia-smi minus torch reserved
//   amount:       a plain decimal number, optionally followed by a unit (one space allowed):
//                 B, KiB, MiB, GiB, TiB (binary) or KB, MB, GB, TB (decimal); rounded to the
//                 nearest byte. No sign, no exponent, no NaN or infinity.
//
// The text is split at the first '=' and then at the first '@', so a SOURCE may hold any text
// ('=' and '@' included) while a term NAME may not contain '=' or '@'. A STAGE is read only when
// the text after the last '/' of the head is all digits, so term names may contain '/'; the
// formatter always writes a measurement's stage, which keeps such names unambiguous.
// Units: bytes (int64), at most max_config_bytes (2^50).
// Limitations: SOURCE is 1..200 characters of valid UTF-8 without control characters.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/diagnostics.h"
#include "config/config.h"

namespace stagemem {

// Bytes of an amount such as "141.1GiB", "7.1 GB" or "4096"; nullopt for anything else or for
// more than max_config_bytes.
std::optional<std::int64_t> parse_byte_amount(std::string_view text);
// The shortest amount text that parses back to exactly `bytes` ("141.1GiB", "25GB", "4096").
std::string byte_amount_text(std::int64_t bytes);
// What parse_byte_amount accepts, for error messages.
std::string allowed_amounts();

// On error: nullopt, and an error naming `field` (e.g. "url.measured[0]", "--gap") with the
// expected form.
std::optional<Measurement> parse_measurement_text(std::string_view text, Diagnostics& diagnostics,
                                                  const std::string& field);
std::optional<GapEntry> parse_gap_text(std::string_view text, Diagnostics& diagnostics,
                                       const std::string& field);
// parse_*_text(format_*_text(x)) == x for every x that validate() accepts.
std::string measurement_text(const Measurement& measurement);
std::string gap_text(const GapEntry& gap);

// True when `text` is valid UTF-8 without control characters (what any stored text may hold).
bool is_clean_text(std::string_view text);

}  // namespace stagemem
