#include "estimate/replay_stages.h"

#include <algorithm>
#include <string>
#include <utility>

#include "base/checked_math.h"

namespace stagemem {
namespace {

// The measured rows outside the allocator (runtime context, communication buffers): their bytes
// (each at most 2^50) and how many of the two are measured.
std::int64_t outside_allocator_bytes(const StageReport& stage, int* measured_rows) {
  std::int64_t bytes = 0;
  int rows = 0;
  for (const Term& t : stage.terms) {
    if (t.family != Family::gap || t.tag != Tag::measured) continue;
    const auto kind = static_cast<GapKind>(t.formula.factor(0));
    if (kind != GapKind::runtime_context && kind != GapKind::communication_buffers) continue;
    bytes += t.bytes;
    ++rows;
  }
  if (measured_rows != nullptr) *measured_rows = rows;
  return bytes;
}

// What the allocator may reserve on the device: its usable bytes less the measured rows outside
// the allocator (at least 1 B); 0 (no limit) without a device.
std::int64_t device_limit(const StageReport& stage, const DeviceCapacity& device) {
  if (device.bytes <= 0) return 0;
  return std::max<std::int64_t>(1, device.bytes - outside_allocator_bytes(stage, nullptr));
}

// What the allocator may reserve: the device's bytes less the rows outside it, or the per-process
// memory fraction's allowed_memory_maximum when smaller (0: no limit; none with expandable
// segments).
std::int64_t allocator_limit(const StageReport& stage, const DeviceCapacity& device,
                             const ReplaySettings& settings) {
  if (settings.rules.expandable_segments) return 0;
  const std::int64_t limit = device_limit(stage, device);
  if (settings.allowed_memory_maximum <= 0) return limit;
  return limit > 0 ? std::min(limit, settings.allowed_memory_maximum)
                   : settings.allowed_memory_maximum;
}

// The stage's replayed figures, the measured rows outside the allocator, and the figure the
// device check uses. False when a figure does not fit in int64 bytes.
bool set_reserved(StageReport& stage, const ReplayedStage& replayed) {
  stage.reserved_replayed = true;
  stage.peak_reserved_bytes = replayed.peak_reserved_bytes;
  stage.replayed_allocated_bytes = replayed.peak_allocated_bytes;
  stage.first_step_peak_reserved_bytes = replayed.first_step_peak_reserved_bytes;
  stage.reserved_after_first_step_bytes = replayed.reserved_after_first_step;
  stage.reserved_after_steps_bytes = replayed.reserved_after_steps;
  stage.reserved_peak_moment = {.step = replayed.peak_step,
                                .phase = replayed.peak_phase,
                                .micro_batch = replayed.peak_micro_batch,
                                .chunk = replayed.peak_chunk};
  stage.segments_at_reserved_peak = replayed.segments_at_peak;
  stage.alloc_retries = replayed.alloc_retries;
  stage.segments_released_for_room = replayed.segments_released_for_room;
  stage.segments_released_by_gc = replayed.segments_released_by_gc;
  stage.out_of_memory = replayed.out_of_memory;
  int measured_rows = 0;
  stage.outside_allocator_bytes = outside_allocator_bytes(stage, &measured_rows);
  std::int64_t device = 0;
  const bool fits = replayed.fits &&
                    checked_add(stage.peak_reserved_bytes, stage.outside_allocator_bytes, &device);
  stage.device_peak_bytes = measured_rows == 2 ? device : -1;
  stage.fit_basis = measured_rows == 2 ? FitBasis::device : FitBasis::reserved;
  stage.fit_bytes = device;
  return fits;
}

// Every input of a stage's replay, as numbers: equal keys replay to equal results.
void replay_key(const Report& report, const StageReport& stage, const ReplaySettings& settings,
                std::vector<std::int64_t>& key) {
  key.clear();
  key.insert(key.end(),
             {settings.rules.expandable_segments ? 1 : 0, settings.rules.max_split_size,
              settings.rules.roundup_power2_divisions, settings.rules.gc_threshold_bytes,
              settings.allowed_memory_maximum, settings.empty_unused_memory_level,
              settings.fast_path ? 1 : 0, settings.max_allocations, settings.device_limit_bytes,
              settings.max_resident_tensors, static_cast<std::int64_t>(report.schedule),
              report.micro_batches, static_cast<std::int64_t>(report.stages.size()), stage.index,
              static_cast<std::int64_t>(stage.chunks.size()),
              static_cast<std::int64_t>(stage.terms.size())});
  for (const Term& t : stage.terms) {
    key.insert(key.end(),
               {static_cast<std::int64_t>(t.family), static_cast<std::int64_t>(t.tag),
                static_cast<std::int64_t>(t.allocated_at), static_cast<std::int64_t>(t.place),
                t.chunk, t.bytes, t.copies, t.family == Family::gap ? t.formula.factor(0) : 0});
  }
  key.insert(key.end(), stage.activation_units.begin(), stage.activation_units.end());
  const ResidentAllocations* tensors = stage.resident_allocations.get();
  key.push_back(tensors == nullptr ? 0 : static_cast<std::int64_t>(tensors->hash));
}

}  // namespace

StageReplays::StageReplays(Report& report, const ReplaySettings& settings, EstimateCache& cache)
    : report_(report), settings_(settings), cache_(cache), budget_(settings.max_allocations) {
  std::int64_t listed = 0;
  bool over_bound = false;
  for (const StageReport& stage : report.stages) {
    if (!stage.resident_allocations) continue;
    over_bound = over_bound || stage.resident_allocations->over_bound;
    listed += static_cast<std::int64_t>(stage.resident_allocations->at_init.size() +
                                        stage.resident_allocations->first_step.size());
  }
  if (over_bound || listed > settings.max_resident_tensors) {
    for (StageReport& stage : report.stages) stage.resident_allocations.reset();
    report.diagnostics.warn(
        "parallel.ep",
        "the allocator replay allocates the resident terms tensor by tensor up to " +
            std::to_string(settings.max_resident_tensors) +
            " tensors per estimate; these stages hold " +
            (over_bound ? std::string("more") : std::to_string(listed)) +
            " (parameters, DDP buffers, main parameters and moments: many local experts or layers "
            "per stage), so each resident term is replayed as one tensor and peak reserved can be "
            "under-stated by up to 2 MiB per real tensor above 1 MiB. More expert or pipeline "
            "parallelism brings it under the bound");
  }
  replayed_.reserve(report.stages.size());
  if (cache.replays.size() < report.stages.size()) cache.replays.resize(report.stages.size());
}

StageReplays::Status StageReplays::advance(std::int64_t allocations) {
  std::int64_t left = std::max<std::int64_t>(allocations, 1);
  while (!exhausted_ && stage_ < report_.stages.size()) {
    if (phase_ == Phase::start) {
      start_stage();
      continue;
    }
    if (left <= 0) return Status::more;
    const std::int64_t before = running_->allocations();
    const bool more = running_->advance(left);
    left -= running_->allocations() - before;
    if (more) return Status::more;
    if (phase_ == Phase::unlimited) {
      ReplayedStage result = running_->result();
      running_.reset();
      if (cache_.keep_activations) {
        EstimateCache::ReplayMemo& memo = cache_.replays[stage_];
        memo.key = key_;
        memo.result = result;
      }
      replayed_.push_back(std::move(result));
      check_against_device();
    } else {
      end_limited();
    }
  }
  return exhausted_ ? Status::done : set_figures();
}

// Without the limit first: when that fits, the limit never binds and the replay with it would be
// the same (so a device change replays nothing).
void StageReplays::start_stage() {
  const StageReport& stage = report_.stages[stage_];
  limit_ = allocator_limit(stage, report_.device, settings_);
  settings_.device_limit_bytes = 0;
  replay_key(report_, stage, settings_, key_);
  EstimateCache::ReplayMemo& memo = cache_.replays[stage_];
  if (cache_.keep_activations && memo.key == key_) {
    replayed_.push_back(memo.result);
    check_against_device();
    return;
  }
  running_.emplace(report_, stage, settings_, cache_.keep_activations ? &memo.init : nullptr);
  phase_ = Phase::unlimited;
}

// Past the device, the replay against it says whether releasing cached segments saves the stage;
// when it runs out of memory even so (that replay stops there), the figures shown stay those
// without the limit (what the steps need), flagged.
void StageReplays::check_against_device() {
  ReplayedStage& result = replayed_.back();
  if (limit_ > 0 && result.complete && result.peak_requested_bytes > limit_) {
    // The live tensors alone exceed the device: out of memory whatever is released (no replay
    // against the device needed, so toggling between two small devices stays cheap).
    result.out_of_memory = true;
  } else if (limit_ > 0 && result.complete && result.peak_reserved_bytes > limit_) {
    key_.push_back(limit_);
    EstimateCache::ReplayMemo& memo = cache_.replays[stage_];
    if (cache_.keep_activations && memo.limited_key == key_) {
      result = memo.limited_result;
    } else {
      ReplaySettings limited = settings_;
      limited.device_limit_bytes = limit_;
      limited.max_allocations -= result.allocations;
      running_.emplace(report_, report_.stages[stage_], limited,
                       cache_.keep_activations ? &memo.limited_init : nullptr);
      phase_ = Phase::limited;
      return;
    }
  }
  end_stage();
}

void StageReplays::end_limited() {
  ReplayedStage& result = replayed_.back();
  ReplayedStage against_device = running_->result();
  running_.reset();
  against_device.allocations += result.allocations;
  if (against_device.complete && !against_device.out_of_memory) {
    result = std::move(against_device);
  } else {
    result.out_of_memory = against_device.complete && against_device.out_of_memory;
    result.allocations = against_device.allocations;
  }
  if (cache_.keep_activations) {
    EstimateCache::ReplayMemo& memo = cache_.replays[stage_];
    memo.limited_key = key_;
    memo.limited_result = result;
  }
  end_stage();
}

void StageReplays::end_stage() {
  const ReplayedStage& result = replayed_.back();
  settings_.max_allocations -= result.allocations;
  phase_ = Phase::start;
  if (!result.complete) {
    report_.diagnostics.warn(
        "training.global_batch",
        "the allocator replay is bounded to " + std::to_string(budget_) +
            " activation tensor allocations per estimate (and " +
            std::to_string(replay_max_passes) + " passes per stage and step), and stage " +
            std::to_string(report_.stages[stage_].index) +
            " reached it: no peak reserved is derived and every stage fits against its peak "
            "allocated. Fewer micro-batches per step (global batch / (DP x micro-batch)) or "
            "layers per stage lift it");
    exhausted_ = true;
    return;
  }
  ++stage_;
}

StageReplays::Status StageReplays::set_figures() {
  for (std::size_t i = 0; i < report_.stages.size(); ++i) {
    StageReport& stage = report_.stages[i];
    if (!set_reserved(stage, replayed_[i])) {
      stage_ = i;
      return Status::failed;
    }
    stage.device_limit_bytes = allocator_limit(stage, report_.device, settings_);
    if (stage.alloc_retries > 0 && !stage.out_of_memory) {
      report_.diagnostics.warn(
          "device.bytes",
          "stage " + std::to_string(stage.index) +
              " fits only by releasing the allocator's cache: " +
              std::to_string(stage.alloc_retries) +
              " cudaMalloc retries after freeing every cached segment in two steps (PyTorch's "
              "num_alloc_retries; Megatron logs them as allocator cache flushes), each a device "
              "synchronisation");
    }
  }
  return Status::done;
}

}  // namespace stagemem
