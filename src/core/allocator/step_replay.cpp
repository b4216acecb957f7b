#include "allocator/step_replay.h"

#include <algorithm>
#include <deque>
#include <limits>
#include <unordered_map>
#include <utility>

#include "base/checked_math.h"
#include "memory/timeline.h"
#include "parallel/schedule.h"

namespace stagemem {
namespace {

// Block labels: the kind in the top bits; an activation carries its chunk, micro-batch (mod
// 2^20) and index in the micro-batch, so the fast path can relabel it by its age on the chunk.
constexpr std::uint64_t kResidentLabel = 1ull << 60;
constexpr std::uint64_t kActivationLabel = 2ull << 60;
constexpr std::uint64_t kTransientLabel = 3ull << 60;
constexpr std::uint64_t kMicroBatchMask = (1ull << 20) - 1;

std::uint64_t activation_label(std::int64_t chunk, std::int64_t micro_batch, std::size_t index) {
  return kActivationLabel | (static_cast<std::uint64_t>(chunk) << 44) |
         ((static_cast<std::uint64_t>(micro_batch) & kMicroBatchMask) << 24) |
         static_cast<std::uint64_t>(index);
}

// One pass of the schedule, compact (at most replay_max_passes per step are kept).
struct Slot {
  std::int32_t micro_batch = 0;
  std::int16_t chunk = 0;
  bool backward = false;
};

struct AliveMicroBatch {
  std::int64_t micro_batch = 0;
  std::vector<std::int32_t> handles;
};

// Gap rows the allocator holds: a measured math-library workspace row (cuBLAS/cuDNN workspaces
// come from the caching allocator). The runtime context and communication buffers live outside
// it; the fragmentation row is what the replay derives.
bool allocator_gap(const Term& t) {
  return t.family == Family::gap && t.tag == Tag::measured &&
         static_cast<GapKind>(t.formula.factor(0)) == GapKind::math_library_workspaces;
}

class Replay {
 public:
  Replay(const Report& report, const StageReport& stage, const ReplaySettings& settings)
      : stage_(stage),
        settings_(settings),
        allocator_(settings.rules),
        tensors_(stage.resident_allocations.get()) {
    if (tensors_ != nullptr && tensors_->empty()) tensors_ = nullptr;
    allocator_.set_device_limit(settings.device_limit_bytes);
    chunks_ = static_cast<std::int64_t>(std::max<std::size_t>(stage.chunks.size(), 1));
    pipeline_ranks_ = static_cast<std::int64_t>(report.stages.size());
    build_tensor_lists();
    for (std::int64_t c = 0; c < chunks_; ++c) {
      held_[0].push_back(transients_held_by_pass(stage, false, c));
      held_[1].push_back(transients_held_by_pass(stage, true, c));
    }
    alive_.resize(static_cast<std::size_t>(chunks_));
    chunk_hash_.assign(static_cast<std::size_t>(chunks_), 0);
    // Each pass is at least one allocation's work: past the bound the step is not walked.
    std::int64_t passes = 0;
    if (!checked_mul(report.micro_batches, 2 * chunks_, &passes) || passes > replay_max_passes) {
      out_.complete = false;
      return;
    }
    slots_.reserve(static_cast<std::size_t>(passes));
    for_each_pass(report.schedule, static_cast<std::int64_t>(report.stages.size()), chunks_,
                  stage.index, report.micro_batches, [&](const ScheduleSlot& s) {
                    slots_.push_back({.micro_batch = static_cast<std::int32_t>(s.micro_batch),
                                      .chunk = static_cast<std::int16_t>(s.chunk),
                                      .backward = s.backward});
                  });
  }

  // Replays until at least `allocations` more activation tensors are allocated (at least one
  // pass), or to the end; false once finished (result() is then final).
  bool advance(ReplayInitCache* cache, std::int64_t allocations) {
    if (finished_) return false;
    if (!started_) {
      started_ = true;
      if (!out_.complete) {  // past replay_max_passes: not walked at all
        finished_ = true;
        return false;
      }
      start(cache);
    }
    std::int64_t pause_at = 0;
    if (!checked_add(allocations_, std::max<std::int64_t>(allocations, 1), &pause_at))
      pause_at = std::numeric_limits<std::int64_t>::max();
    bool progressed = false;
    while (step_ <= 2 && out_.complete && !allocator_.out_of_memory()) {
      if (progressed && allocations_ >= pause_at) return true;
      if (!step_begun_) {
        seen_.clear();
        first_forward_ = true;
        step_begun_ = true;
      }
      bool stopped = false;
      while (slot_ < slots_.size()) {
        if (progressed && allocations_ >= pause_at) return true;
        const Slot& s = slots_[slot_];
        if (first_forward_ && !s.backward) {
          free_kept();
          first_forward_ = false;
        }
        if (allocations_ > settings_.max_allocations) {
          out_.complete = false;
          stopped = true;
          break;
        }
        if (allocator_.out_of_memory()) {  // the run stops at its failed allocation
          stopped = true;
          break;
        }
        run_pass(s, step_);
        ++out_.passes_replayed;
        progressed = true;
        slot_ = skip_repeats(slot_) + 1;
      }
      if (!stopped) finish_step(step_);
      if (step_ == 1) {
        out_.first_step_peak_reserved_bytes = allocator_.peak_reserved();
        out_.reserved_after_first_step = allocator_.reserved();
      }
      ++step_;
      slot_ = 0;
      step_begun_ = false;
    }
    return finish();
  }

  const ReplayedStage& result() const { return out_; }
  std::int64_t allocations() const { return allocations_; }

 private:
  // The allocator after init: from the cache when its key matches, else replayed (and kept).
  void start(ReplayInitCache* cache) {
    if (cache != nullptr) {
      init_key(cache_key_);
      if (cache->allocator && cache->key == cache_key_) {
        allocator_.copy_state_from(*cache->allocator);
        other_hash_ = cache->resident_hash;
      } else {
        run_init();
        cache->key = cache_key_;
        if (!cache->allocator)
          cache->allocator = std::make_unique<CachingAllocator>(settings_.rules);
        cache->allocator->copy_state_from(allocator_);
        cache->resident_hash = other_hash_;
      }
    } else {
      run_init();
    }
    note(0, StepPhase::forward, -1, -1);
  }

  bool finish() {
    finished_ = true;
    if (!settings_.rules.expandable_segments) {
      out_.segments_at_peak.clear();
      for (const HeldSegment& seg : allocator_.peak_segments_by_index()) {
        if (seg.bytes > 0) out_.segments_at_peak.push_back(seg);
      }
    }
    out_.peak_allocated_bytes = allocator_.peak_allocated();
    out_.peak_requested_bytes = allocator_.peak_requested();
    out_.reserved_after_steps = allocator_.reserved();
    out_.fits = out_.fits && allocator_.fits();
    out_.passes_skipped =
        out_.complete ? 2 * static_cast<std::int64_t>(slots_.size()) - out_.passes_replayed : 0;
    out_.allocations = allocations_;
    out_.alloc_retries = allocator_.alloc_retries();
    out_.segments_released_for_room = allocator_.released_for_room();
    out_.segments_released_by_gc = allocator_.released_by_gc();
    out_.out_of_memory = allocator_.out_of_memory();
    return false;
  }

  void build_tensor_lists() {
    chunk_tensors_.resize(static_cast<std::size_t>(chunks_));
    std::vector<std::pair<std::int64_t, std::int64_t>> terms;  // (bytes per tensor, term)
    for (std::size_t i = 0; i < stage_.terms.size(); ++i) {
      const Term& t = stage_.terms[i];
      if (t.family != Family::activation) continue;
      terms.emplace_back(t.copies > 0 ? t.bytes / t.copies : 0, static_cast<std::int64_t>(i));
    }
    const std::vector<std::int64_t>& units = stage_.activation_units;
    if (units.size() != terms.size() * static_cast<std::size_t>(chunks_)) return;
    for (std::int64_t c = 0; c < chunks_; ++c) {
      // One tensor of each term per layer, in term order: layer l takes the terms with more
      // than l tensors on the chunk.
      std::int64_t layers = 0;
      for (std::size_t k = 0; k < terms.size(); ++k)
        layers = std::max(
            layers, units[k * static_cast<std::size_t>(chunks_) + static_cast<std::size_t>(c)]);
      auto& list = chunk_tensors_[static_cast<std::size_t>(c)];
      for (std::int64_t l = 0; l < layers; ++l) {
        for (std::size_t k = 0; k < terms.size(); ++k) {
          if (units[k * static_cast<std::size_t>(chunks_) + static_cast<std::size_t>(c)] > l)
            list.push_back(terms[k].first);
        }
      }
    }
  }

  // Model and optimizer init: the resident terms allocated then (one tensor each unless listed),
  // the allocator-held gap rows, then the listed tensors.
  bool init_term(std::size_t i) const {
    const Term& t = stage_.terms[i];
    const bool at_init = t.allocated_at == AllocationPoint::model_init ||
                         t.allocated_at == AllocationPoint::optimizer_init;
    return (t.family == Family::resident && at_init && !covered(i)) || allocator_gap(t);
  }
  void run_init() {
    for (std::size_t i = 0; i < stage_.terms.size(); ++i) {
      if (init_term(i)) allocate_resident(i);
    }
    if (tensors_ != nullptr) run_resident_list(tensors_->at_init, 0);
  }
  // Everything the state after init depends on.
  void init_key(std::vector<std::int64_t>& key) const {
    key.clear();
    key.insert(key.end(), {settings_.rules.expandable_segments ? 1 : 0,
                           settings_.rules.max_split_size, settings_.rules.roundup_power2_divisions,
                           settings_.rules.gc_threshold_bytes, settings_.device_limit_bytes});
    for (std::size_t i = 0; i < stage_.terms.size(); ++i) {
      if (init_term(i))
        key.insert(key.end(), {static_cast<std::int64_t>(i), stage_.terms[i].bytes});
    }
    key.push_back(tensors_ == nullptr ? 0 : static_cast<std::int64_t>(tensors_->hash));
  }

  // Whether the stage's resident tensor lists allocate this term (else it is one tensor).
  bool covered(std::size_t term) const {
    return tensors_ != nullptr &&
           std::binary_search(tensors_->covered_terms.begin(), tensors_->covered_terms.end(),
                              static_cast<std::int32_t>(term));
  }
  // A resident tensor list: each entry allocates a tensor or frees an earlier entry's.
  void run_resident_list(const std::vector<ResidentAllocation>& list, std::uint64_t list_id) {
    std::vector<std::int32_t> handles(list.size(), -1);
    for (std::size_t k = 0; k < list.size(); ++k) {
      const ResidentAllocation& a = list[k];
      const std::uint64_t label = kResidentLabel | (list_id + 1) << 40 | k;
      if (a.frees >= 0 && static_cast<std::size_t>(a.frees) < k) {
        const std::int32_t h = handles[static_cast<std::size_t>(a.frees)];
        if (h < 0) continue;
        other_hash_ -= block_hash(
            h, kResidentLabel | (list_id + 1) << 40 | static_cast<std::uint64_t>(a.frees));
        allocator_.free(h);
        handles[static_cast<std::size_t>(a.frees)] = -1;
      } else if (a.frees < 0 && a.bytes > 0) {
        handles[k] = allocator_.malloc(a.bytes, label);
        other_hash_ += block_hash(handles[k], label);
      }
      if (allocator_.out_of_memory()) return;
    }
  }

  void allocate_resident(std::size_t term) {
    const std::int32_t h = allocator_.malloc(stage_.terms[term].bytes, kResidentLabel | term);
    other_hash_ += block_hash(h, kResidentLabel | term);
  }
  void keep(std::size_t term) {
    const std::int32_t h = allocator_.malloc(stage_.terms[term].bytes, kTransientLabel | term);
    other_hash_ += block_hash(h, kTransientLabel | term);
    kept_.emplace_back(h, term);
  }
  void free_kept() {
    for (const auto& [h, term] : kept_) {
      other_hash_ -= block_hash(h, kTransientLabel | term);
      allocator_.free(h);
    }
    kept_.clear();
  }

  // A live block's contribution to the state hash: where it is, its size and which tensor.
  std::uint64_t block_hash(std::int32_t h, std::uint64_t tensor) const {
    return mix64(static_cast<std::uint64_t>(allocator_.block_address(h)),
                 static_cast<std::uint64_t>(allocator_.block_size(h)), tensor);
  }
  // R^k and R^-k modulo 2^64 (R odd): a micro-batch's blocks weigh R^micro_batch, so a chunk's
  // hash times R^-oldest depends only on the micro-batches' ages.
  static constexpr std::uint64_t kRadix = 0x9e3779b97f4a7c15ull;
  std::uint64_t power(std::int64_t k) { return powers(k, powers_, kRadix); }
  static constexpr std::uint64_t inverse_of_radix() {
    std::uint64_t inverse = kRadix;  // Newton's iteration: 6 steps reach 64 bits
    for (int i = 0; i < 6; ++i) inverse *= 2 - kRadix * inverse;
    return inverse;
  }
  std::uint64_t inverse_power(std::int64_t k) {
    return powers(k, inverse_powers_, inverse_of_radix());
  }
  static std::uint64_t powers(std::int64_t k, std::vector<std::uint64_t>& table,
                              std::uint64_t radix) {
    if (table.empty()) table.push_back(1);
    while (static_cast<std::int64_t>(table.size()) <= k) table.push_back(table.back() * radix);
    return table[static_cast<std::size_t>(k)];
  }

  // Records the moment when the reserved bytes reach a new peak.
  void note(std::int64_t step, StepPhase phase, std::int64_t micro_batch, std::int64_t chunk) {
    if (step != 0 && allocator_.peak_reserved() <= out_.peak_reserved_bytes) return;
    out_.peak_reserved_bytes = allocator_.peak_reserved();
    out_.peak_step = std::max<std::int64_t>(step, 1);
    out_.peak_phase = phase;
    out_.peak_micro_batch = micro_batch;
    out_.peak_chunk = chunk;
    if (settings_.rules.expandable_segments) {
      out_.segments_at_peak = allocator_.segments();
    } else {
      allocator_.record_peak_segments();
    }
  }

  void hold_transients(const std::vector<std::int64_t>& terms) {
    scratch_.clear();
    for (const std::int64_t t : terms) {
      scratch_.push_back(allocator_.malloc(stage_.terms[static_cast<std::size_t>(t)].bytes,
                                           kTransientLabel | static_cast<std::uint64_t>(t)));
    }
  }
  void release_transients() {
    for (auto h = scratch_.rbegin(); h != scratch_.rend(); ++h) allocator_.free(*h);
    scratch_.clear();
  }

  void run_pass(const Slot& s, std::int64_t step) {
    const auto c = static_cast<std::size_t>(s.chunk);
    const std::vector<std::int64_t>& held = held_[s.backward ? 1 : 0][c];
    if (!s.backward) {
      AliveMicroBatch& mb = alive_[c].emplace_back();
      mb.micro_batch = s.micro_batch;
      const auto& tensors = chunk_tensors_[c];
      mb.handles.reserve(tensors.size());
      allocations_ += static_cast<std::int64_t>(tensors.size());
      std::uint64_t& hash = chunk_hash_[c];
      const std::uint64_t weight = power(s.micro_batch);
      for (std::size_t i = 0; i < tensors.size(); ++i) {
        const std::int32_t h =
            allocator_.malloc(tensors[i], activation_label(s.chunk, s.micro_batch, i));
        mb.handles.push_back(h);
        hash += block_hash(h, i) * weight;
      }
      hold_transients(held);
      note(step, StepPhase::forward, s.micro_batch, s.chunk);
      release_transients();
      return;
    }
    hold_transients(held);
    note(step, StepPhase::backward, s.micro_batch, s.chunk);
    release_transients();
    auto& queue = alive_[c];
    auto it = std::find_if(queue.begin(), queue.end(), [&](const AliveMicroBatch& m) {
      return m.micro_batch == s.micro_batch;
    });
    if (it == queue.end()) return;
    if (it != queue.begin()) fifo_ = false;  // not the oldest: the fast path's ages break
    const std::uint64_t weight = power(it->micro_batch);
    for (std::size_t i = it->handles.size(); i-- > 0;) {
      chunk_hash_[c] -= block_hash(it->handles[i], i) * weight;
      allocator_.free(it->handles[i]);
    }
    queue.erase(it);
  }

  // The end of a step after its last pass: the optimizer step (header, 3.).
  void finish_step(std::int64_t step) {
    free_kept();  // a step without forwards
    if (settings_.empty_unused_memory_level >= 1) allocator_.empty_cache();
    // The optimizer step: the first step creates its state, then every step's transients.
    if (step == 1) {
      for (std::size_t i = 0; i < stage_.terms.size(); ++i) {
        const Term& t = stage_.terms[i];
        if (t.family == Family::resident && t.allocated_at == AllocationPoint::first_step &&
            !covered(i)) {
          allocate_resident(i);
        }
      }
      if (tensors_ != nullptr) run_resident_list(tensors_->first_step, 1);
    }
    std::vector<std::int64_t> step_transients;
    std::vector<std::int64_t> kept_terms;
    for (std::size_t i = 0; i < stage_.terms.size(); ++i) {
      const Term& t = stage_.terms[i];
      if (t.family != Family::transient || t.allocated_at != AllocationPoint::optimizer_step)
        continue;
      (t.place == TransientPlace::between_steps ? kept_terms : step_transients)
          .push_back(static_cast<std::int64_t>(i));
    }
    for (const std::int64_t t : kept_terms) keep(static_cast<std::size_t>(t));
    hold_transients(step_transients);
    note(step, StepPhase::optimizer_step, -1, -1);
    release_transients();
    if (settings_.empty_unused_memory_level >= 2) allocator_.empty_cache();
  }

  // The fast path (header): after slot i, when the allocator's state equals its state after an
  // earlier slot j of this step and the schedule repeats with period i - j, whole periods are
  // skipped. States are compared by a 64-bit hash kept up to date on every malloc and free (the
  // segments, and each live block's address, size and tensor, micro-batches by their age on
  // their chunk). Returns the index of the last slot accounted for.
  std::size_t skip_repeats(std::size_t i) {
    if (!fifo_ || !settings_.fast_path || allocator_.released_for_room() > 0 ||
        settings_.rules.gc_threshold_bytes > 0)
      return i;
    std::uint64_t state = mix64(allocator_.segments_hash(), other_hash_);
    for (std::size_t c = 0; c < alive_.size(); ++c) {
      if (alive_[c].empty()) continue;
      state += mix64(c + 1) * chunk_hash_[c] * inverse_power(alive_[c].front().micro_batch);
    }
    const auto [seen, is_new] = seen_.try_emplace(state, i);
    if (is_new) return i;
    const std::size_t period = i - seen->second;
    seen->second = i;
    // Whole periods of the schedule that repeat the last one (same direction and chunk).
    std::size_t repeats = 0;
    for (std::size_t k = i + 1; k + period <= slots_.size(); k += period) {
      bool same = true;
      for (std::size_t j = 0; j < period && same; ++j) {
        const Slot& a = slots_[k + j];
        const Slot& b = slots_[k + j - period];
        same = a.backward == b.backward && a.chunk == b.chunk;
      }
      if (!same) break;
      ++repeats;
    }
    if (repeats == 0) return i;
    // The skipped passes leave the same state with the micro-batches renamed.
    rename_after_skip(i + 1, i + repeats * period);
    seen_.clear();
    return i + repeats * period;
  }

  // After skipping slots [first, last]: each chunk's live micro-batches become the ones the
  // schedule would hold (the same blocks, the next micro-batch numbers).
  void rename_after_skip(std::size_t first, std::size_t last) {
    for (std::size_t c = 0; c < alive_.size(); ++c) {
      std::int64_t forwards = 0;
      std::int64_t newest = -1;
      for (std::size_t k = first; k <= last; ++k) {
        const Slot& s = slots_[k];
        if (static_cast<std::size_t>(s.chunk) != c || s.backward) continue;
        ++forwards;
        newest = s.micro_batch;
      }
      if (forwards == 0) continue;
      // The queue keeps its length (the same state): its micro-batches are the newest ones.
      auto& queue = alive_[c];
      std::int64_t mb = newest - static_cast<std::int64_t>(queue.size()) + 1;
      if (queue.empty()) continue;
      // Each block's weight moves from R^old to R^new.
      chunk_hash_[c] = chunk_hash_[c] * inverse_power(queue.front().micro_batch) * power(mb);
      for (AliveMicroBatch& m : queue) m.micro_batch = mb++;
    }
  }

  const StageReport& stage_;
  ReplaySettings settings_;
  CachingAllocator allocator_;
  const ResidentAllocations* tensors_ = nullptr;  // null: each resident term one tensor
  std::vector<std::int64_t> cache_key_;
  std::int64_t chunks_ = 1;
  std::int64_t pipeline_ranks_ = 1;
  std::vector<std::vector<std::int64_t>> chunk_tensors_;  // one micro-batch's, per chunk
  std::vector<std::vector<std::int64_t>> held_[2];        // [backward][chunk]: term indices
  std::vector<std::deque<AliveMicroBatch>> alive_;
  std::vector<Slot> slots_;
  std::vector<std::int32_t> scratch_;
  std::vector<std::pair<std::int32_t, std::size_t>> kept_;  // (block, term) past the step
  std::unordered_map<std::uint64_t, std::size_t> seen_;     // state hash -> last slot
  std::vector<std::uint64_t> chunk_hash_;                   // per chunk: sum of weighted blocks
  std::uint64_t other_hash_ = 0;
  std::int64_t allocations_ = 0;  // resident and kept blocks
  std::vector<std::uint64_t> powers_;
  std::vector<std::uint64_t> inverse_powers_;
  bool fifo_ = true;
  // Where a replay in pieces stands: the step (1 or 2; 3 when both are done) and its next pass.
  bool started_ = false;
  bool finished_ = false;
  std::int64_t step_ = 1;
  std::size_t slot_ = 0;
  bool step_begun_ = false;
  bool first_forward_ = true;
  ReplayedStage out_;
};

}  // namespace

class StageReplay::Impl {
 public:
  Impl(const Report& report, const StageReport& stage, const ReplaySettings& settings,
       ReplayInitCache* init)
      : replay(report, stage, settings), init_cache(init) {}
  Replay replay;
  ReplayInitCache* init_cache;
};

StageReplay::StageReplay(const Report& report, const StageReport& stage,
                         const ReplaySettings& settings, ReplayInitCache* init)
    : impl_(std::make_unique<Impl>(report, stage, settings, init)) {}
StageReplay::~StageReplay() = default;
StageReplay::StageReplay(StageReplay&&) noexcept = default;
StageReplay& StageReplay::operator=(StageReplay&&) noexcept = default;

bool StageReplay::advance(std::int64_t allocations) {
  return impl_->replay.advance(impl_->init_cache, allocations);
}

std::int64_t StageReplay::allocations() const {
  return impl_->replay.allocations();
}

const ReplayedStage& StageReplay::result() const {
  return impl_->replay.result();
}

ReplayedStage replay_stage(const Report& report, const StageReport& stage,
                           const ReplaySettings& settings, ReplayInitCache* init) {
  StageReplay replay(report, stage, settings, init);
  while (replay.advance(std::numeric_limits<std::int64_t>::max())) {
  }
  return replay.result();
}

}  // namespace stagemem
