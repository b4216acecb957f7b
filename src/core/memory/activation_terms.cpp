#include "memory/activation_terms.h"
#include "memory/sharding_terms.h"

#include <algorithm>
#include <array>
#include <limits>
#include <optional>

#include "base/units.h"
#include "memory/model_pieces.h"
#include "parallel/schedule.h"

namespace stagemem {
namespace {

constexpr TermInfo term_checkpoint_input{"checkpointed group input (full recompute)",
                                         "S/CP, B, h (/TP with SP), checkpointed groups"};
constexpr TermInfo term_pipeline_buffers{"pipeline send/receive buffers (hidden state)",
                                         "S/CP, B, h (/TP with SP), AttnRes slots at the boundary",
                                         TermText::pipeline_buffers};
constexpr TermInfo term_pipeline_buffers_attn_res{
    "pipeline send/receive buffers (hidden state + AttnRes slots)",
    "S/CP, B, h (/TP with SP), AttnRes slots at the boundary", TermText::pipeline_buffers};
constexpr TermInfo term_pipeline_gradient_buffers{
    "pipeline gradient send/receive buffers (hidden-state gradients)",
    "S/CP, B, h (/TP with SP), AttnRes slots at the boundary", TermText::pipeline_buffers, true};
constexpr TermInfo term_pipeline_gradient_buffers_attn_res{
    "pipeline gradient send/receive buffers (hidden-state + AttnRes slot gradients)",
    "S/CP, B, h (/TP with SP), AttnRes slots at the boundary", TermText::pipeline_buffers, true};
constexpr TermInfo term_kept_pipeline_input{
    "pipeline input of each chunk's last micro-batch and its gradient (kept by the model after "
    "the step)",
    "S/CP, B, h (/TP with SP), chunks on the rank fed by the previous stage"};
constexpr TermInfo term_recompute_group{"recompute working set (one checkpointed group, backward)",
                                        "S/CP, B, recompute group size", TermText::recompute_group,
                                        true};
constexpr TermInfo term_recompute_selective{"selective recompute working set (backward)",
                                            "S/CP, B, recompute group size",
                                            TermText::recompute_selective, true};

TermGroup attention_group(AttentionKind kind, bool mtp) {
  switch (kind) {
    case AttentionKind::gqa:
      return mtp ? TermGroup::mtp_gqa : TermGroup::gqa;
    case AttentionKind::mla:
      return mtp ? TermGroup::mtp_mla : TermGroup::mla;
    case AttentionKind::kda:
      return mtp ? TermGroup::mtp_kda : TermGroup::kda;
  }
  return TermGroup::none;
}

TermGroup mlp_group(MlpKind kind, bool mtp) {
  if (kind == MlpKind::dense) return mtp ? TermGroup::mtp_dense_mlp : TermGroup::dense_mlp;
  return mtp ? TermGroup::mtp_moe : TermGroup::moe;
}

// The bytes of the pieces `dropped` does not remove; false when a piece or the sum does not fit
// in int64.
bool kept_sum(const std::vector<ActivationPiece>& pieces, std::uint32_t dropped,
              std::int64_t* sum) {
  std::int64_t total = 0;
  for (const ActivationPiece& p : pieces) {
    if ((p.dropped_by & dropped) != 0) continue;
    if (p.formula.overflowed() || !checked_add(total, p.bytes, &total)) return false;
  }
  *sum = total;
  return true;
}

// Sums identical pieces over layers and micro-batches: one term per (group, piece), in the order
// the pieces first appear. A group's pieces are the same list wherever the group occurs (GQA's
// attention pieces do not depend on the MLP kind), so a group is summed as one block; a single
// piece (checkpointed input, AttnRes slots and weights) is matched by its catalogue entry and its
// bytes (AttnRes slots differ from chunk to chunk: each size is its own term). Each block counts
// its occurrences per micro-batch on each virtual chunk (`units`), so its copies follow from the
// micro-batches alive per chunk at whichever moment of the step peaks.
// With `sum_only` (peaks), nothing is listed: the bytes of one micro-batch on each chunk are added
// up as they come (`units` holds them).
class StoredSums {
 public:
  // `blocks` and `units` are scratch storage reused across stages (their capacity survives).
  StoredSums(std::uint32_t dropped, std::vector<StoredBlock>& blocks,
             std::vector<std::int64_t>& units, std::int64_t chunks, bool sum_only)
      : dropped_(dropped), blocks_(blocks), units_(units), chunks_(chunks), sum_only_(sum_only) {
    blocks_.clear();
    units_.clear();
    if (sum_only_) units_.assign(static_cast<std::size_t>(chunks_), 0);
  }
  void add_all(TermGroup group, const std::vector<ActivationPiece>& pieces, std::int64_t count,
               std::int64_t chunk, std::uint32_t dropped) {
    if (count <= 0) return;
    if (sum_only_) {
      std::int64_t bytes = 0;
      auto& into = units_[static_cast<std::size_t>(chunk)];
      fits_ = kept_sum(pieces, dropped, &bytes) && checked_mul(bytes, count, &bytes) &&
              checked_add(into, bytes, &into) && fits_;
      return;
    }
    for (std::size_t b = 0; b < blocks_.size(); ++b) {
      if (blocks_[b].group == group && blocks_[b].pieces == &pieces) {
        unit(b, chunk) += count;
        return;
      }
    }
    blocks_.push_back({group, &pieces, {}, dropped});
    units_.resize(units_.size() + static_cast<std::size_t>(chunks_), 0);
    unit(blocks_.size() - 1, chunk) = count;
  }
  void add_all(TermGroup group, const std::vector<ActivationPiece>& pieces, std::int64_t count,
               std::int64_t chunk) {
    add_all(group, pieces, count, chunk, dropped_);
  }
  // Sum only: `count` layers of chunk `chunk` whose kept pieces come to `bytes` (`fits`: they fit
  // in int64).
  void add_kept(std::int64_t bytes, bool fits, std::int64_t count, std::int64_t chunk) {
    if (count <= 0) return;
    auto& into = units_[static_cast<std::size_t>(chunk)];
    fits_ = fits && checked_mul(bytes, count, &bytes) && checked_add(into, bytes, &into) && fits_;
  }
  // Always inlined: it runs for every single piece of every chunk of every stage, and GCC 12
  // otherwise folds add_listed into it and calls it out of line (4% of a peaks sweep).
  [[gnu::always_inline]] void add(TermGroup group, const ActivationPiece& piece, std::int64_t count,
                                  std::int64_t chunk) {
    if (count <= 0 || piece.bytes == 0) return;
    if (sum_only_) {
      add_kept(piece.bytes, !piece.formula.overflowed(), count, chunk);
      return;
    }
    add_listed(group, piece, count, chunk);
  }

 private:
  void add_listed(TermGroup group, const ActivationPiece& piece, std::int64_t count,
                  std::int64_t chunk) {
    for (std::size_t b = 0; b < blocks_.size(); ++b) {
      if (blocks_[b].group == group && blocks_[b].pieces == nullptr &&
          blocks_[b].single.info == piece.info && blocks_[b].single.bytes == piece.bytes) {
        unit(b, chunk) += count;
        return;
      }
    }
    blocks_.push_back({group, nullptr, piece, 0});
    units_.resize(units_.size() + static_cast<std::size_t>(chunks_), 0);
    unit(blocks_.size() - 1, chunk) = count;
  }

 public:
  // Stored bytes of one micro-batch on each chunk; false when they do not fit in int64.
  bool chunk_bytes(std::vector<std::int64_t>& out) const {
    if (sum_only_) {
      out.assign(units_.begin(), units_.end());
      return fits_;
    }
    out.assign(static_cast<std::size_t>(chunks_), 0);
    bool fits = true;
    for (std::size_t b = 0; b < blocks_.size(); ++b) {
      std::int64_t per_unit = 0;
      if (blocks_[b].pieces == nullptr) {
        per_unit = blocks_[b].single.bytes;
        fits = !blocks_[b].single.formula.overflowed() && fits;
      } else {
        fits = kept_sum(*blocks_[b].pieces, blocks_[b].dropped, &per_unit) && fits;
      }
      for (std::int64_t c = 0; c < chunks_; ++c) {
        std::int64_t bytes = 0;
        auto& into = out[static_cast<std::size_t>(c)];
        fits = checked_mul(per_unit, unit(b, c), &bytes) && checked_add(into, bytes, &into) && fits;
      }
    }
    return fits;
  }
  // Appends the sums for `alive` micro-batches per chunk as terms (or, with `out` null, only adds
  // up their bytes); false when one does not fit in int64 bytes.
  bool append_terms(std::vector<Term>* out, std::int64_t& total,
                    const std::vector<std::int64_t>& alive,
                    std::vector<std::int64_t>* units = nullptr) const {
    if (sum_only_) {
      bool fits = fits_;
      for (std::int64_t c = 0; c < chunks_; ++c) {
        std::int64_t bytes = 0;
        fits = checked_mul(units_[static_cast<std::size_t>(c)], alive[static_cast<std::size_t>(c)],
                           &bytes) &&
               checked_add(total, bytes, &total) && fits;
      }
      return fits;
    }
    bool fits = true;
    const auto emit = [&](TermGroup group, const ActivationPiece& p, std::int64_t copies) {
      if (out == nullptr) {
        std::int64_t bytes = 0;
        fits = !p.formula.overflowed() && checked_mul(p.bytes, copies, &bytes) &&
               checked_add(total, bytes, &total) && fits;
        return;
      }
      Term& t = out->emplace_back();
      t.info = p.info;
      t.copies = copies;
      t.name_value = p.name_value;
      t.formula = p.formula;
      t.group = group;
      t.family = Family::activation;
      t.allocated_at = AllocationPoint::forward;
      if (p.formula.overflowed() || !checked_mul(p.bytes, copies, &t.bytes) ||
          !checked_add(total, t.bytes, &total)) {
        fits = false;
      }
    };
    for (std::size_t b = 0; b < blocks_.size(); ++b) {
      std::int64_t copies = 0;
      for (std::int64_t c = 0; c < chunks_; ++c) {
        std::int64_t n = 0;
        fits = checked_mul(unit(b, c), alive[static_cast<std::size_t>(c)], &n) &&
               checked_add(copies, n, &copies) && fits;
      }
      if (copies <= 0) continue;
      const StoredBlock& block = blocks_[b];
      const auto emit_units = [&] {
        if (out == nullptr || units == nullptr) return;
        for (std::int64_t c = 0; c < chunks_; ++c) units->push_back(unit(b, c));
      };
      if (block.pieces == nullptr) {
        emit(block.group, block.single, copies);
        emit_units();
        continue;
      }
      for (const ActivationPiece& p : *block.pieces) {
        if ((p.dropped_by & block.dropped) == 0 && (p.bytes != 0 || p.formula.overflowed())) {
          emit(block.group, p, copies);
          emit_units();
        }
      }
    }
    return fits;
  }

 private:
  std::int64_t& unit(std::size_t block, std::int64_t chunk) {
    return units_[block * static_cast<std::size_t>(chunks_) + static_cast<std::size_t>(chunk)];
  }
  std::int64_t unit(std::size_t block, std::int64_t chunk) const {
    return units_[block * static_cast<std::size_t>(chunks_) + static_cast<std::size_t>(chunk)];
  }
  std::uint32_t dropped_;
  std::vector<StoredBlock>& blocks_;
  std::vector<std::int64_t>& units_;
  std::int64_t chunks_;
  bool sum_only_;
  bool fits_ = true;
};

// Sum of ceil(i / block) over i in [0, n): the values k = 1, 2, ... each cover `block` layers.
std::int64_t attn_res_slot_sum(std::int64_t n, std::int64_t block) {
  if (n <= 1 || block <= 0) return 0;
  const std::int64_t q = (n - 1) / block;
  const std::int64_t r = (n - 1) % block;
  return block * q * (q + 1) / 2 + r * (q + 1);
}

// The pieces a layer keeps, split so each half is labelled by its own kind.
// Saturates at 2^63 - 1 (an overflowed piece already marks the stage as not fitting).
std::int64_t layer_bytes(const LayerPieces& p, std::uint32_t dropped) {
  std::int64_t sum = 0;
  for (const auto* list : {p.attention, p.mlp}) {
    for (const ActivationPiece& piece : *list) {
      if ((piece.dropped_by & dropped) == 0 && !checked_add(sum, piece.bytes, &sum)) {
        return std::numeric_limits<std::int64_t>::max();
      }
    }
  }
  return sum;
}

// Layer kinds index a small table: 3 attention kinds x 2 MLP kinds, and again for the layers
// Megatron computes in bf16 under a quantised recipe (--first-last-layers-bf16).
constexpr int kind_slots = layer_slots;
constexpr int bf16_slot_offset = 6;
int slot_of(LayerKind kind, bool bf16_layer = false) {
  return static_cast<int>(kind.attention) * 2 + static_cast<int>(kind.mlp) +
         (bf16_layer ? bf16_slot_offset : 0);
}
LayerKind kind_of(int slot) {
  const int base = slot % bf16_slot_offset;
  return {static_cast<AttentionKind>(base / 2), static_cast<MlpKind>(base % 2)};
}
bool bf16_slot(int slot) {
  return slot >= bf16_slot_offset;
}
// The training inputs of a bf16 layer: no quantised compute.
TrainingConfig bf16_training(const TrainingConfig& training) {
  TrainingConfig out = training;
  out.low_precision = LowPrecisionCompute{};
  return out;
}
// The recipe's global layer range [first, end): Megatron's is_first_last_bf16_layer keeps the
// layers before and after it in bf16; everything computes in the recipe's range without them.
std::pair<std::int64_t, std::int64_t> quantised_layers(const Model& model,
                                                       const TrainingConfig& training) {
  const auto layers = static_cast<std::int64_t>(model.layers.size());
  const LowPrecisionCompute& lp = training.low_precision;
  if (!lp.quantised()) return {0, layers};
  return {std::min(lp.bf16_layers_at_start, layers),
          std::max<std::int64_t>(0, layers - lp.bf16_layers_at_end)};
}

ActivationPiece checkpoint_input_piece(const Model& m, const TokenShape& s) {
  Formula f;
  f.times(label_id("S/CP"), s.sequence).times(label_id("B"), s.micro_batch);
  if (s.sequence_parallel && s.tensor_parallel > 1) {
    f.times_tp_sp(label_id("h"), m.hidden / s.tensor_parallel);
  } else {
    f.times(label_id("h"), m.hidden);
  }
  return make_piece(term_checkpoint_input, f.bytes(2, label_id("bf16")));
}

// The PassOption of every pass kind (chunk x 2 + backward) of a rank with `chunks` chunks, in
// one walk over the transient list (the first largest wins, in list order, as for one kind), and
// the largest backward layer transient (`inner`, -1: none), which every recompute working set
// encloses. Recompute working sets are offered after the list (add_working_set_option).
void base_pass_options(const std::vector<ActivationPiece>& transients,
                       const std::vector<TransientScope>& scopes, std::int64_t chunks,
                       std::vector<PassOption>& options, std::int64_t& inner) {
  const auto kinds = static_cast<std::size_t>(2 * chunks);
  options.assign(kinds, PassOption{});
  const auto offer = [&](std::size_t kind, std::int64_t bytes, std::size_t i) {
    if (bytes > options[kind].bytes) options[kind] = {bytes, static_cast<std::int64_t>(i), -1};
  };
  inner = -1;
  for (std::size_t i = 0; i < transients.size(); ++i) {
    const TransientScope& scope = scopes[i];
    const std::int64_t bytes = transients[i].bytes;
    const std::size_t direction = transients[i].info->in_backward ? 1 : 0;
    switch (scope.place) {
      case TransientPlace::layer:
        for (std::size_t kind = direction; kind < kinds; kind += 2) offer(kind, bytes, i);
        if (direction == 1 &&
            (inner < 0 || bytes > transients[static_cast<std::size_t>(inner)].bytes)) {
          inner = static_cast<std::int64_t>(i);
        }
        break;
      case TransientPlace::boundary:
        for (std::size_t kind = 0; kind < kinds; ++kind) offer(kind, bytes, i);
        break;
      case TransientPlace::chunk:
        if (scope.chunk >= 0 && scope.chunk < chunks) {
          offer(static_cast<std::size_t>(scope.chunk) * 2 + direction, bytes, i);
        }
        break;
      case TransientPlace::recompute:
        break;  // added per stage, with what it encloses (add_working_set_option)
      case TransientPlace::between_steps:
        break;  // held by the optimizer step, never by a forward or backward pass
      case TransientPlace::pass_wide:
      case TransientPlace::phase_wide:
        break;  // beside every pass's choice (RankPieces::wide_bytes)
    }
  }
}

// Offers a recompute working set of `bytes` (transient index `index`) to every backward pass kind,
// around the rank's largest backward layer transient (`inner` of `transients`, -1: none).
void add_working_set_option(std::vector<PassOption>& options, std::int64_t bytes,
                            std::int64_t index, const std::vector<ActivationPiece>& transients,
                            std::int64_t inner, bool& fits) {
  if (inner >= 0) {
    fits = checked_add(bytes, transients[static_cast<std::size_t>(inner)].bytes, &bytes) && fits;
  }
  const PassOption option =
      inner >= 0 ? PassOption{bytes, inner, index} : PassOption{bytes, index, -1};
  for (std::size_t kind = 1; kind < options.size(); kind += 2) {
    if (bytes > options[kind].bytes) options[kind] = option;
  }
}

// The candidate passes of `rank` for M micro-batches (schedule.h: peak_candidates), built on
// first use and kept for a few values of M.
const PeakCandidates& rank_schedule(LayerPieceCache& cache, const StagePlan& plan,
                                    std::int64_t rank, std::int64_t micro_batches,
                                    std::int64_t chunks) {
  if (cache.schedules.size() < static_cast<std::size_t>(plan.pipeline_ranks))
    cache.schedules.resize(static_cast<std::size_t>(plan.pipeline_ranks));
  auto& kept = cache.schedules[static_cast<std::size_t>(rank)];
  ++cache.schedule_clock;
  LayerPieceCache::RankSchedule* s = &kept[0];
  for (auto& candidate : kept) {
    if (candidate.micro_batches == micro_batches && candidate.chunks == chunks) {
      candidate.last_used = cache.schedule_clock;
      return candidate.candidates;
    }
    if (candidate.last_used < s->last_used) s = &candidate;
  }
  s->micro_batches = micro_batches;
  s->chunks = chunks;
  s->last_used = cache.schedule_clock;
  if (plan.schedule == PipelineSchedule::dualpipev) {
    dualpipev_peak_candidates(plan.pipeline_ranks, rank, micro_batches, s->candidates);
  } else {
    peak_candidates(plan.pipeline_ranks, chunks, rank, micro_batches, s->candidates);
  }
  return s->candidates;
}

// The full walk over every pass of the step, for stages with a chunk that stores nothing per
// micro-batch (then a pass can tie with one that holds more, and the earlier pass is the peak).
void walk_every_pass(const StagePlan& plan, std::int64_t rank, std::int64_t micro_batches,
                     const std::vector<std::int64_t>& chunk_bytes,
                     const std::vector<PassOption>& options, std::vector<std::int64_t>& alive,
                     PeakMoment& moment, std::int64_t& best, std::int32_t& best_kind, bool& fits) {
  const auto chunks = static_cast<std::int64_t>(chunk_bytes.size());
  std::vector<std::int64_t> live(chunk_bytes.size(), 0);
  std::int64_t stored = 0;
  const auto visit = [&](const ScheduleSlot& x) {
    const auto c = static_cast<std::size_t>(x.chunk);
    if (!x.backward) {
      fits = checked_add(stored, chunk_bytes[c], &stored) && fits;
      ++live[c];
    }
    const auto kind = static_cast<std::int32_t>(x.chunk * 2 + (x.backward ? 1 : 0));
    std::int64_t value = 0;
    fits = checked_add(stored, options[static_cast<std::size_t>(kind)].bytes, &value) && fits;
    if (value > best) {
      best = value;
      best_kind = kind;
      moment.micro_batch = x.micro_batch;
      alive = live;
    }
    if (x.backward) {
      if (fits) stored -= chunk_bytes[c];  // past 2^63 the report is an error anyway
      --live[c];
    }
  };
  for_each_pass(plan.schedule, plan.pipeline_ranks, chunks, rank, micro_batches, visit);
}

// The forward/backward peak moment of `rank`: the pass whose stored activations (one micro-batch
// on chunk c weighs chunk_bytes[c]) plus its transients are largest, the first in the step's order.
// Sets `alive` to the micro-batches alive per chunk then; returns the moment with indices into
// the transient list and its transient bytes in `transient_bytes`.
PeakMoment find_peak_moment(LayerPieceCache& cache, const StagePlan& plan, std::int64_t rank,
                            std::int64_t micro_batches,
                            const std::vector<std::int64_t>& chunk_bytes,
                            const std::vector<PassOption>& options,
                            std::vector<std::int64_t>& alive, std::int64_t& transient_bytes,
                            bool& fits) {
  const std::int64_t chunks = static_cast<std::int64_t>(chunk_bytes.size());
  alive.assign(chunk_bytes.size(), 0);
  PeakMoment moment;
  const auto take = [&](const PassOption& o) {
    moment.transient = o.transient;
    moment.enclosing = o.enclosing;
    transient_bytes = o.bytes;
  };
  if (chunks == 1) {
    // 1F1B: the last warm-up forward and the first backward both hold min(P - p, M).
    const std::int64_t held = std::min(plan.pipeline_ranks - rank, micro_batches);
    alive[0] = held;
    const PassOption f = options[0];
    const PassOption b = options[1];
    const bool forward = f.bytes >= b.bytes;
    moment.phase = forward ? StepPhase::forward : StepPhase::backward;
    moment.micro_batch = forward ? held - 1 : 0;
    moment.chunk = 0;
    take(forward ? f : b);
    return moment;
  }
  std::int64_t best = -1;
  std::int32_t best_kind = 0;
  const bool every_chunk_stores =
      std::all_of(chunk_bytes.begin(), chunk_bytes.end(), [](std::int64_t b) { return b > 0; });
  // The candidates index passes and count micro-batches in int32: within the configuration's
  // bounds (M <= 65,536, vpp <= 1,024) a step has at most 2^27 passes; beyond them, walk.
  const bool indexable = micro_batches <= max_micro_batches_per_step && chunks <= 1024;
  if (every_chunk_stores && indexable) {
    const PeakCandidates& schedule = rank_schedule(cache, plan, rank, micro_batches, chunks);
    const auto width = static_cast<std::size_t>(chunks);
    std::size_t best_candidate = 0;
    // No candidate can exceed (largest chunk bytes x most micro-batches alive) + largest
    // transient; when that bound fits in int64 the sums need no overflow checks.
    std::int64_t largest_option = 0;
    for (const PassOption& o : options) largest_option = std::max(largest_option, o.bytes);
    std::int64_t bound = 0;
    const bool unchecked = checked_mul(*std::max_element(chunk_bytes.begin(), chunk_bytes.end()),
                                       schedule.most_alive, &bound) &&
                           checked_add(bound, largest_option, &bound);
    const auto take_if_larger = [&](std::size_t k, std::int64_t value) {
      if (value > best || (value == best && schedule.pass[k] < schedule.pass[best_candidate])) {
        best = value;
        best_candidate = k;
      }
    };
    if (unchecked && width == 2) {  // VPP 2 and DualPipeV: the common case, unrolled
      const std::int64_t first = chunk_bytes[0];
      const std::int64_t second = chunk_bytes[1];
      const std::int32_t* counts = schedule.alive.data();
      for (std::size_t k = 0; k < schedule.kind.size(); ++k, counts += 2) {
        take_if_larger(k, options[static_cast<std::size_t>(schedule.kind[k])].bytes +
                              first * counts[0] + second * counts[1]);
      }
    }
    for (std::size_t k = 0; k < schedule.kind.size() && !(unchecked && width == 2); ++k) {
      const std::int32_t* counts = schedule.alive.data() + k * width;
      std::int64_t value = options[static_cast<std::size_t>(schedule.kind[k])].bytes;
      if (unchecked) {
        for (std::size_t c = 0; c < width; ++c) value += chunk_bytes[c] * counts[c];
      } else {
        for (std::size_t c = 0; c < width; ++c) {
          std::int64_t bytes = 0;
          fits = checked_mul(chunk_bytes[c], counts[c], &bytes) &&
                 checked_add(value, bytes, &value) && fits;
        }
      }
      take_if_larger(k, value);
    }
    if (best >= 0) {
      best_kind = schedule.kind[best_candidate];
      const std::int32_t* counts = schedule.alive.data() + best_candidate * width;
      std::copy(counts, counts + width, alive.begin());
      moment.micro_batch = schedule.micro_batch[best_candidate];
    }
  } else {
    walk_every_pass(plan, rank, micro_batches, chunk_bytes, options, alive, moment, best, best_kind,
                    fits);
  }
  if (best >= 0) {
    moment.phase = (best_kind & 1) != 0 ? StepPhase::backward : StepPhase::forward;
    moment.chunk = best_kind >> 1;
    take(options[static_cast<std::size_t>(best_kind)]);
  }
  return moment;
}

}  // namespace

void prepare_piece_cache(LayerPieceCache& cache, const TrainingConfig& training,
                         const ShardingPieceInputs& sharding) {
  TrainingConfig inputs = training;
  inputs.global_batch = 0;
  inputs.flat_headroom_bytes = 0;
  inputs.recompute = {};
  if (cache.built_for && *cache.built_for == inputs && cache.sharding == sharding) return;
  cache.sharding = sharding;
  // The layer structure depends on the layout and recompute only: it survives. The ranks' pieces
  // and the scratch lists keep their storage.
  cache.built_for = inputs;
  ++cache.generation;
  cache.head.reset();
  cache.head_transients.reset();
  cache.mtp_extra.reset();
  cache.checkpoint_input.reset();
  cache.embedding_dropout.reset();
  cache.mtp_checkpoint_inputs.reset();
  cache.shared = {};
  cache.shared_bf16 = {};
}

namespace {

// The rank's chunks split into layers that keep everything and checkpointed groups (with their
// distinct compositions), per layer kind: the part of the recompute policy that has no bytes.
RankLayers rank_layers(const Model& model, const StagePlan& plan, std::int64_t rank,
                       const RecomputeConfig& recompute,
                       std::pair<std::int64_t, std::int64_t> quantised) {
  RankLayers result;
  result.bf16_before = quantised.first;
  result.bf16_from = quantised.second;
  result.full = recompute.policy == RecomputePolicy::full;
  result.method = recompute.method;
  result.group_layers = recompute.layers;
  for (const VirtualStage& chunk : plan.virtual_stages) {
    if (chunk.pipeline_rank != rank) continue;
    ChunkLayers& out = result.chunks.emplace_back();
    out.stage = &chunk;
    const std::int64_t end = chunk.first_layer + chunk.layer_count;
    std::int64_t group_size = 0;
    std::int64_t first_full_layer = chunk.first_layer;  // layers before this one are checkpointed
    if (result.full) {
      group_size = std::max<std::int64_t>(1, recompute.layers);
      if (recompute.method == FullRecomputeMethod::uniform) {
        out.checkpointed_groups = (chunk.layer_count + group_size - 1) / group_size;
        first_full_layer = end;
      } else {
        out.checkpointed_groups = std::min(group_size, chunk.layer_count);
        first_full_layer = chunk.first_layer + out.checkpointed_groups;
        group_size = 1;
      }
    }
    ChunkLayers::Group group;
    for (std::int64_t i = chunk.first_layer; i < end; ++i) {
      const bool bf16_layer = i < result.bf16_before || i >= result.bf16_from;
      const auto slot =
          static_cast<std::size_t>(slot_of(model.layers[static_cast<std::size_t>(i)], bf16_layer));
      if (i >= first_full_layer) {
        ++out.full_layers[slot];
        continue;
      }
      if (group.count == 0) group.first = i;
      ++group.layers[slot];
      ++group.count;
      if (group.count == group_size || i + 1 == first_full_layer || i + 1 == end) {
        group.last = i;
        const bool seen =
            std::any_of(out.groups.begin(), out.groups.end(),
                        [&](const ChunkLayers::Group& g) { return g.layers == group.layers; });
        if (!seen) out.groups.push_back(group);
        group = {};
      }
    }
  }
  const auto compact = [&](const std::array<std::int64_t, kind_slots>& per_slot, SlotCounts& out) {
    for (std::int32_t slot = 0; slot < kind_slots; ++slot) {
      const std::int64_t count = per_slot[static_cast<std::size_t>(slot)];
      if (count == 0) continue;
      out.entries[static_cast<std::size_t>(out.size++)] = {slot, count};
      result.used_slots |= 1u << slot;
    }
  };
  for (ChunkLayers& chunk : result.chunks) {
    compact(chunk.full_layers, chunk.full);
    for (ChunkLayers::Group& g : chunk.groups) compact(g.layers, g.kinds);
  }
  return result;
}

const RankLayers& cached_rank_layers(LayerPieceCache& cache, const Model& model,
                                     const StagePlan& plan, std::int64_t rank,
                                     const RecomputeConfig& recompute,
                                     const TrainingConfig& training) {
  const auto quantised = quantised_layers(model, training);
  const bool full = recompute.policy == RecomputePolicy::full;
  auto& slots = full ? cache.full_layers : cache.plain_layers;
  if (slots.size() < static_cast<std::size_t>(plan.pipeline_ranks))
    slots.resize(static_cast<std::size_t>(plan.pipeline_ranks));
  auto& entry = slots[static_cast<std::size_t>(rank)];
  if (!entry ||
      (full && (entry->method != recompute.method || entry->group_layers != recompute.layers)) ||
      entry->bf16_before != quantised.first || entry->bf16_from != quantised.second) {
    entry = rank_layers(model, plan, rank, recompute, quantised);
  }
  return *entry;
}

}  // namespace

StageActivationTerms stage_activation_terms(const Model& model, const ParallelLayout& layout,
                                            const TrainingConfig& training, const StagePlan& plan,
                                            std::int64_t rank, std::int64_t micro_batches) {
  LayerPieceCache cache;
  prepare_piece_cache(cache, training);
  return stage_activation_terms(model, layout, training, plan, rank, micro_batches, cache);
}

namespace {

// The layer kinds a rank holds (its chunks' layers and their MTP layers): its transients are
// the largest over them.
struct KindsHeld {
  std::array<bool, 3> attention{};  // per AttentionKind
  std::array<bool, 2> mlp{};        // per MlpKind
  bool moe = false;
  bool quantised = false;  // a layer computing in the recipe (else every layer is bf16)
  void add(LayerKind kind, bool in_recipe = true) {
    quantised |= in_recipe;
    attention[static_cast<std::size_t>(kind.attention)] = true;
    mlp[static_cast<std::size_t>(kind.mlp)] = true;
    moe |= kind.mlp == MlpKind::moe;
  }
};

KindsHeld kinds_held(const Model& model, const RankLayers& layers) {
  KindsHeld held;
  // Every layer is in `layers`, kept or checkpointed.
  for (int slot = 0; slot < kind_slots; ++slot) {
    if ((layers.used_slots >> slot & 1u) != 0) held.add(kind_of(slot), !bf16_slot(slot));
  }
  for (const ChunkLayers& split : layers.chunks) {
    if (split.stage->mtp_layers > 0) held.add(model.mtp_layer);
  }
  return held;
}

// A transient of the rank's list; a zero-byte one only when its formula overflowed (the error
// then names it).
inline void keep_transient(RankPieces& result, const ActivationPiece& p,
                           TransientScope scope = {}) {
  if (p.bytes > 0 || p.formula.overflowed()) {
    result.transients.push_back(p);
    result.scopes.push_back(scope);
  }
}

// A transient shared by the ranks of one piece generation, made on first use.
template <typename Slot, typename Make>
const auto& shared_once(Slot& slot, Make make) {
  if (!slot) slot = make();
  return *slot;
}

// The chunk's AttnRes slots and mixing weights; returns the slots (K) at its last mixing site.
std::int64_t add_attn_res_pieces(const Model& model, const TokenShape& shape,
                                 const VirtualStage& chunk, RankPieces::Chunk& pieces) {
  const std::int64_t block = model.attn_res.block_size;
  const auto total_layers = static_cast<std::int64_t>(model.layers.size());
  const std::int64_t end = chunk.first_layer + chunk.layer_count;
  pieces.attn_res_slots = attn_res_slots_piece(model, shape, attn_res_slots_before(end, block));
  // Each layer i mixes at sites_per_layer sites over 1 + ceil(i / block) slots.
  std::int64_t slot_sites =
      model.attn_res.sites_per_layer * (chunk.layer_count + attn_res_slot_sum(end, block) -
                                        attn_res_slot_sum(chunk.first_layer, block));
  std::int64_t last_site_slots = attn_res_slots_before(std::max<std::int64_t>(end - 1, 0), block);
  if (chunk.head) {
    slot_sites += 1 + attn_res_slots_before(total_layers, block);
    last_site_slots = attn_res_slots_before(total_layers, block);
  }
  pieces.attn_res_weights = attn_res_weights_piece(shape, slot_sites);
  return last_site_slots;
}

// The largest pipeline buffers over a rank's chunks and the factors of its formula.
struct PipelineBuffers {
  std::int64_t bytes = 0;
  Formula formula;
};

// Pipeline buffers of one chunk: the input arriving from the previous virtual stage and the
// output leaving for the next one (both alive while a step sends and receives), kept when they
// are the rank's largest. False when they do not fit in int64.
bool offer_pipeline_buffers(const Model& model, const TokenShape& shape, const StagePlan& plan,
                            std::int64_t rank, const VirtualStage& chunk,
                            PipelineBuffers& largest) {
  const std::int64_t block = model.attn_res.block_size;
  const std::int64_t width = shape.sequence_parallel && shape.tensor_parallel > 1
                                 ? model.hidden / shape.tensor_parallel
                                 : model.hidden;
  // DualPipeV's turn of the V (the last rank's chunk 0 into its chunk 1) stays on the rank:
  // dualpipev.py appends a detached view of the output, nothing is sent or received.
  const bool v_turn =
      plan.schedule == PipelineSchedule::dualpipev && rank == plan.pipeline_ranks - 1;
  const bool v_turn_out = v_turn && chunk.chunk == 0;
  const bool v_turn_in = v_turn && chunk.chunk == 1;
  const std::int64_t receive_slots =
      chunk.embedding || v_turn_in ? 0 : 1 + attn_res_slots_before(chunk.first_layer, block);
  const std::int64_t send_slots =
      chunk.head || v_turn_out
          ? 0
          : 1 + attn_res_slots_before(chunk.first_layer + chunk.layer_count, block);
  std::int64_t buffers = 0;
  bool fits = true;
  // Each direction: [S/CP] x [B] x [width] x [1 + slots] x 2 B (pipeline_buffer_formula).
  for (const std::int64_t slots : {receive_slots, send_slots}) {
    if (slots == 0) continue;
    std::int64_t one = 2;
    fits = checked_mul(one, shape.sequence, &one) && checked_mul(one, shape.micro_batch, &one) &&
           checked_mul(one, width, &one) && checked_mul(one, slots, &one) &&
           checked_add(buffers, one, &buffers) && fits;
  }
  if (buffers > largest.bytes) {
    largest.bytes = buffers;
    largest.formula = Formula()
                          .number(shape.sequence)
                          .number(shape.micro_batch)
                          .number(width)
                          .number(width != model.hidden)
                          .number(receive_slots)
                          .number(send_slots);
  }
  return fits;
}

// The rank's largest pipeline buffers, and in backward the same boundary carrying the gradients:
// the output's gradient arrives and the input's gradient leaves (Megatron's
// send_backward_recv_forward / recv_backward).
void keep_pipeline_buffer_transients(const PipelineBuffers& largest, bool attn_res,
                                     RankPieces& result) {
  if (largest.bytes <= 0) return;
  ActivationPiece buffers = make_piece(
      attn_res ? term_pipeline_buffers_attn_res : term_pipeline_buffers, largest.formula);
  buffers.bytes = largest.bytes;
  keep_transient(result, buffers, {TransientPlace::boundary, -1});
  ActivationPiece gradients = make_piece(
      attn_res ? term_pipeline_gradient_buffers_attn_res : term_pipeline_gradient_buffers,
      largest.formula);
  gradients.bytes = largest.bytes;
  keep_transient(result, gradients, {TransientPlace::boundary, -1});
}

// Context parallelism's KV exchange and its backward counterpart: the largest over the
// attention kinds the rank holds.
void keep_context_parallel_transients(const Model& model, const TokenShape& shape,
                                      const TrainingConfig& training, const KindsHeld& held,
                                      LayerPieceCache::SharedTransients& shared,
                                      RankPieces& result) {
  ActivationPiece largest;
  ActivationPiece largest_backward;
  for (int k = 0; k < 3; ++k) {
    if (!held.attention[static_cast<std::size_t>(k)]) continue;
    const auto kind = static_cast<AttentionKind>(k);
    const ActivationPiece& p = shared_once(shared.cp_exchange[static_cast<std::size_t>(k)], [&] {
      return context_parallel_exchange_piece(model, shape, kind, training);
    });
    if (p.bytes > largest.bytes) largest = p;
    const auto& b = shared_once(shared.cp_backward[static_cast<std::size_t>(k)], [&] {
      return context_parallel_backward_piece(model, shape, kind, training);
    });
    if (b && b->bytes > largest_backward.bytes) largest_backward = *b;
  }
  if (largest.info != nullptr) keep_transient(result, largest);
  if (largest_backward.info != nullptr) keep_transient(result, largest_backward);
}

// The backward working set of the layer being back-propagated: the largest attention half and
// the largest MLP half over the layer kinds of the rank.
void keep_backward_working_set(const Model& model, const ParallelLayout& layout,
                               const TokenShape& shape, const TrainingConfig& training,
                               const KindsHeld& held, LayerPieceCache::SharedTransients& shared,
                               RankPieces& result) {
  ActivationPiece attention;
  for (int k = 0; k < 3; ++k) {
    if (!held.attention[static_cast<std::size_t>(k)]) continue;
    const ActivationPiece& p =
        shared_once(shared.attention_backward[static_cast<std::size_t>(k)], [&] {
          return attention_backward_piece(model, static_cast<AttentionKind>(k), shape, training);
        });
    if (p.bytes > attention.bytes || p.formula.overflowed()) attention = p;
  }
  if (attention.info != nullptr) keep_transient(result, attention);
  ActivationPiece mlp;
  for (int k = 0; k < 2; ++k) {
    if (!held.mlp[static_cast<std::size_t>(k)]) continue;
    const ActivationPiece& p = shared_once(shared.mlp_backward[static_cast<std::size_t>(k)], [&] {
      return mlp_backward_piece(model, static_cast<MlpKind>(k), shape, training, layout);
    });
    if (p.bytes > mlp.bytes || p.formula.overflowed()) mlp = p;
  }
  if (mlp.info != nullptr) keep_transient(result, mlp);
}

// The rank's AttnRes pieces per chunk and its transients other than the recompute working set,
// in the order the stage lists them: the head's (per chunk), MoE dispatch, KDA forward, AttnRes
// mixing, pipeline buffers, context parallelism, then the backward working set.
void build_rank_pieces(const Model& model, const ParallelLayout& layout, const TokenShape& shape,
                       const TrainingConfig& training, const StagePlan& plan, std::int64_t rank,
                       const RankLayers& layers, LayerPieceCache& cache, std::int64_t padded,
                       RankPieces& result) {
  result.chunks.clear();
  result.transients.clear();
  result.scopes.clear();
  result.largest_transient_bytes = 0;
  result.fits = true;
  result.generation = cache.generation;
  const KindsHeld held = kinds_held(model, layers);
  result.has_moe = held.moe;
  const bool attn_res = model.attn_res.block_size > 0;
  std::int64_t largest_slots = 0;  // AttnRes K at the rank's last mixing site
  PipelineBuffers buffers;
  for (const ChunkLayers& split : layers.chunks) {
    const VirtualStage& chunk = *split.stage;
    RankPieces::Chunk& pieces = result.chunks.emplace_back();
    if (attn_res) {
      largest_slots = std::max(largest_slots, add_attn_res_pieces(model, shape, chunk, pieces));
    }
    if (chunk.head) {
      if (!cache.head_transients) {
        cache.head_transients = training.framework == Framework::torchtitan
                                    ? torchtitan_head_transients(model, shape, padded)
                                    : head_transients(shape, training, padded);
      }
      const auto chunk_slot = static_cast<std::int16_t>(result.chunks.size() - 1);
      for (const ActivationPiece& p : *cache.head_transients)
        keep_transient(result, p, {TransientPlace::chunk, chunk_slot});
    }
    result.fits = offer_pipeline_buffers(model, shape, plan, rank, chunk, buffers) && result.fits;
  }
  // A rank holding only bf16 layers of a quantised run has their transients.
  const bool all_bf16 = training.low_precision.quantised() && !held.quantised;
  const TrainingConfig bf16_inputs = all_bf16 ? bf16_training(training) : TrainingConfig{};
  const TrainingConfig& layer_training = all_bf16 ? bf16_inputs : training;
  LayerPieceCache::SharedTransients& shared = all_bf16 ? cache.shared_bf16 : cache.shared;
  if (held.moe) {
    keep_transient(result, shared_once(shared.moe_dispatch, [&] {
                     return moe_dispatch_piece(model, shape, layout, layer_training);
                   }));
  }
  if (held.attention[static_cast<std::size_t>(AttentionKind::kda)]) {
    const auto& p = shared_once(
        shared.kda_forward, [&] { return kda_forward_transient(model, shape, layer_training); });
    if (p) keep_transient(result, *p);
  }
  if (const auto p = quantised_forward_transient(model, shape, layer_training, layout,
                                                 held.mlp[static_cast<std::size_t>(MlpKind::dense)],
                                                 held.moe)) {
    keep_transient(result, *p);
  }
  if (attn_res) {
    keep_transient(result, attn_res_internal_piece(model, shape, training, largest_slots));
  }
  keep_pipeline_buffer_transients(buffers, attn_res, result);
  if (shape.context_parallel > 1) {
    keep_context_parallel_transients(model, shape, layer_training, held, shared, result);
  }
  keep_backward_working_set(model, layout, shape, layer_training, held, shared, result);
  if (cache.sharding.sharding.fsdp()) {
    std::vector<const VirtualStage*> chunks;
    for (const ChunkLayers& split : layers.chunks) chunks.push_back(split.stage);
    append_sharding_transients(model, layout, cache.sharding, chunks, result.transients,
                               result.scopes);
  }
  result.wide_bytes = {};
  for (std::size_t i = 0; i < result.transients.size(); ++i) {
    const ActivationPiece& p = result.transients[i];
    result.fits = result.fits && !p.formula.overflowed();
    result.largest_transient_bytes = std::max(result.largest_transient_bytes, p.bytes);
    const TransientPlace place = result.scopes[i].place;
    if (place == TransientPlace::phase_wide) {
      result.fits = checked_add(result.wide_bytes[0], p.bytes, &result.wide_bytes[0]) &&
                    checked_add(result.wide_bytes[1], p.bytes, &result.wide_bytes[1]) &&
                    result.fits;
    } else if (place == TransientPlace::pass_wide) {
      std::int64_t& wide = result.wide_bytes[p.info->in_backward ? 1 : 0];
      result.fits = checked_add(wide, p.bytes, &wide) && result.fits;
    }
  }
  base_pass_options(result.transients, result.scopes,
                    std::max<std::int64_t>(plan.chunks_per_rank, 1), result.pass_options,
                    result.inner_backward);
}

// The pieces of one layer kind for the cache's generation (built on first use), with the bytes
// the pieces `dropped` leaves are summed once per recompute setting.
const LayerPieces& kind_pieces(LayerPieceCache& cache, const Model& model, int slot,
                               const TokenShape& shape, const TrainingConfig& training,
                               const ParallelLayout& layout, std::uint32_t dropped) {
  const LayerKind kind = kind_of(slot);
  const bool bf16_layer = bf16_slot(slot);
  LayerPieces& entry = cache.kinds[static_cast<std::size_t>(slot)];
  auto& attention =
      cache.attention_lists[static_cast<std::size_t>(kind.attention) + (bf16_layer ? 3 : 0)];
  auto& mlp = cache.mlp_lists[static_cast<std::size_t>(kind.mlp) + (bf16_layer ? 2 : 0)];
  entry.attention = &attention.pieces;
  entry.mlp = &mlp.pieces;
  if (entry.generation != cache.generation) {
    const bool stale =
        attention.generation != cache.generation || mlp.generation != cache.generation;
    const TrainingConfig bf16_inputs =
        bf16_layer && stale ? bf16_training(training) : TrainingConfig{};
    const TrainingConfig& inputs = bf16_layer ? bf16_inputs : training;
    if (attention.generation != cache.generation) {
      attention_pieces_into(attention.pieces, model, kind.attention, shape, inputs);
      attention.generation = cache.generation;
    }
    if (mlp.generation != cache.generation) {
      mlp_pieces_into(mlp.pieces, model, kind.mlp, shape, inputs, layout);
      mlp.generation = cache.generation;
    }
    // Everything one layer keeps without recompute (what a checkpointed group rebuilds).
    const std::uint32_t never_kept =
        training.framework == Framework::torchtitan ? torchtitan_saved_only_by_sac : 0u;
    entry.all_bytes = layer_bytes(entry, never_kept);
    entry.sac_only_bytes = 0;
    if (never_kept != 0) {
      for (const auto* list : {entry.attention, entry.mlp}) {
        for (const ActivationPiece& piece : *list) {
          if ((piece.dropped_by & never_kept) != 0) entry.sac_only_bytes += piece.bytes;
        }
      }
    }
    entry.all_fits = true;
    for (const auto* list : {entry.attention, entry.mlp}) {
      for (const ActivationPiece& piece : *list) entry.all_fits &= !piece.formula.overflowed();
    }
    entry.all_fits &= entry.all_bytes != std::numeric_limits<std::int64_t>::max();
    entry.kept_mask = ~dropped;  // not computed yet
    entry.generation = cache.generation;
  }
  if (entry.kept_mask != dropped && dropped == 0) {  // nothing dropped: every piece is kept
    entry.kept_bytes = entry.all_bytes;
    entry.kept_fits = entry.all_fits;
    entry.kept_mask = 0;
  }
  if (entry.kept_mask != dropped) {
    // Bytes are never negative (an overflowed piece saturates), so the sum saturates exactly when
    // the kept pieces do not fit.
    std::int64_t sum = 0;
    bool fits = true;
    for (const auto* list : {entry.attention, entry.mlp}) {
      for (const ActivationPiece& piece : *list) {
        if ((piece.dropped_by & dropped) != 0) continue;
        fits = fits && !piece.formula.overflowed();
        if (sum != std::numeric_limits<std::int64_t>::max() &&
            !checked_add(sum, piece.bytes, &sum)) {
          sum = std::numeric_limits<std::int64_t>::max();
        }
      }
    }
    entry.kept_fits = fits && sum != std::numeric_limits<std::int64_t>::max();
    entry.kept_bytes = sum;
    entry.kept_mask = dropped;
  }
  return entry;
}

// A peaks estimate of a rank that kept its peak inputs for this piece generation and recompute
// setting (RankPeakInputs): one micro-batch's stored bytes per chunk and the pass options are
// taken as they are, so a sweep over the micro-batches per step (gbs) only finds the peak.
void peaks_from_kept_inputs(LayerPieceCache& cache, const StagePlan& plan, std::int64_t rank,
                            std::int64_t micro_batches, const RankPeakInputs& peak_inputs,
                            StageActivationTerms& result) {
  result.chunk_stored_bytes.assign(peak_inputs.chunk_bytes.begin(), peak_inputs.chunk_bytes.end());
  bool fits = peak_inputs.fits;
  result.moment = find_peak_moment(cache, plan, rank, micro_batches, result.chunk_stored_bytes,
                                   peak_inputs.options, result.in_flight_per_chunk,
                                   result.largest_transient_bytes, fits);
  for (std::size_t c = 0; c < result.chunk_stored_bytes.size(); ++c) {
    std::int64_t bytes = 0;
    fits = checked_mul(result.chunk_stored_bytes[c], result.in_flight_per_chunk[c], &bytes) &&
           checked_add(result.stored_bytes, bytes, &result.stored_bytes) && fits;
  }
  result.fits = fits;
  result.moment.transient = -1;
  result.moment.enclosing = -1;
}

// What stage_activation_terms adds up over a rank's chunks: the stored pieces per chunk
// (StoredSums), the largest recompute working set (the layers rebuilt together in backward, a
// transient that encloses their backward) and whether every product fits.
struct ChunkWalk {
  const Model& model;
  const ParallelLayout& layout;
  const TrainingConfig& training;
  const TokenShape& shape;
  LayerPieceCache& cache;
  std::uint32_t dropped;  // the modules selective recompute drops (0: none)
  std::int64_t padded;    // the padded vocabulary
  bool peaks_only;
  StoredSums& sums;
  std::array<const LayerPieces*, kind_slots> kinds{};  // the layer kinds the rank's chunks hold
  std::int64_t working_set = 0;
  ActivationPiece working_set_piece{};  // its name and factors (not needed for peaks)
  bool fits = true;
};

// Checkpointed groups (full recompute): the whole working set of one group is rebuilt in
// backward; the first group of the largest composition names it.
void add_checkpointed_groups(ChunkWalk& w, const ChunkLayers& split) {
  for (const ChunkLayers::Group& group : split.groups) {
    std::int64_t group_bytes = 0;
    for (const SlotCount& k : group.kinds) {
      std::int64_t bytes = 0;
      w.fits = checked_mul(w.kinds[static_cast<std::size_t>(k.slot)]->all_bytes, k.count, &bytes) &&
               checked_add(group_bytes, bytes, &group_bytes) && w.fits;
    }
    if (group_bytes <= w.working_set) continue;
    w.working_set = group_bytes;
    w.working_set_piece.info = &term_recompute_group;
    if (!w.peaks_only) {
      w.working_set_piece.formula =
          Formula().number(group.count).number(group.first).number(group.last).number(group_bytes);
    }
  }
}

// Layers that keep everything, counted per kind (the pieces of a kind are built once); under
// selective recompute the pieces it drops are the working set rebuilt in backward.
void add_full_layers(ChunkWalk& w, const ChunkLayers& split, std::int64_t c) {
  for (const SlotCount& k : split.full) {
    const LayerKind kind = kind_of(k.slot);
    const LayerPieces& pieces = *w.kinds[static_cast<std::size_t>(k.slot)];
    if (w.peaks_only) {
      w.sums.add_kept(pieces.kept_bytes, pieces.kept_fits, k.count, c);
    } else {
      w.sums.add_all(attention_group(kind.attention, false), *pieces.attention, k.count, c);
      w.sums.add_all(mlp_group(kind.mlp, false), *pieces.mlp, k.count, c);
    }
    // What selective recompute rebuilds: the pieces it drops (all but the kept ones; torchtitan's
    // per-op SAC also saves pieces no AC keeps, so those are left out of the rebuilt set).
    const std::int64_t recomputed = pieces.all_bytes - pieces.kept_bytes + pieces.sac_only_bytes;
    if (w.training.recompute.policy != RecomputePolicy::selective || w.dropped == 0 ||
        recomputed <= w.working_set)
      continue;
    w.working_set = recomputed;
    w.working_set_piece.info = &term_recompute_selective;
    if (!w.peaks_only) {
      w.working_set_piece.formula = Formula()
                                        .number(static_cast<std::int64_t>(kind.attention))
                                        .number(static_cast<std::int64_t>(kind.mlp))
                                        .number(recomputed);
    }
  }
}

// The chunk's MTP layers: their extra pieces, their layer's pieces and their output head.
void add_mtp_layers(ChunkWalk& w, std::int64_t mtp_layers, std::int64_t c) {
  LayerPieceCache& cache = w.cache;
  if (!cache.mtp_extra) cache.mtp_extra = mtp_extra_pieces(w.model, w.shape);
  const LayerPieces& pieces = kind_pieces(cache, w.model, slot_of(w.model.mtp_layer), w.shape,
                                          w.training, w.layout, w.dropped);
  const RecomputeConfig& recompute = w.training.recompute;
  if (recompute.policy == RecomputePolicy::full &&
      recompute.method == FullRecomputeMethod::uniform) {
    // Megatron checkpoints each MTP layer under uniform full recompute: it keeps its two
    // inputs, and its working set comes back in backward.
    if (!cache.mtp_checkpoint_inputs)
      cache.mtp_checkpoint_inputs = mtp_checkpoint_inputs_piece(w.model, w.shape);
    w.sums.add(TermGroup::mtp, *cache.mtp_checkpoint_inputs, mtp_layers, c);
    std::int64_t mtp_bytes = pieces.all_bytes;
    for (const ActivationPiece& p : *cache.mtp_extra) {
      w.fits = checked_add(mtp_bytes, p.bytes, &mtp_bytes) && w.fits;
    }
    if (mtp_bytes > w.working_set) {
      // The MTP layer follows the decoder's layers: it is numbered after the last one.
      const auto mtp_index = static_cast<std::int64_t>(w.model.layers.size());
      w.working_set = mtp_bytes;
      w.working_set_piece.info = &term_recompute_group;
      w.working_set_piece.formula =
          Formula().number(1).number(mtp_index).number(mtp_index).number(mtp_bytes);
    }
  } else {
    w.sums.add_all(TermGroup::mtp, *cache.mtp_extra, mtp_layers, c, 0);
    w.sums.add_all(attention_group(w.model.mtp_layer.attention, true), *pieces.attention,
                   mtp_layers, c);
    w.sums.add_all(mlp_group(w.model.mtp_layer.mlp, true), *pieces.mlp, mtp_layers, c);
  }
  w.sums.add_all(TermGroup::mtp_output, *cache.head, mtp_layers, c, 0);
}

// One micro-batch's stored pieces of one virtual chunk, and its recompute working sets.
void add_chunk(ChunkWalk& w, const ChunkLayers& split, const RankPieces::Chunk& chunk_pieces) {
  const VirtualStage& chunk = *split.stage;
  const std::int64_t c = chunk.chunk;
  LayerPieceCache& cache = w.cache;
  add_checkpointed_groups(w, split);
  add_full_layers(w, split, c);
  if (split.checkpointed_groups > 0)
    w.sums.add(TermGroup::all_layers, *cache.checkpoint_input, split.checkpointed_groups, c);
  if (chunk.embedding && w.training.dropout) {
    if (!cache.embedding_dropout)
      cache.embedding_dropout = embedding_dropout_piece(w.model, w.shape);
    w.sums.add(TermGroup::embedding, *cache.embedding_dropout, 1, c);
  }
  if (w.model.attn_res.block_size > 0) {
    w.sums.add(TermGroup::attn_res, chunk_pieces.attn_res_slots, 1, c);
    w.sums.add(TermGroup::attn_res, chunk_pieces.attn_res_weights, 1, c);
  }
  if (chunk.head || chunk.mtp_layers > 0) {
    if (!cache.head) cache.head = head_pieces(w.model, w.shape, w.training, w.padded);
  }
  // The head's pieces are never recomputed (mask 0).
  if (chunk.head) w.sums.add_all(TermGroup::output, *cache.head, 1, c, 0);
  if (chunk.mtp_layers > 0) add_mtp_layers(w, chunk.mtp_layers, c);
}

// From the second peaks estimate with the same piece generation and recompute setting on, the
// rank keeps its peak inputs (peaks_from_kept_inputs); a sweep that changes them at every point
// does not pay for keeping them. True when they were kept: `options` then holds the rank's old
// storage and the peak is found with peak_inputs.options.
bool keep_peak_inputs(RankPeakInputs& peak_inputs, std::uint64_t generation,
                      const RecomputeConfig& recompute, bool peaks_only,
                      const std::vector<std::int64_t>& chunk_bytes, bool fits,
                      std::vector<PassOption>& options) {
  if (!peaks_only) return false;
  if (peak_inputs.seen_generation != generation || !(peak_inputs.seen_recompute == recompute)) {
    peak_inputs.seen_generation = generation;
    peak_inputs.seen_recompute = recompute;
    return false;
  }
  peak_inputs.generation = generation;
  peak_inputs.recompute = recompute;
  peak_inputs.chunk_bytes.assign(chunk_bytes.begin(), chunk_bytes.end());
  peak_inputs.fits = fits;
  // The options move to the rank (the scratch list takes the rank's old storage).
  std::swap(peak_inputs.options, options);
  return true;
}

// Appends the stage's terms: the stored sums for the micro-batches alive at the peak moment,
// then the rank's transients and last the recompute working set (when there is one).
void append_stage_terms(const StoredSums& sums, const RankPieces& pieces_of_rank,
                        const ActivationPiece* working_set, bool fits,
                        StageActivationTerms& result) {
  std::vector<Term>& stored = result.into != nullptr ? *result.into : result.stored;
  std::vector<Term>& out = result.into != nullptr ? *result.into : result.transients;
  result.first_stored = static_cast<std::int64_t>(stored.size());
  result.activation_units.clear();
  result.fits = sums.append_terms(&stored, result.stored_bytes, result.in_flight_per_chunk,
                                  &result.activation_units) &&
                fits;
  result.first_transient = static_cast<std::int64_t>(out.size());
  const auto emit = [&](const ActivationPiece& p, TransientScope scope) {
    Term& t = out.emplace_back();
    t.info = p.info;
    t.bytes = p.bytes;
    t.name_value = p.name_value;
    t.formula = p.formula;
    t.family = Family::transient;
    t.allocated_at = p.info->in_backward ? AllocationPoint::backward : AllocationPoint::forward;
    t.place = scope.place;
    t.chunk = scope.chunk;
  };
  const std::vector<ActivationPiece>& transients = pieces_of_rank.transients;
  for (std::size_t i = 0; i < transients.size(); ++i) emit(transients[i], pieces_of_rank.scopes[i]);
  if (working_set != nullptr) emit(*working_set, {TransientPlace::recompute, -1});
  if (result.moment.transient >= 0) result.moment.transient += result.first_transient;
  if (result.moment.enclosing >= 0) result.moment.enclosing += result.first_transient;
  result.largest_transient = result.moment.transient;
}

}  // namespace

StageActivationTerms stage_activation_terms(const Model& model, const ParallelLayout& layout,
                                            const TrainingConfig& training, const StagePlan& plan,
                                            std::int64_t rank, std::int64_t micro_batches,
                                            LayerPieceCache& cache, std::vector<Term>* into,
                                            bool peaks_only) {
  StageActivationTerms result;
  // Per-chunk lists handed back by the previous stage's report (estimate.cpp), so that an
  // estimate into a kept report allocates none.
  result.in_flight_per_chunk = std::move(cache.spare_in_flight);
  result.chunk_stored_bytes = std::move(cache.spare_chunk_bytes);
  result.into = into;
  const RecomputeConfig& recompute = training.recompute;
  const auto ranks = static_cast<std::size_t>(plan.pipeline_ranks);
  if (cache.rank_peak_inputs.size() < ranks) cache.rank_peak_inputs.resize(ranks);
  RankPeakInputs& peak_inputs = cache.rank_peak_inputs[static_cast<std::size_t>(rank)];
  if (peaks_only && peak_inputs.generation == cache.generation &&
      peak_inputs.recompute == recompute) {
    peaks_from_kept_inputs(cache, plan, rank, micro_batches, peak_inputs, result);
    return result;
  }
  const TokenShape shape = token_shape(training, layout);
  const std::uint32_t dropped = dropped_pieces(training);
  const std::int64_t padded = padded_vocab(model.vocab, layout);

  // The rank's layers per chunk and its pieces that do not depend on the micro-batches in
  // flight (AttnRes, pipeline buffers, the transients), built once per piece generation.
  const RankLayers& layers = cached_rank_layers(cache, model, plan, rank, recompute, training);
  if (cache.ranks.size() < ranks) cache.ranks.resize(ranks);
  RankPieces& pieces_of_rank = cache.ranks[static_cast<std::size_t>(rank)];
  if (pieces_of_rank.generation != cache.generation) {
    build_rank_pieces(model, layout, shape, training, plan, rank, layers, cache, padded,
                      pieces_of_rank);
  }
  if (!cache.checkpoint_input) cache.checkpoint_input = checkpoint_input_piece(model, shape);

  // One micro-batch's stored pieces per chunk and the largest recompute working set.
  StoredSums sums(dropped, cache.stored_blocks, cache.stored_units,
                  std::max<std::int64_t>(plan.chunks_per_rank, 1), peaks_only);
  ChunkWalk walk{.model = model,
                 .layout = layout,
                 .training = training,
                 .shape = shape,
                 .cache = cache,
                 .dropped = dropped,
                 .padded = padded,
                 .peaks_only = peaks_only,
                 .sums = sums,
                 .fits = pieces_of_rank.fits};
  for (int slot = 0; slot < kind_slots; ++slot) {
    if ((layers.used_slots >> slot & 1u) != 0) {
      walk.kinds[static_cast<std::size_t>(slot)] =
          &kind_pieces(cache, model, slot, shape, training, layout, dropped);
    }
  }
  for (std::size_t chunk_slot = 0; chunk_slot < layers.chunks.size(); ++chunk_slot) {
    add_chunk(walk, layers.chunks[chunk_slot], pieces_of_rank.chunks[chunk_slot]);
  }

  // The peak moment of the step timeline: each pass weighed with its largest transients.
  std::vector<PassOption>& options = cache.pass_options;
  options.assign(pieces_of_rank.pass_options.begin(), pieces_of_rank.pass_options.end());
  if (walk.working_set > 0) {
    walk.working_set_piece.bytes = walk.working_set;
    add_working_set_option(options, walk.working_set,
                           static_cast<std::int64_t>(pieces_of_rank.transients.size()),
                           pieces_of_rank.transients, pieces_of_rank.inner_backward, walk.fits);
  }
  bool fits = sums.chunk_bytes(result.chunk_stored_bytes) && walk.fits;
  // The pass-wide transients sit beside whichever transient each pass holds.
  for (std::size_t kind = 0; kind < options.size(); ++kind) {
    const std::int64_t wide = pieces_of_rank.wide_bytes[kind & 1];
    if (wide > 0) fits = checked_add(options[kind].bytes, wide, &options[kind].bytes) && fits;
  }
  const bool kept = keep_peak_inputs(peak_inputs, cache.generation, recompute, peaks_only,
                                     result.chunk_stored_bytes, fits, options);
  result.moment = find_peak_moment(cache, plan, rank, micro_batches, result.chunk_stored_bytes,
                                   kept ? peak_inputs.options : options, result.in_flight_per_chunk,
                                   result.largest_transient_bytes, fits);
  if (peaks_only) {
    result.fits =
        sums.append_terms(nullptr, result.stored_bytes, result.in_flight_per_chunk) && fits;
    result.moment.transient = -1;
    result.moment.enclosing = -1;
    return result;
  }
  append_stage_terms(sums, pieces_of_rank, walk.working_set > 0 ? &walk.working_set_piece : nullptr,
                     fits, result);
  return result;
}

void append_kept_pipeline_input_terms(const Model& model, const ParallelLayout& layout,
                                      const TrainingConfig& training, const StagePlan& plan,
                                      std::int64_t rank, std::vector<Term>& out) {
  // DualPipeV.step drops each input at its backward and clears its lists at the end of the step
  // (dualpipe/dualpipev.py _backward_compute_chunk, _reset_states): nothing is kept.
  if (plan.schedule == PipelineSchedule::dualpipev) return;
  std::int64_t fed_chunks = 0;
  for (const VirtualStage& chunk : plan.virtual_stages) {
    if (chunk.pipeline_rank == rank && !chunk.embedding) ++fed_chunks;
  }
  if (fed_chunks == 0) return;
  const TokenShape shape = token_shape(training, layout);
  Formula f = hidden_tokens(shape, model.hidden, label_id("h"));
  f.times(label_id("input + its gradient"), 2)
      .times(label_id("chunks fed by the previous stage"), fed_chunks)
      .bytes(2, label_id("bf16"));
  out.push_back(Term{.info = &term_kept_pipeline_input,
                     .bytes = f.value(),
                     .formula = f,
                     .family = Family::transient,
                     .tag = Tag::derived,
                     .allocated_at = AllocationPoint::optimizer_step,
                     .place = TransientPlace::between_steps});
}

}  // namespace stagemem
