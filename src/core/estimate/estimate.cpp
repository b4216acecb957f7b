// estimate.cpp — the estimate as the physics pipeline. estimate_into runs, per configuration:
// the layout (its validation, stage plan and per-rank parameters), then per stage the resident
// terms, the activation terms with the step timeline's peak moment, the optimizer step's
// transients, the library workspaces and gaps, and the stage's peak and headroom; then the
// allocator replay of every stage (replay_stages.h: in one call here, in pieces for
// SteppedEstimate) and the headroom against its figures; then the cross-checks of the
// measurements. Each step takes the terms its physics module builds
// (memory/); what is reused between estimates is looked up in EstimateCache through
// estimate_cache.h, whose bookkeeping lives in estimate_cache.cpp.
#include <algorithm>
#include <cstddef>
#include <limits>
#include <utility>

#include "estimate/estimate.h"

#include "allocator/step_replay.h"
#include "config/devices.h"
#include "config/version_rules.h"
#include "estimate/cross_check.h"
#include "estimate/estimate_cache.h"
#include "estimate/replay_stages.h"
#include "memory/activation_terms.h"
#include "memory/gaps.h"
#include "memory/parameter_tensors.h"
#include "model/presets.h"
#include "parallel/schedule.h"
#include "report/report.h"
#include "report/term_names.h"

namespace stagemem {

namespace {

// The virtual chunks a pipeline rank holds, in order.
std::vector<const VirtualStage*> chunks_of(const StagePlan& plan, std::int64_t rank) {
  std::vector<const VirtualStage*> out;
  for (const VirtualStage& v : plan.virtual_stages) {
    if (v.pipeline_rank == rank) out.push_back(&v);
  }
  return out;
}

// Whether two ranks keep exactly the same activations and transients: the same layer kinds in
// the same chunks, the same embedding / head / MTP duties and the same micro-batches in flight.
// AttnRes slots depend on where a chunk sits in the model, so a model with AttnRes never shares.
// Equal warm-up counts mean the same order of passes (schedule.h), hence the same peak moment.
bool same_activation_inputs(const Model& model, const StagePlan& plan, const StageReport& a,
                            std::int64_t b, std::int64_t micro_batches) {
  // DualPipeV's phase counts depend on the rank itself, so no two ranks run the same order.
  if (model.attn_res.block_size > 0 || plan.schedule == PipelineSchedule::dualpipev ||
      warmup_forwards(plan.pipeline_ranks, plan.chunks_per_rank, a.index, micro_batches) !=
          warmup_forwards(plan.pipeline_ranks, plan.chunks_per_rank, b, micro_batches)) {
    return false;
  }
  const auto ca = chunks_of(plan, a.index);
  const auto cb = chunks_of(plan, b);
  if (ca.size() != cb.size()) return false;
  for (std::size_t i = 0; i < ca.size(); ++i) {
    const VirtualStage& x = *ca[i];
    const VirtualStage& y = *cb[i];
    if (x.layer_count != y.layer_count || x.embedding != y.embedding || x.head != y.head ||
        x.mtp_layers != y.mtp_layers) {
      return false;
    }
    for (std::int64_t l = 0; l < x.layer_count; ++l) {
      const LayerKind& p = model.layers[static_cast<std::size_t>(x.first_layer + l)];
      const LayerKind& q = model.layers[static_cast<std::size_t>(y.first_layer + l)];
      if (p.attention != q.attention || p.mlp != q.mlp) return false;
    }
  }
  return true;
}

// Copies an identical earlier rank's activation and transient terms (same_activation_inputs);
// the recompute working set names its layers, so they move with the chunk they belong to.
StageActivationTerms copy_activation_terms(const StageReport& from, std::int64_t first,
                                           std::int64_t end, const StagePlan& plan, StageReport& to,
                                           bool fits) {
  StageActivationTerms copied;
  copied.first_stored = static_cast<std::int64_t>(to.terms.size());
  copied.stored_bytes = from.activation_bytes;
  copied.largest_transient_bytes = from.largest_transient_bytes;
  const auto moved = [&](std::int64_t i) { return i < 0 ? -1 : i - first + copied.first_stored; };
  copied.largest_transient = moved(from.largest_transient);
  copied.in_flight_per_chunk = from.in_flight_per_chunk;
  copied.chunk_stored_bytes = from.chunk_stored_bytes;
  copied.activation_units = from.activation_units;
  copied.moment = from.forward_backward_moment;
  copied.moment.transient = moved(copied.moment.transient);
  copied.moment.enclosing = moved(copied.moment.enclosing);
  copied.fits = fits;
  const auto ca = chunks_of(plan, from.index);
  const auto cb = chunks_of(plan, to.index);
  for (std::int64_t i = first; i < end; ++i) {
    Term t = from.terms[static_cast<std::size_t>(i)];
    if (t.info->text == TermText::recompute_group) {
      const std::int64_t group_first = t.formula.factor(1);
      for (std::size_t c = 0; c < ca.size(); ++c) {
        if (group_first < ca[c]->first_layer ||
            group_first >= ca[c]->first_layer + ca[c]->layer_count) {
          continue;
        }
        const std::int64_t shift = cb[c]->first_layer - ca[c]->first_layer;
        t.formula = Formula()
                        .number(t.formula.factor(0))
                        .number(group_first + shift)
                        .number(t.formula.factor(2) + shift);
        break;
      }
    }
    to.terms.push_back(t);
  }
  return copied;
}
// Names what drives the first term that does not fit: its formula's factors, as the fields a user
// changes ("seq x mbs x layers on the stage x micro-batches in flight").
FieldMessage overflow_error(const StageReport& stage) {
  const Term* culprit = nullptr;
  for (const Term& t : stage.terms) {
    if (t.formula.overflowed() || t.bytes < 0 ||
        t.bytes == std::numeric_limits<std::int64_t>::max()) {
      culprit = &t;
      break;
    }
  }
  // Canonical order: seq, mbs, the model's widths, then the stage's layers and micro-batches.
  bool seq = false, mbs = false, layers = false;
  std::string widths;
  std::string name = "the sum of its terms";
  if (culprit != nullptr) {
    name = term_name(*culprit);
    const Formula& f = culprit->formula;
    for (int i = 0; i < f.size(); ++i) {
      const std::string_view label = label_text(f.label(i));
      if (f.op(i) == FactorOp::value || f.op(i) == FactorOp::bytes || f.op(i) == FactorOp::plus ||
          label.empty()) {
        continue;
      }
      if (label == "S/CP" || label == "S") {
        seq = true;
      } else if (label == "B") {
        mbs = true;
      } else if (widths.find(label) == std::string::npos) {
        widths += widths.empty() ? "" : " x ";
        widths += label;
      }
    }
    layers = culprit->copies > 0;
  }
  std::string drivers;
  const auto add = [&](std::string_view what) {
    drivers += drivers.empty() ? "" : " x ";
    drivers += what;
  };
  if (seq) add("seq");
  if (mbs) add("mbs");
  if (!widths.empty()) add(widths);
  if (layers) add("layers on the stage x micro-batches in flight");
  if (drivers.empty()) add("parameters on the stage");
  const std::string field = seq   ? "training.sequence_length"
                            : mbs ? "training.micro_batch"
                                  : "model";
  return {.field = field,
          .message = drivers + " (" + name + ")" + " exceeds 2^63 bytes on stage " +
                     std::to_string(stage.index) +
                     "; no device holds that: lower the driving fields"};
}

// What every step of one estimate reads: the inputs, the cache and the micro-batches per step.
struct EstimateStep {
  const Config& config;
  const Model& model;
  EstimateCache& cache;
  std::int64_t micro_batches;
  bool peaks_only;
};

// Sets every field of the report that does not come from a stage again (the stages are refilled
// by estimate_into).
void reset_report(Report& report, const Config& config, const Model& model) {
  report.model.assign(model.name);
  report.total_parameters = 0;
  report.data_parallel = 1;
  report.expert_data_parallel = 1;
  report.micro_batches = 0;
  report.schedule = config.parallel.schedule;
  report.flat_headroom_bytes = 0;
  report.stages.clear();
  report.device = {};
  report.binding_stage = -1;
  report.cross_checks.clear();
}

// The diagnostics of the layout (cached) and of every other field, then the data-parallel sizes
// and the micro-batches per step; false when the inputs are not valid.
bool check_inputs(const Config& config, const Model& model, const EstimateCache& cache,
                  Report& report) {
  report.diagnostics = cache.layout_diagnostics;
  validate_beyond_layout(config, model, report.diagnostics);
  if (!report.diagnostics.ok()) return false;
  report.total_parameters = cache.total_parameters;
  report.data_parallel = data_parallel_size(config.parallel);
  report.expert_data_parallel = expert_data_parallel_size(config.parallel);
  report.flat_headroom_bytes = config.training.flat_headroom_bytes;
  report.micro_batches =
      micro_batches_per_step(config.training.global_batch, config.training.micro_batch,
                             report.data_parallel, report.diagnostics);
  return report.diagnostics.ok();
}

// The device the headroom is measured against: entered bytes, a preset, or none.
DeviceCapacity device_of(const DeviceConfig& device) {
  if (device.bytes > 0) {
    return {
        .name = "custom", .bytes = device.bytes, .source = "entered by the user (device.bytes)"};
  }
  if (const auto preset = find_device(device.preset)) {
    return {.name = std::string(preset->name), .bytes = preset->bytes, .source = preset->source};
  }
  return {};
}

// The stage in report slot `slot`, emptied, with its layers and parameters from the layout.
StageReport& start_stage(std::vector<StageReport>& stages, std::size_t slot,
                         const EstimateCache& cache) {
  if (slot == stages.size()) stages.emplace_back();
  StageReport& stage = stages[slot];
  reset_stage(stage);
  const StageParameters& parameters = cache.parameters[slot];
  stage.index = parameters.pipeline_rank;
  stage.first_layer = parameters.first_layer;
  stage.layer_count = parameters.layer_count;
  for (const VirtualStage& v : parameters.chunks) {
    stage.chunks.push_back({.first = v.first_layer, .count = v.layer_count});
  }
  stage.parameters_per_rank = cache.parameters_per_rank[slot];
  return stage;
}

// The resident step: the stage's weights, gradients, optimizer state and dummy wgrad buffers
// (memory/resident_terms.h), cached per precision and optimizer. False when they do not fit.
bool add_resident_terms(const EstimateStep& in, StageReport& stage, std::size_t slot) {
  if (!in.peaks_only) {
    const std::vector<Term>& resident = in.cache.resident_terms[slot];
    stage.terms.reserve(48);
    stage.terms.insert(stage.terms.end(), resident.begin(), resident.end());
    if (in.cache.replay_allocator) {
      std::shared_ptr<const ResidentAllocations>& tensors = in.cache.resident_allocations[slot];
      if (!tensors) {
        const Config& c = in.config;
        tensors = std::make_shared<const ResidentAllocations>(resident_allocations(
            in.model, in.cache.parameters[slot], c.parallel, resident, c.precision, c.optimizer,
            resolve_sharding(c.training, c.optimizer, c.parallel), c.training.sharding,
            ReplaySettings{}.max_resident_tensors));
      }
      stage.resident_allocations = tensors;
    }
  }
  const std::int64_t bytes = in.cache.resident_sums[slot];
  stage.resident_bytes = std::max<std::int64_t>(bytes, 0);
  return bytes >= 0;
}

// An earlier stage of this estimate with exactly the same activation inputs
// (same_activation_inputs): its report slot, or -1. A model with AttnRes never shares.
std::int64_t identical_earlier_stage(const EstimateStep& in, const std::vector<StageReport>& stages,
                                     std::size_t slot) {
  if (in.model.attn_res.block_size != 0) return -1;
  for (std::size_t r = 0; r < slot; ++r) {
    if (same_activation_inputs(in.model, *in.cache.plan, stages[r], stages[slot].index,
                               in.micro_batches)) {
      return static_cast<std::int64_t>(r);
    }
  }
  return -1;
}

// The stage's stored activations and forward/backward transients with the step timeline's peak
// moment (memory/activation_terms.h), appended to its terms (none in a peaks estimate): taken
// from the stage's memo when its inputs did not change, copied from an identical earlier stage,
// or computed (and then kept as the memo).
StageActivationTerms stage_activations(const EstimateStep& in, std::vector<StageReport>& stages,
                                       std::size_t slot) {
  StageReport& stage = stages[slot];
  LayerPieceCache& pieces = in.cache.pieces;
  const RecomputeConfig& recompute = in.config.training.recompute;
  StageActivationTerms activations;
  activations.in_flight_per_chunk = std::move(pieces.spare_in_flight);
  activations.chunk_stored_bytes = std::move(pieces.spare_chunk_bytes);
  if (take_activation_memo(in.cache, slot, recompute, in.micro_batches, in.peaks_only, stage,
                           activations)) {
    return activations;
  }
  if (const std::int64_t same = identical_earlier_stage(in, stages, slot); same >= 0) {
    const StageTermRange& range = in.cache.activation_ranges[static_cast<std::size_t>(same)];
    activations = copy_activation_terms(stages[static_cast<std::size_t>(same)], range.first,
                                        range.end, *in.cache.plan, stage, range.fits);
  } else {
    pieces.spare_in_flight = std::move(activations.in_flight_per_chunk);
    pieces.spare_chunk_bytes = std::move(activations.chunk_stored_bytes);
    activations =
        stage_activation_terms(in.model, in.config.parallel, in.config.training, *in.cache.plan,
                               stage.index, in.micro_batches, pieces, &stage.terms, in.peaks_only);
  }
  keep_activation_memo(in.cache, slot, in.config.training.recompute, in.micro_batches,
                       in.peaks_only, stage, activations);
  return activations;
}

// The activation step: the stage's activation and transient terms and their numbers; records
// where the terms are (EstimateCache::activation_ranges) for an identical later stage. False
// when they do not fit.
bool add_activation_terms(const EstimateStep& in, std::vector<StageReport>& stages,
                          std::size_t slot) {
  StageReport& stage = stages[slot];
  const auto first = static_cast<std::int64_t>(stage.terms.size());
  StageActivationTerms activations = stage_activations(in, stages, slot);
  in.cache.activation_ranges.push_back(
      {.first = first,
       .end = in.peaks_only ? first : static_cast<std::int64_t>(stage.terms.size()),
       .fits = activations.fits});
  stage.activation_bytes = activations.stored_bytes;
  stage.largest_transient_bytes = activations.largest_transient_bytes;
  stage.largest_transient = activations.largest_transient;
  stage.forward_backward_moment = activations.moment;
  // The stage's old lists keep their storage for the next stage_activation_terms call.
  std::swap(stage.in_flight_per_chunk, activations.in_flight_per_chunk);
  std::swap(stage.chunk_stored_bytes, activations.chunk_stored_bytes);
  std::swap(stage.activation_units, activations.activation_units);
  in.cache.pieces.spare_in_flight = std::move(activations.in_flight_per_chunk);
  in.cache.pieces.spare_chunk_bytes = std::move(activations.chunk_stored_bytes);
  return activations.fits;
}

// The optimizer step's transients (memory/optimizer_transients.h) and the pipeline input the
// model keeps past the step (append_kept_pipeline_input_terms), both cached. False when they do
// not fit.
bool add_optimizer_step_terms(const EstimateStep& in, StageReport& stage, std::size_t slot) {
  const EstimateCache& cache = in.cache;
  if (!in.peaks_only) {
    const std::vector<Term>& optimizer_step = cache.optimizer_step_terms[slot];
    const std::vector<Term>& kept_input = cache.kept_input_terms[slot];
    stage.terms.insert(stage.terms.end(), optimizer_step.begin(), optimizer_step.end());
    stage.terms.insert(stage.terms.end(), kept_input.begin(), kept_input.end());
    const std::size_t count = optimizer_step.size() + kept_input.size();
    for (auto t = stage.terms.end() - static_cast<std::ptrdiff_t>(count); t != stage.terms.end();
         ++t)
      t->allocated_at = AllocationPoint::optimizer_step;
  }
  std::int64_t bytes = cache.optimizer_step_sums[slot];
  const bool fits = bytes >= 0 && cache.kept_input_sums[slot] >= 0 &&
                    checked_add(bytes, cache.kept_input_sums[slot], &bytes);
  stage.optimizer_transient_bytes = fits ? bytes : 0;
  return fits;
}

// The gap step: the library workspaces (resident) and the gap rows (memory/gaps.h), cached per
// gap entries and workspace choice; a peaks estimate adds their bytes only. False when they do
// not fit.
bool add_gap_terms(const EstimateStep& in, StageReport& stage, std::size_t slot) {
  const Config& config = in.config;
  const bool grouped_gemm = in.cache.parameters[slot].per_rank_split.expert() > 0;
  if (in.peaks_only) {
    return add_bytes(stage.gap_bytes, gap_bytes(stage.index, config.gaps)) &&
           add_bytes(stage.resident_bytes, library_workspace_bytes(stage.index, config.gaps,
                                                                   config.training, grouped_gemm));
  }
  const StageGapTerms& kept = stage_gap_terms(in.cache, slot, stage.index, config, grouped_gemm);
  const std::size_t first = stage.terms.size();
  stage.terms.insert(stage.terms.end(), kept.terms.begin(), kept.terms.end());
  bool fits = true;
  for (std::size_t i = 0; i < kept.terms.size(); ++i) {
    Term& t = stage.terms[first + i];
    // A MEASURED source is the text of this configuration's entry (equal to the one the terms
    // were built from, perhaps in another Config object).
    if (kept.entry[i] >= 0) t.source = config.gaps[static_cast<std::size_t>(kept.entry[i])].source;
    fits = fits &&
           add_bytes(i < kept.workspace_count ? stage.resident_bytes : stage.gap_bytes, t.bytes);
  }
  return fits;
}

// Marks the terms alive at the stage's peak: of the forward/backward phase's terms, the stored
// activations and the transients alive at the step timeline's peak moment when that phase binds;
// the optimizer step's transients (after them) when it binds.
void mark_peak_terms(const EstimateStep& in, StageReport& stage, std::size_t slot) {
  const StageTermRange& activations = in.cache.activation_ranges[slot];
  const PeakMoment& moment = stage.forward_backward_moment;
  const auto end = static_cast<std::size_t>(activations.end);
  for (auto i = static_cast<std::size_t>(activations.first); i < end; ++i) {
    Term& t = stage.terms[i];
    const auto index = static_cast<std::int64_t>(i);
    const bool wide =
        t.place == TransientPlace::phase_wide ||
        (t.place == TransientPlace::pass_wide &&
         (t.allocated_at == AllocationPoint::backward) == (moment.phase == StepPhase::backward));
    t.counts_in_peak = !stage.optimizer_phase_binds &&
                       (t.family == Family::activation || index == moment.transient ||
                        index == moment.enclosing || (t.family == Family::transient && wide));
  }
  const std::size_t optimizer_end =
      end + in.cache.optimizer_step_terms[slot].size() + in.cache.kept_input_terms[slot].size();
  for (auto i = end; i < optimizer_end; ++i) {
    stage.terms[i].counts_in_peak = stage.optimizer_phase_binds;
  }
}

// The timeline peak: the phase that binds, forward/backward (the stored activations + the
// transients alive at the step timeline's largest moment, memory/timeline.h) or the optimizer
// step (its transients), on top of the resident and gap bytes. False when the bytes do not fit.
bool set_peak(const EstimateStep& in, StageReport& stage, std::size_t slot) {
  std::int64_t forward_backward = 0;
  const bool phases_fit =
      checked_add(stage.activation_bytes, stage.largest_transient_bytes, &forward_backward);
  stage.optimizer_phase_binds = stage.optimizer_transient_bytes > forward_backward;
  if (!in.peaks_only) mark_peak_terms(in, stage, slot);
  std::int64_t phase = stage.optimizer_transient_bytes;
  if (!stage.optimizer_phase_binds) {
    phase = stage.activation_bytes;
    if (!add_bytes(phase, stage.largest_transient_bytes)) return false;
  }
  stage.non_parameter_bytes = phase;
  stage.peak_bytes = stage.resident_bytes;
  return phases_fit && add_bytes(stage.peak_bytes, stage.gap_bytes) &&
         add_bytes(stage.peak_bytes, phase);
}

// The replay's settings: the allocator options as the run's PyTorch honours them.
ReplaySettings replay_settings(const Config& config) {
  const AllocatorSettings& a = config.training.allocator;
  ReplaySettings s;
  s.rules.expandable_segments = a.expandable_segments;
  s.rules.max_split_size = a.max_split_size_mb * (std::int64_t{1} << 20);  // <= 2^50
  s.rules.roundup_power2_divisions = a.roundup_power2_divisions;
  s.empty_unused_memory_level = a.empty_unused_memory_level;
  return s;
}

// Ends an estimate whose stage does not fit in int64 bytes with an error naming what drives it;
// the stages keep their storage in the cache for the next estimate.
void fail_overflow(Report& report, EstimateCache& cache, const StageReport& stage) {
  report.diagnostics.errors.push_back(overflow_error(stage));
  cache.spare_stages = std::move(report.stages);
  report.stages.clear();
  report.binding_stage = -1;
}

// A stage's allocator figures before (or without) the replay: it fits against its peak allocated.
void clear_reserved(StageReport& stage) {
  stage.reserved_replayed = false;
  stage.fit_basis = FitBasis::allocated;
  stage.fit_bytes = stage.peak_bytes;
  stage.peak_reserved_bytes = 0;
  stage.replayed_allocated_bytes = 0;
  stage.first_step_peak_reserved_bytes = 0;
  stage.reserved_after_first_step_bytes = 0;
  stage.reserved_after_steps_bytes = 0;
  stage.reserved_peak_moment = {};
  stage.segments_at_reserved_peak.clear();
  stage.outside_allocator_bytes = 0;
  stage.device_peak_bytes = -1;
  stage.device_limit_bytes = 0;
  stage.alloc_retries = 0;
  stage.segments_released_for_room = 0;
  stage.segments_released_by_gc = 0;
  stage.out_of_memory = false;
}

// The stage's headroom on the device and against the flat headroom entered, if any.
void set_headroom(StageReport& stage, const Config& config, const DeviceCapacity& device) {
  if (config.training.flat_headroom_bytes > 0) {
    stage.flat_headroom_margin = config.training.flat_headroom_bytes - stage.non_parameter_bytes;
  }
  if (device.bytes <= 0) return;
  stage.headroom_bytes = device.bytes - stage.fit_bytes;
  // What the allocator may reserve (the device less the rows outside it, which is the same
  // headroom, or a per-process memory fraction's smaller allowed_memory_maximum): past it the job
  // fails although the device has room.
  if (stage.reserved_replayed && stage.device_limit_bytes > 0) {
    stage.headroom_bytes =
        std::min(stage.headroom_bytes, stage.device_limit_bytes - stage.peak_reserved_bytes);
  }
}

// The stage whose figure against the device is largest (the first of equal ones): the one that
// binds.
std::int64_t binding_stage(const std::vector<StageReport>& stages) {
  std::int64_t largest = -1;
  std::int64_t binding = -1;
  for (const StageReport& stage : stages) {
    if (stage.fit_bytes > largest) {
      largest = stage.fit_bytes;
      binding = stage.index;
    }
  }
  return binding;
}

}  // namespace

Report estimate(const Config& config) {
  Diagnostics d;
  const auto model = resolve_model(config, d);
  if (!model) {
    Report report;
    report.model = config.custom_model.empty() ? config.model : "custom";
    report.diagnostics = std::move(d);
    return report;
  }
  return estimate(config, *model);
}

Report estimate(const Config& config, const Model& model) {
  EstimateCache cache;
  cache.keep_activations = false;  // thrown away after this estimate
  return estimate(config, model, cache);
}

Report estimate(const Config& config, const Model& model, EstimateCache& cache,
                EstimateDetail detail) {
  Report report;
  estimate_into(config, model, cache, report, detail);
  return report;
}

namespace {

// The replay's settings for this estimate, with the warning when the platform ignores an option.
ReplaySettings estimate_replay_settings(const Config& config, Report& report) {
  ReplaySettings settings = replay_settings(config);
  if (settings.rules.expandable_segments &&
      rocm_ignores_expandable_segments(config.training.stack)) {
    settings.rules.expandable_segments = false;
    report.diagnostics.warn(
        "allocator.expandable_segments",
        "PyTorch " + release_text(config.training.stack.torch) + " on " +
            std::string(enum_name(config.training.stack.architecture)) +
            " ignores expandable_segments (it warns 'expandable_segments not supported on this "
            "platform'; ROCm support from torch 2.11): replayed with one segment per "
            "cudaMalloc");
  }
  // torch.cuda.set_per_process_memory_fraction: allowed_memory_maximum is the fraction of the
  // device's total memory, and the collection threshold a fraction of that, both computed in
  // double and truncated as setMemoryFraction and garbage_collect_cached_blocks do. Neither is
  // replayed with expandable segments (validate warns).
  const AllocatorSettings& a = config.training.allocator;
  if (a.per_process_memory_fraction > 0.0 && report.device.bytes > 0 &&
      !settings.rules.expandable_segments) {
    settings.allowed_memory_maximum = static_cast<std::int64_t>(
        a.per_process_memory_fraction * static_cast<double>(report.device.bytes));
    if (a.garbage_collection_threshold > 0.0) {
      // A threshold of 0 B collects above 0 B reserved: 1 B is the same (segments are >= 2 MiB)
      // and keeps 0 meaning off.
      settings.rules.gc_threshold_bytes = std::max<std::int64_t>(
          1, static_cast<std::int64_t>(a.garbage_collection_threshold *
                                       static_cast<double>(settings.allowed_memory_maximum)));
    }
  }
  return settings;
}

// What is left of an estimate after its terms: nothing (it ended, in an error or final), the
// allocator step, or only the finish (peaks only, or no replay).
enum class EstimateStage : std::uint8_t { ended, replay, finish };

// Everything before the allocator step: the layout, every stage's terms and peak. A peaks-only
// estimate that overflows is redone with its terms (`detail` then says so).
EstimateStage estimate_terms(const Config& config, const Model& model, EstimateCache& cache,
                             Report& report, EstimateDetail& detail) {
  // Every field is set again; the stages' lists keep their storage (an estimate that ends in an
  // error leaves them in the cache for the next one).
  std::vector<StageReport> stages = take_stage_storage(report, cache);
  reset_report(report, config, model);
  // The layout: its validation, stage plan and per-rank parameters.
  refresh_layout(cache, model, config.parallel);
  if (!check_inputs(config, model, cache, report)) {
    cache.spare_stages = std::move(stages);
    return EstimateStage::ended;
  }
  report.device = device_of(config.device);
  // The terms each step takes, cached per the inputs they depend on (estimate_cache.h).
  refresh_state_terms(cache, model, config);
  refresh_activation_inputs(cache, model, config);
  refresh_gap_terms(cache, config);
  const EstimateStep in{.config = config,
                        .model = model,
                        .cache = cache,
                        .micro_batches = report.micro_batches,
                        .peaks_only = detail == EstimateDetail::peaks};
  cache.activation_ranges.clear();
  report.stages = std::move(stages);
  report.stages.reserve(cache.parameters.size());  // an identical stage is read from an earlier one
  for (std::size_t slot = 0; slot < cache.parameters.size(); ++slot) {
    StageReport& stage = start_stage(report.stages, slot, cache);
    bool fits = add_resident_terms(in, stage, slot);
    fits = add_activation_terms(in, report.stages, slot) && fits;
    fits = add_optimizer_step_terms(in, stage, slot) && fits;
    fits = add_gap_terms(in, stage, slot) && fits;
    fits = set_peak(in, stage, slot) && fits;
    if (!fits) {
      // The terms name what overflows: build them to say so.
      if (in.peaks_only) {
        detail = EstimateDetail::terms;
        return estimate_terms(config, model, cache, report, detail);
      }
      fail_overflow(report, cache, stage);
      return EstimateStage::ended;
    }
  }
  report.stages.resize(cache.parameters.size());
  for (StageReport& stage : report.stages) {
    clear_reserved(stage);
    set_headroom(stage, config, report.device);
  }
  return !in.peaks_only && cache.replay_allocator ? EstimateStage::replay : EstimateStage::finish;
}

// After the allocator step (`status` of its replays; done when there was none): the headroom
// against the replayed figures, the binding stage and the cross-checks.
void finish_estimate(const Config& config, EstimateCache& cache, Report& report,
                     EstimateDetail detail, StageReplays::Status status, std::size_t failed_stage) {
  if (status == StageReplays::Status::failed) {
    fail_overflow(report, cache, report.stages[failed_stage]);
    return;
  }
  for (StageReport& stage : report.stages) set_headroom(stage, config, report.device);
  report.binding_stage = binding_stage(report.stages);
  if (detail == EstimateDetail::terms) {
    report.cross_checks = cross_check(config.measurements, report.stages, report.diagnostics);
  }
}

}  // namespace

void estimate_into(const Config& config, const Model& model, EstimateCache& cache, Report& report,
                   EstimateDetail detail) {
  const EstimateStage next = estimate_terms(config, model, cache, report, detail);
  if (next == EstimateStage::ended) return;
  if (next == EstimateStage::finish) {
    return finish_estimate(config, cache, report, detail, StageReplays::Status::done, 0);
  }
  StageReplays replays(report, estimate_replay_settings(config, report), cache);
  StageReplays::Status status = StageReplays::Status::more;
  while (status == StageReplays::Status::more) {
    status = replays.advance(std::numeric_limits<std::int64_t>::max());
  }
  finish_estimate(config, cache, report, detail, status, replays.failed_stage());
}

SteppedEstimate::SteppedEstimate(const Config& config, const Model& model, EstimateCache& cache,
                                 Report& report)
    : config_(config), cache_(cache), report_(report) {
  EstimateDetail detail = EstimateDetail::terms;
  const EstimateStage next = estimate_terms(config_, model, cache_, report_, detail);
  if (next == EstimateStage::ended) {
    done_ = true;
  } else if (next == EstimateStage::finish) {
    finish_estimate(config_, cache_, report_, EstimateDetail::terms, StageReplays::Status::done, 0);
    done_ = true;
  } else {
    replays_ =
        std::make_unique<StageReplays>(report_, estimate_replay_settings(config_, report_), cache_);
  }
}

SteppedEstimate::~SteppedEstimate() = default;

bool SteppedEstimate::step(std::int64_t allocations) {
  if (done_) return false;
  const StageReplays::Status status = replays_->advance(allocations);
  if (status == StageReplays::Status::more) return true;
  finish_estimate(config_, cache_, report_, EstimateDetail::terms, status,
                  replays_->failed_stage());
  replays_.reset();
  done_ = true;
  return false;
}

}  // namespace stagemem
