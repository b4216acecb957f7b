// report.h — the report schema: named terms per rank of each pipeline stage, as numbers.
//
// Purpose: what every front end shows, and nothing else: types only. estimate/estimate.h fills a
// Report; render/ turns it into text (JSON, Markdown, CSV, plain text), on demand.
// A term is one named piece of device memory, held as numbers: a pointer into the static term
// catalogue (report/term_info.h: name, scaling, formula template), its bytes, the numeric factors
// of its formula (report/formula.h: label ids and int64 values), its tag, allocation point and
// whether it is live at the peak. The estimate builds no text.
// Terms come in families: resident (lives across steps), activation (stored for backward, per
// micro-batch in flight), transient (alive only at its moment: MoE dispatch, AttnRes mix, logits,
// recompute, pipeline buffers, optimizer step) and gap (memory shapes cannot derive: zero unless
// measured).
// Peak of a stage = resident + measured gaps + the larger of two phases: forward/backward (the
// largest moment of the step timeline, memory/timeline.h: stored activations of the micro-batches
// alive then + the transients alive then) and the optimizer step (its transients). The terms with
// counts_in_peak set sum exactly to the peak; PeakMoment says when it happens.
// Units: bytes (int64) per rank, every product and sum overflow-checked: a report that would pass
// 2^63 - 1 bytes is an error naming the fields that drive it. Display units are the front end's.
// Limitations: the report keeps the peak moment only; memory/timeline.h rebuilds the whole step. A
// MEASURED term references its source text in the Config it was estimated from: keep that Config.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/enum_names.h"
#include "config/config.h"
#include "parallel/layout.h"
#include "report/formula.h"
#include "report/term_info.h"

namespace stagemem {

enum class Family : std::uint8_t { resident, activation, transient, gap };
// not_measured: a gap row nobody has measured yet; its bytes are 0 and it never feeds a total.
// documented: a library's documented constant (its source in Term::source), not a shape product
// and not a measurement of this run (GEMM workspaces, gaps.h).
enum class Tag : std::uint8_t { derived, measured, not_measured, documented };
enum class AllocationPoint : std::uint8_t {
  model_init,
  optimizer_init,
  first_step,
  forward,
  backward,
  optimizer_step,  // exists only while the optimizer steps
};

// One named piece of device memory: a compact value (no heap memory).
struct Term {
  // What the term is: a static catalogue entry (report/term_info.h), defined next to the physics
  // that produces the term (memory/*.cpp); its text is rendered from the entry and the numbers
  // below (report/term_names.h, render/term_text.h).
  const TermInfo* info = nullptr;  // never null in a report
  std::int64_t bytes = 0;
  // Stored activations: layer-micro-batches alive at the peak (the formula's last factor); 0 for
  // terms that are not summed over layers and micro-batches.
  std::int64_t copies = 0;
  // A number the name carries (AttnRes live temporaries), else 0.
  std::int64_t name_value = 0;
  Formula formula;  // the factors of `bytes` (per layer and micro-batch when copies > 0)
  // MEASURED terms: the user's source text, referenced in the configuration the report was
  // computed from (keep that configuration alive while its report's terms are rendered).
  std::string_view source{};
  TermGroup group = TermGroup::none;
  Family family = Family::resident;
  Tag tag = Tag::derived;
  AllocationPoint allocated_at = AllocationPoint::model_init;
  // False for a transient that is not co-live at the stage's peak (a smaller one of its phase,
  // or one of the phase that does not bind).
  bool counts_in_peak = true;
  // Transients of the forward/backward phase: where in the step they are alive.
  TransientPlace place = TransientPlace::layer;
  std::int16_t chunk = -1;  // TransientPlace::chunk: the virtual chunk (index on the rank)
};

enum class StepPhase : std::uint8_t { forward, backward, optimizer_step };

// The moment of one training step at which a stage peaks (timeline.h renders its name).
struct PeakMoment {
  StepPhase phase = StepPhase::forward;
  std::int64_t micro_batch = -1;  // -1 for the optimizer step
  std::int64_t chunk = -1;        // virtual chunk on the rank; -1 for the optimizer step
  std::int64_t transient = -1;    // index in `terms` of the transient alive then; -1: none
  std::int64_t enclosing = -1;    // index of the recompute working set it sits inside; -1: none
};

// One segment the caching allocator holds (allocator/caching_allocator.h): its reserved bytes and
// the bytes of its live blocks.
struct HeldSegment {
  std::int64_t address = 0;  // an offset in the replay's address space (order only)
  std::int64_t bytes = 0;
  std::int64_t allocated_bytes = 0;
  std::int64_t blocks = 0;
  bool small_pool = false;
};

// When the replayed reserved bytes peak: step 1 or 2, and the pass or the optimizer step.
struct ReservedPeakMoment {
  std::int64_t step = 1;
  StepPhase phase = StepPhase::forward;
  std::int64_t micro_batch = -1;
  std::int64_t chunk = -1;
};

// What a stage's capacity check compares with the device: the device figure (reserved + the
// runtime context and communication buffers, both measured), the reserved figure (+ whichever of
// those rows is measured), or, in a peaks-only estimate without the replay, the peak allocated.
enum class FitBasis : std::uint8_t { allocated, reserved, device };
template <>
struct EnumNames<FitBasis> {
  static constexpr std::array<std::string_view, 3> names = {"allocated", "reserved", "device"};
};
static_assert(names_end_at<FitBasis::device>());

struct LayerRange {
  std::int64_t first = 0;
  std::int64_t count = 0;
};

// The tensors the resident terms are allocated as, one by one, for the allocator replay
// (memory/parameter_tensors.h builds them): model init (the parameters, the DDP buffers),
// optimizer init (main parameters) and the first step (moments). Each entry allocates a tensor
// for a resident term or frees the tensor of an earlier entry of the same list.
struct ResidentAllocation {
  std::int64_t bytes = 0;   // the tensor's bytes (0 for a free)
  std::int32_t term = -1;   // index in StageReport::terms (the resident terms come first)
  std::int32_t frees = -1;  // >= 0: frees the tensor of that entry of the same list
};
struct ResidentAllocations {
  std::vector<ResidentAllocation> at_init;
  std::vector<ResidentAllocation> first_step;
  std::vector<std::int32_t> covered_terms;  // terms these lists allocate (others: one tensor)
  std::uint64_t hash = 0;                   // of both lists, for the replay's memo key
  // True when the stage alone holds more tensors than one estimate replays (the lists are then
  // not built: every resident term is one tensor, and the estimate warns).
  bool over_bound = false;
  bool empty() const { return covered_terms.empty(); }
};

struct StageReport {
  std::int64_t index = 0;
  std::int64_t first_layer = 0;
  std::int64_t layer_count = 0;
  std::vector<LayerRange> chunks;  // one per virtual stage on this rank (VPP), in order
  std::int64_t parameters_per_rank = 0;
  std::vector<Term> terms;
  std::int64_t resident_bytes = 0;    // derived resident terms
  std::int64_t gap_bytes = 0;         // measured gap rows
  std::int64_t activation_bytes = 0;  // stored activations, all micro-batches in flight
  // Transients alive at the forward/backward phase's peak moment (the moment's transient, plus the
  // recompute working set it sits inside, if any).
  std::int64_t largest_transient_bytes = 0;
  std::int64_t largest_transient = -1;  // the moment's transient's index in `terms`; -1: none
  std::int64_t optimizer_transient_bytes = 0;     // optimizer-step phase
  bool optimizer_phase_binds = false;             // the optimizer step, not forward/backward, peaks
  std::vector<std::int64_t> in_flight_per_chunk;  // micro-batches held at the peak, per chunk
  // Stored activation bytes of one micro-batch on each virtual chunk (the step timeline's steps).
  std::vector<std::int64_t> chunk_stored_bytes;
  // The tensors one micro-batch's forward allocates for each stored activation term on each
  // virtual chunk (the chunk's layers that keep the piece): activation_units[k x chunks + c] for
  // the stage's k-th Family::activation term in term order. The allocator replay's input.
  std::vector<std::int64_t> activation_units;
  // The resident terms as tensors (null: each resident term one tensor), shared with the
  // estimate cache.
  std::shared_ptr<const ResidentAllocations> resident_allocations;
  // The forward/backward phase's peak moment (timeline.h's peak_moment() gives the stage's,
  // the optimizer step when that binds).
  PeakMoment forward_backward_moment;
  std::int64_t peak_bytes = 0;  // resident + gaps + the larger phase (peak allocated)
  // The allocator replay (allocator/step_replay.h; full estimates only, 0 in a peaks estimate):
  // the largest reserved bytes of two steps, the replay's own peak allocated (block sizes, 512 B
  // rounded, unsplit remainders whole), when reserved peaked and the segments held then.
  bool reserved_replayed = false;  // false: not replayed (peaks estimate, or past its bound)
  std::int64_t peak_reserved_bytes = 0;
  std::int64_t replayed_allocated_bytes = 0;
  // The figures Megatron's memory log prints: max reserved after the first step, and reserved
  // (current) after the first and after the second step.
  std::int64_t first_step_peak_reserved_bytes = 0;
  std::int64_t reserved_after_first_step_bytes = 0;
  std::int64_t reserved_after_steps_bytes = 0;
  ReservedPeakMoment reserved_peak_moment;
  std::vector<HeldSegment> segments_at_reserved_peak;
  // Replayed against the device (a device chosen, no expandable segments): the bytes the
  // allocator could reserve (device bytes less the measured rows outside it; 0: no limit), how
  // often it released every cached segment and retried (PyTorch's num_alloc_retries, two steps),
  // the cached segments it released to make room, and whether an allocation failed even then
  // (then every replayed figure is the replay without the limit, what the steps need, and the
  // two counts are 0).
  std::int64_t device_limit_bytes = 0;
  std::int64_t alloc_retries = 0;
  std::int64_t segments_released_for_room = 0;
  bool out_of_memory = false;
  // Cached segments garbage_collection_threshold released (under a per-process memory fraction;
  // device_limit_bytes is then at most the fraction's allowed_memory_maximum), two steps.
  std::int64_t segments_released_by_gc = 0;
  // MEASURED rows outside the allocator (runtime context, communication buffers): the device
  // figure is reserved + these; device_peak_bytes is -1 until both rows are measured.
  std::int64_t outside_allocator_bytes = 0;
  std::int64_t device_peak_bytes = -1;
  FitBasis fit_basis = FitBasis::allocated;
  std::int64_t fit_bytes = 0;       // the figure headroom is measured against (fit_basis)
  std::int64_t headroom_bytes = 0;  // device bytes - fit_bytes; 0 when no device is chosen
  // peak - resident - gaps: what a flat "non-parameter headroom" constant stands in for.
  std::int64_t non_parameter_bytes = 0;
  // flat constant - non_parameter_bytes (< 0: the flat constant under-provisions this stage);
  // 0 when no flat constant is entered.
  std::int64_t flat_headroom_margin = 0;
};

// What could explain a cross-check's gap, most specific first; each a number or a term reference
// that render/cross_check_text.h turns into a sentence.
enum class GapExplanation : std::uint8_t {
  reserved_figure,         // a reserved figure also holds the allocator's cached free blocks
  allocator_replay,        // derived is the allocator replay's reserved figure (step_replay.h)
  max_allocated_figure,    // max allocated is the peak since the process started
  not_alive_yet,           // CrossCheck::later_terms (later_bytes) are allocated after the point
  term_formula_only,       // a term reading: the formula names only its tensors
  measured_gaps,           // MEASURED gap rows alive at the point (measured_gap_bytes)
  optimizer_step_binds,    // the derived sum is the optimizer step's
  forward_backward_binds,  // the derived sum is forward/backward's (with its co-live transient)
  unmeasured_gaps,         // CrossCheck::unmeasured_gaps: gap rows nobody measured
  short_lived_tensors,     // a peak reading holds short-lived tensors no term names
  derived_exceeds,         // derived > measured
  first_iteration_only,    // a max figure printed after iteration 1: the first step's peak
};

// A measured number next to the derived terms alive at its measurement point, as numbers and
// references into the stage's terms (Measurement::stage); its text is rendered on demand.
struct CrossCheck {
  Measurement measurement;
  std::int64_t derived_bytes = 0;  // sum of the derived terms alive at the point
  // A reserved figure of a replayed stage: derived_bytes is the replay's figure, not a term sum
  // (alive_terms then lists nothing).
  bool against_replay = false;
  std::int64_t gap_bytes = 0;                 // measured - derived
  bool has_ratio = false;                     // false when derived is 0
  double ratio = 0.0;                         // measured / derived
  std::vector<std::int32_t> alive_terms;      // the terms summed (indices into the stage's terms)
  std::vector<GapExplanation> explanations;   // most specific first
  std::vector<std::int32_t> later_terms;      // not_alive_yet: resident terms allocated later
  std::int64_t later_bytes = 0;               // their bytes
  std::int64_t measured_gap_bytes = 0;        // measured_gaps: MEASURED gap rows alive then
  std::vector<std::int32_t> unmeasured_gaps;  // unmeasured_gaps: gap rows not measured
};

struct DeviceCapacity {
  std::string name;  // preset name or "custom" (short: no heap memory)
  std::int64_t bytes = 0;
  std::string_view source;  // static text
};

struct Report {
  std::string model;
  std::int64_t total_parameters = 0;
  std::int64_t data_parallel = 1;
  std::int64_t expert_data_parallel = 1;
  std::int64_t micro_batches = 0;        // M per step
  std::int64_t flat_headroom_bytes = 0;  // the flat constant compared against, 0: none
  std::vector<StageReport> stages;
  // The schedule whose order of passes timeline.h walks.
  PipelineSchedule schedule = PipelineSchedule::one_f_one_b;
  DeviceCapacity device;  // bytes 0: no device chosen
  // The stage with the least headroom against the device (the largest peak; every rank has the
  // same device); -1 when invalid.
  std::int64_t binding_stage = -1;
  std::vector<CrossCheck> cross_checks;
  Diagnostics diagnostics;  // errors mean `stages` is empty
};

}  // namespace stagemem
