// vocabulary.h — the words of a report, spelled once: families, tags, allocation points, step
// phases and the binding phase, layer ranges, byte amounts with their unit, ratios, fits,
// cross-check titles, the verdict and peak moments.
//
// Purpose: the CLI's text and CSV, the Markdown writer, the JSON writer, the app's panels and the
// browser's API all name the same things; each spelling lives here, so they cannot disagree.
// Where the report JSON (report_json.h, pinned byte for byte by the golden test) spells a thing,
// that spelling is the one every other output uses (e.g. the binding phase "forward-backward").
// The unit primitives (group_digits, format_gib/mib/gb: "14.96 GiB") are base/units.h's, since
// tests of the physics below this layer state worked numbers with them; this header includes it,
// so a front end includes this one header for every word.
// Units: bytes in binary units (GiB = 2^30 B, MiB) unless a function says GB or takes an
// AmountUnit; every amount written with its unit, except gib_number and amount_number (for a
// column whose header names the unit).
// Limitations: English only; GiB figures are rounded to the decimals asked for (exact bytes are
// in bytes_text).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/enum_names.h"
#include "base/units.h"
#include "config/config.h"
#include "memory/timeline.h"
#include "report/report.h"

namespace stagemem {

// Names. The JSON values of `family`, `tag`, `allocated_at`, `phase` and `binding_phase`.
std::string_view family_name(Family family);  // "resident", "activation", "transient", "gap"
std::string_view tag_name(Tag tag);           // "DERIVED", "MEASURED", "NOT MEASURED", ...
std::string_view allocation_point_name(AllocationPoint point);  // "model init", ...
std::string_view phase_name(StepPhase phase);  // "forward", "backward", "optimizer-step"
// The phase whose peak is the stage's: "forward-backward" or "optimizer-step".
std::string_view binding_phase_name(const StageReport& stage);

// Layers (0-based global indices). A range as a table cell: "3-7" ("5-5" for one layer: a cell
// is always first-last), "-" for none; in a sentence: "layers 3-7" or "layer 5" (`last`
// inclusive).
std::string layer_range_text(std::int64_t first, std::int64_t count);
std::string layers_text(std::int64_t first, std::int64_t last);
// A stage's layers, one range per virtual chunk joined by ",": "0-3,24-27", "-,24-31" (an empty
// chunk), "-" for a stage without layers.
std::string stage_layers_text(const StageReport& stage);

// The unit amounts are shown in: binary GiB (2^30 B; MiB, 2^20 B, for amounts under one GiB) by
// default everywhere, or decimal GB (10^9 B; MB, 10^6 B) on request: the app's GiB/GB toggle
// (its link key view.units=gb) and the CLI's --units gb. Machine-read outputs (JSON, CSV) stay in
// bytes whatever the unit. Every function below that takes a unit defaults to GiB, so an output
// that does not offer the choice reads as before.
enum class AmountUnit : std::uint8_t { gib, gb };
template <>
struct EnumNames<AmountUnit> {
  static constexpr std::array<std::string_view, 2> names = {"gib", "gb"};
};
static_assert(names_end_at<AmountUnit::gb>());
std::string_view unit_name(AmountUnit unit);        // "GiB" / "GB"
std::string_view small_unit_name(AmountUnit unit);  // "MiB" / "MB"
double unit_bytes(AmountUnit unit);                 // 2^30 / 10^9
// "14.96" (a column whose header names the unit) and "14.96 GiB" / "16.06 GB".
std::string amount_number(std::int64_t bytes, AmountUnit unit, int decimals = 2);
std::string amount_text(std::int64_t bytes, AmountUnit unit, int decimals = 2);
// Under one GiB (GB) in MiB (MB) with one decimal ("224.0 MiB"), else amount_text.
std::string compact_amount_text(std::int64_t bytes, AmountUnit unit);

// Amounts. "14.96 GiB" is format_gib (base/units.h).
std::string gib_number(std::int64_t bytes, int decimals = 2);  // "14.96" (the header says GiB)
// "1,397,817,344 B (1.30 GiB)" / "1,397,817,344 B (1.40 GB)".
std::string bytes_text(std::int64_t bytes, AmountUnit unit = AmountUnit::gib);
// "+4.20 GiB", "-1.10 GiB", "0.00 GiB".
std::string signed_gib_text(std::int64_t bytes, AmountUnit unit = AmountUnit::gib);

// Numbers one name takes on different stages, ascending and without repeats: "4", "4 or 5",
// "3, 4 or 5" (the legend's name of a term whose name carries a number, term_names.h).
std::string alternatives_text(std::vector<std::int64_t> values);

// "yes" when the term counts in the stage's peak (Term::counts_in_peak, the JSON's
// `counts_in_peak`: the terms so marked sum to the peak), else "no".
std::string_view in_peak_text(const Term& term);
// The terms that make up the stage's peak with more than 0 B, largest first (equal ones in
// report order), at most `count`.
std::vector<const Term*> largest_terms(const StageReport& stage, std::size_t count);
// "weights (bf16) 16.31 GiB; main gradient buffer (fp32) 8.46 GiB; ..." (largest_terms).
std::string largest_terms_text(const StageReport& stage, std::size_t count = 3,
                               AmountUnit unit = AmountUnit::gib);

// measured / derived of a cross-check: "x1.123", or "n/a (nothing derived is alive)".
std::string ratio_text(const CrossCheck& check);
// Does a stage fit: "yes" / "no", or "-" when no device was chosen.
std::string_view fits_text(const StageReport& stage, const Report& report);
// What a stage's headroom is measured against (StageReport::fit_basis), in words: "device
// (reserved + runtime context + communication buffers)", "reserved (allocator replay; ...)" or
// "peak allocated (...)".
std::string fit_basis_text(const StageReport& stage);
// The stage's figure the device check uses, short: "reserved", "device" or "allocated".
std::string_view fit_basis_name(const StageReport& stage);
// Where a measurement was read: "max-allocated at steady-state-peak, stage 1, rank 4",
// "after-first-step, stage 0", "term AttnRes internal, stage 3"; a log's reading with its
// iteration: "allocated after 10 iterations (between steps: after-first-step), stage 0, rank 0",
// "max-allocated over 10 iterations (compared at steady-state-peak), stage 1, rank 4".
std::string measurement_title(const Measurement& measurement);
// The report's one-line answer: "fits: stage 1 binds at 224.7 of 288.0 GiB" / "stage 0 is
// 71.6 GiB over (peak 359.6 of 288.0 GiB)" (+ "; 3 stages do not fit") / "no device chosen:
// stage 1 peaks at 224.7 GiB"; "" for a report with errors.
std::string verdict_text(const Report& report, AmountUnit unit = AmountUnit::gib);

// "stage 3, backward of micro-batch 2 on chunk 1 (layers 36-43), MoE dispatch ..." (the chunk is
// named only when the rank has more than one; a recompute working set names its layers).
std::string moment_name(const StageReport& stage, const PeakMoment& moment);
std::string event_name(const StageReport& stage, const TimelineEvent& event);
// When the replayed reserved bytes peak: "backward of micro-batch 0 on chunk 1" / "optimizer
// step" / "model and optimizer init" (the step is said by the caller).
std::string reserved_moment_text(const StageReport& stage);
// The replay against the device's limit (StageReport::device_limit_bytes): "" without one, else
// "replayed against 79.2 GiB the allocator may reserve: no cache flush", "... 3 cache flushes
// (num_alloc_retries) released 41 cached segments" or "... out of memory even after releasing
// every cached segment".
std::string device_limit_text(const StageReport& stage, AmountUnit unit = AmountUnit::gib);

// What makes the stage's peak, largest part first, then the moment (the Timeline tab's headline):
// "Peak 120.62 GiB = 45.31 GiB stored activations of 16 micro-batches in flight + 0.44 GiB
// transient MoE dispatch ... + 74.87 GiB resident; at stage 1, backward of micro-batch 3 ..."
// (the moment as moment_name says it, without the transient already named).
// With several chunks: "of 9 micro-batch chunks in flight (5 + 4 on 2 chunks)"; measured gaps
// are a part when non-zero; when the optimizer step binds: resident + optimizer-step transients
// (the stored activations are freed by then). The parts sum to peak_bytes.
std::string peak_headline(const StageReport& stage, AmountUnit unit = AmountUnit::gib);
// Every training setting that changes memory, compactly, in the link keys' words:
// "seq 4,096 | mbs 1, gbs 1,024 (256 micro-batches) | recompute none | adam (not distributed) |
// bf16 weights, fp32 grads | 1f1b". Recompute names its modules (selective) or method and layers
// (full); precision adds the expert weights when they differ, the fp8 recipe, and master weights
// or moments other than fp32; the schedule says interleaved with VPP > 1. The micro-batches per
// step (gbs / (mbs x DP)) are left out while gbs does not divide by mbs x DP. A stack given
// ends it: "| stack megatron-core=0.12,te=2.17".
std::string settings_text(const Config& config);
// The library releases and what they decide, for a report's header: "te=2.17 (the rest: current
// releases); before their release: te-cross-entropy-fp32-gradient (te 2.18); moe_unpermute
// probs-in-activation (stack), gemm_workspaces sm80 (explicit)". Empty when there is nothing to
// say: no stack given and every kernel option that is a version question follows it.
std::string stack_summary_text(const TrainingConfig& training);

}  // namespace stagemem
