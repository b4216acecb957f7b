#include "activation_terms.h"

#include <algorithm>
#include <array>
#include <limits>
#include <optional>

#include "activation_model.h"
#include "schedule.h"
#include "units.h"

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

// Sums identical pieces over layers and micro-batches: one term per (group, piece), in the order
// the pieces first appear. A group's pieces are the same list wherever the group occurs (GQA's
// attention pieces do not depend on the MLP kind), so a group is summed as one block; a single
// piece (checkpointed input, AttnRes slots and weights) is matched by its catalogue entry and
// keeps the bytes of its first occurrence.
class StoredSums {
 public:
  // `blocks` is scratch storage reused across stages (its capacity survives).
  StoredSums(std::uint32_t dropped, std::vector<StoredBlock>& blocks)
      : dropped_(dropped), blocks_(blocks) {
    blocks_.clear();
  }
  void add_all(TermGroup group, const std::vector<ActivationPiece>& pieces, std::int64_t copies,
               std::uint32_t dropped) {
    if (copies <= 0) return;
    for (StoredBlock& b : blocks_) {
      if (b.group == group && b.pieces != nullptr) {
        b.copies += copies;
        return;
      }
    }
    blocks_.push_back({group, &pieces, {}, copies, dropped});
  }
  void add_all(TermGroup group, const std::vector<ActivationPiece>& pieces, std::int64_t copies) {
    add_all(group, pieces, copies, dropped_);
  }
  void add(TermGroup group, const ActivationPiece& piece, std::int64_t copies) {
    if (copies <= 0 || piece.bytes == 0) return;
    for (StoredBlock& b : blocks_) {
      if (b.group == group && b.pieces == nullptr && b.single.info == piece.info) {
        b.copies += copies;
        return;
      }
    }
    blocks_.push_back({group, nullptr, piece, copies, 0});
  }
  // Appends the sums as terms (or, with `out` null, only adds up their bytes); false when one does
  // not fit in int64 bytes.
  bool append_terms(std::vector<Term>* out, std::int64_t& total) const {
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
    for (const StoredBlock& b : blocks_) {
      if (b.pieces == nullptr) {
        emit(b.group, b.single, b.copies);
        continue;
      }
      for (const ActivationPiece& p : *b.pieces) {
        if ((p.dropped_by & b.dropped) == 0 && (p.bytes != 0 || p.formula.overflowed()))
          emit(b.group, p, b.copies);
      }
    }
    return fits;
  }

 private:
  std::uint32_t dropped_;
  std::vector<StoredBlock>& blocks_;
};

// Sum of ceil(i / block) over i in [0, n): the values k = 1, 2, ... each cover `block` layers.
std::int64_t attn_res_slot_sum(std::int64_t n, std::int64_t block) {
  if (n <= 1 || block <= 0) return 0;
  const std::int64_t q = (n - 1) / block;
  const std::int64_t r = (n - 1) % block;
  return block * q * (q + 1) / 2 + r * (q + 1);
}

// The pieces a layer keeps, split so each half is labelled by its own kind.
std::int64_t layer_bytes(const LayerPieces& p, std::uint32_t dropped) {
  std::int64_t sum = 0;
  return checked_add(stored_bytes(p.attention, dropped), stored_bytes(p.mlp, dropped), &sum)
             ? sum
             : std::numeric_limits<std::int64_t>::max();
}

// Layer kinds index a small table: 3 attention kinds x 2 MLP kinds.
constexpr int kind_slots = 6;
int slot_of(LayerKind kind) {
  return static_cast<int>(kind.attention) * 2 + static_cast<int>(kind.mlp);
}
LayerKind kind_of(int slot) {
  return {static_cast<AttentionKind>(slot / 2), static_cast<MlpKind>(slot % 2)};
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

}  // namespace

void prepare_piece_cache(LayerPieceCache& cache, const TrainingConfig& training) {
  TrainingConfig inputs = training;
  inputs.global_batch = 0;
  inputs.flat_headroom_bytes = 0;
  inputs.recompute = {};
  if (cache.built_for && *cache.built_for == inputs) return;
  cache = LayerPieceCache{};
  cache.built_for = inputs;
}

StageActivationTerms stage_activation_terms(const Model& model, const ParallelLayout& layout,
                                            const TrainingConfig& training, const StagePlan& plan,
                                            std::int64_t rank, std::int64_t micro_batches) {
  LayerPieceCache cache;
  prepare_piece_cache(cache, training);
  return stage_activation_terms(model, layout, training, plan, rank, micro_batches, cache);
}

StageActivationTerms stage_activation_terms(const Model& model, const ParallelLayout& layout,
                                            const TrainingConfig& training, const StagePlan& plan,
                                            std::int64_t rank, std::int64_t micro_batches,
                                            LayerPieceCache& cache, std::vector<Term>* into,
                                            bool peaks_only) {
  StageActivationTerms result;
  result.into = into;
  const TokenShape shape = token_shape(training, layout);
  InFlight in_flight =
      in_flight_at_peak(plan.pipeline_ranks, plan.chunks_per_rank, rank, micro_batches);
  result.in_flight_per_chunk = std::move(in_flight.per_chunk);
  const RecomputeConfig& recompute = training.recompute;
  const std::uint32_t dropped =
      recompute.policy == RecomputePolicy::selective ? recompute.modules : 0;
  const std::int64_t block = model.attn_res.block_size;
  const std::int64_t total_layers = static_cast<std::int64_t>(model.layers.size());
  const std::int64_t padded = padded_vocab(model.vocab, layout);

  StoredSums sums(dropped, cache.stored_blocks);
  std::vector<ActivationPiece>& transients = cache.transients;
  transients.clear();
  const auto keep_transient = [&](const ActivationPiece& p) {
    if (p.bytes > 0 || p.formula.overflowed()) transients.push_back(p);
  };
  std::int64_t working_set = 0;  // recompute working set of one group / layer, backward
  ActivationPiece working_set_piece;
  bool has_moe = false;
  bool attention_kinds[3] = {false, false, false};
  bool mlp_kinds[2] = {false, false};
  std::int64_t largest_slots = 0;  // AttnRes K at the rank's last mixing site
  std::int64_t largest_pipeline_buffers = 0;
  Formula pipeline_formula;
  const std::int64_t boundary_width = shape.sequence_parallel && shape.tensor_parallel > 1
                                          ? model.hidden / shape.tensor_parallel
                                          : model.hidden;
  const ActivationPiece checkpoint_input = checkpoint_input_piece(model, shape);
  const auto pieces_for = [&](LayerKind kind) -> const LayerPieces& {
    auto& entry = cache.kinds[static_cast<std::size_t>(slot_of(kind))];
    if (!entry) {
      entry = LayerPieces{attention_pieces(model, kind.attention, shape, training),
                          mlp_pieces(model, kind.mlp, shape, training, layout)};
      entry->all_bytes = layer_bytes(*entry, 0);
      entry->kept_bytes = layer_bytes(*entry, dropped);
      entry->kept_mask = dropped;
    } else if (entry->kept_mask != dropped) {
      entry->kept_bytes = layer_bytes(*entry, dropped);
      entry->kept_mask = dropped;
    }
    return *entry;
  };
  bool fits = true;

  for (const VirtualStage& chunk : plan.virtual_stages) {
    if (chunk.pipeline_rank != rank) continue;
    const std::int64_t copies = result.in_flight_per_chunk[static_cast<std::size_t>(chunk.chunk)];
    const std::int64_t end = chunk.first_layer + chunk.layer_count;
    // Which layers of this chunk keep everything and which keep only a checkpointed input.
    std::int64_t checkpointed_groups = 0;
    std::int64_t group_size = 0;
    std::int64_t first_full_layer = chunk.first_layer;  // layers before this one are checkpointed
    if (recompute.policy == RecomputePolicy::full) {
      group_size = std::max<std::int64_t>(1, recompute.layers);
      if (recompute.method == FullRecomputeMethod::uniform) {
        checkpointed_groups = (chunk.layer_count + group_size - 1) / group_size;
        first_full_layer = end;
      } else {
        checkpointed_groups = std::min(group_size, chunk.layer_count);
        first_full_layer = chunk.first_layer + checkpointed_groups;
        group_size = 1;
      }
    }
    // Layers that keep everything, counted per kind; the pieces of a kind are built once.
    std::array<std::int64_t, kind_slots> full_layers{};
    std::int64_t group_bytes = 0;
    std::int64_t group_layers = 0;
    for (std::int64_t i = chunk.first_layer; i < end; ++i) {
      const LayerKind kind = model.layers[static_cast<std::size_t>(i)];
      has_moe |= kind.mlp == MlpKind::moe;
      attention_kinds[static_cast<int>(kind.attention)] = true;
      mlp_kinds[static_cast<int>(kind.mlp)] = true;
      if (i >= first_full_layer) {
        ++full_layers[static_cast<std::size_t>(slot_of(kind))];
        continue;
      }
      // Inside a checkpointed group: its whole working set is rebuilt in backward.
      fits = checked_add(group_bytes, pieces_for(kind).all_bytes, &group_bytes) && fits;
      ++group_layers;
      if (group_layers == group_size || i + 1 == first_full_layer || i + 1 == end) {
        if (group_bytes > working_set) {
          working_set = group_bytes;
          working_set_piece.info = &term_recompute_group;
          working_set_piece.formula = Formula()
                                          .number(group_layers)
                                          .number(i + 1 - group_layers)
                                          .number(i)
                                          .number(group_bytes);
        }
        group_bytes = 0;
        group_layers = 0;
      }
    }
    for (int slot = 0; slot < kind_slots; ++slot) {
      const std::int64_t layers = full_layers[static_cast<std::size_t>(slot)];
      if (layers == 0) continue;
      const LayerKind kind = kind_of(slot);
      const LayerPieces& pieces = pieces_for(kind);
      std::int64_t layer_copies = 0;
      fits = checked_mul(layers, copies, &layer_copies) && fits;
      sums.add_all(attention_group(kind.attention, false), pieces.attention, layer_copies);
      sums.add_all(mlp_group(kind.mlp, false), pieces.mlp, layer_copies);
      const std::int64_t recomputed = pieces.all_bytes - pieces.kept_bytes;
      if (dropped != 0 && recomputed > working_set) {
        working_set = recomputed;
        working_set_piece.info = &term_recompute_selective;
        working_set_piece.formula = Formula()
                                        .number(static_cast<std::int64_t>(kind.attention))
                                        .number(static_cast<std::int64_t>(kind.mlp))
                                        .number(recomputed);
      }
    }
    if (checkpointed_groups > 0)
      sums.add(TermGroup::all_layers, checkpoint_input, checkpointed_groups * copies);

    if (chunk.embedding && training.dropout) {
      sums.add(TermGroup::embedding, embedding_dropout_piece(model, shape), copies);
    }
    if (block > 0) {
      const std::int64_t slots = attn_res_slots_before(end, block);
      sums.add(TermGroup::attn_res, attn_res_slots_piece(model, shape, slots), copies);
      // Each layer i mixes at sites_per_layer sites over 1 + ceil(i / block) slots.
      std::int64_t slot_sites =
          model.attn_res.sites_per_layer * (chunk.layer_count + attn_res_slot_sum(end, block) -
                                            attn_res_slot_sum(chunk.first_layer, block));
      std::int64_t last_site_slots =
          attn_res_slots_before(std::max<std::int64_t>(end - 1, 0), block);
      if (chunk.head) {
        slot_sites += 1 + attn_res_slots_before(total_layers, block);
        last_site_slots = attn_res_slots_before(total_layers, block);
      }
      sums.add(TermGroup::attn_res, attn_res_weights_piece(shape, slot_sites), copies);
      largest_slots = std::max(largest_slots, last_site_slots);
    }
    if (chunk.head || chunk.mtp_layers > 0) {
      if (!cache.head) cache.head = head_pieces(model, shape, training, padded);
    }
    if (chunk.head) {
      // The head's pieces are never recomputed (mask 0).
      sums.add_all(TermGroup::output, *cache.head, copies, 0);
      if (!cache.head_transients) cache.head_transients = head_transients(shape, training, padded);
      for (const ActivationPiece& p : *cache.head_transients) keep_transient(p);
    }
    if (chunk.mtp_layers > 0) {
      if (!cache.mtp_extra) cache.mtp_extra = mtp_extra_pieces(model, shape);
      const LayerPieces& pieces = pieces_for(model.mtp_layer);
      std::int64_t mtp_copies = 0;
      fits = checked_mul(chunk.mtp_layers, copies, &mtp_copies) && fits;
      if (recompute.policy == RecomputePolicy::full &&
          recompute.method == FullRecomputeMethod::uniform) {
        // Megatron checkpoints each MTP layer under uniform full recompute: it keeps its two
        // inputs, and its working set comes back in backward.
        sums.add(TermGroup::mtp, mtp_checkpoint_inputs_piece(model, shape), mtp_copies);
        std::int64_t mtp_bytes = pieces.all_bytes;
        for (const ActivationPiece& p : *cache.mtp_extra) {
          fits = checked_add(mtp_bytes, p.bytes, &mtp_bytes) && fits;
        }
        if (mtp_bytes > working_set) {
          const std::int64_t mtp_index = total_layers;
          working_set = mtp_bytes;
          working_set_piece.info = &term_recompute_group;
          working_set_piece.formula =
              Formula().number(1).number(mtp_index).number(mtp_index).number(mtp_bytes);
        }
      } else {
        sums.add_all(TermGroup::mtp, *cache.mtp_extra, mtp_copies, 0);
        sums.add_all(attention_group(model.mtp_layer.attention, true), pieces.attention,
                     mtp_copies);
        sums.add_all(mlp_group(model.mtp_layer.mlp, true), pieces.mlp, mtp_copies);
      }
      sums.add_all(TermGroup::mtp_output, *cache.head, mtp_copies, 0);
      has_moe |= model.mtp_layer.mlp == MlpKind::moe;
      attention_kinds[static_cast<int>(model.mtp_layer.attention)] = true;
      mlp_kinds[static_cast<int>(model.mtp_layer.mlp)] = true;
    }
    // Pipeline buffers of this chunk: the input arriving from the previous virtual stage and the
    // output leaving for the next one (both alive while a step sends and receives).
    const std::int64_t receive_slots =
        chunk.embedding ? 0 : 1 + attn_res_slots_before(chunk.first_layer, block);
    const std::int64_t send_slots = chunk.head ? 0 : 1 + attn_res_slots_before(end, block);
    std::int64_t buffers = 0;
    // Each direction: [S/CP] x [B] x [width] x [1 + slots] x 2 B (pipeline_buffer_formula).
    for (const std::int64_t slots : {receive_slots, send_slots}) {
      if (slots == 0) continue;
      std::int64_t one = 2;
      fits = checked_mul(one, shape.sequence, &one) && checked_mul(one, shape.micro_batch, &one) &&
             checked_mul(one, boundary_width, &one) && checked_mul(one, slots, &one) &&
             checked_add(buffers, one, &buffers) && fits;
    }
    if (buffers > largest_pipeline_buffers) {
      largest_pipeline_buffers = buffers;
      pipeline_formula = Formula()
                             .number(shape.sequence)
                             .number(shape.micro_batch)
                             .number(boundary_width)
                             .number(boundary_width != model.hidden)
                             .number(receive_slots)
                             .number(send_slots);
    }
  }

  if (has_moe) keep_transient(moe_dispatch_piece(model, shape, layout));
  if (attention_kinds[static_cast<int>(AttentionKind::kda)]) {
    if (auto p = kda_forward_transient(model, shape, training)) keep_transient(*p);
  }
  if (block > 0) keep_transient(attn_res_internal_piece(model, shape, training, largest_slots));
  if (largest_pipeline_buffers > 0) {
    ActivationPiece buffers = make_piece(
        block > 0 ? term_pipeline_buffers_attn_res : term_pipeline_buffers, pipeline_formula);
    buffers.bytes = largest_pipeline_buffers;
    keep_transient(buffers);
    // In backward the same boundary carries the gradients: the output's gradient arrives and the
    // input's gradient leaves (Megatron's send_backward_recv_forward / recv_backward).
    ActivationPiece gradients = make_piece(
        block > 0 ? term_pipeline_gradient_buffers_attn_res : term_pipeline_gradient_buffers,
        pipeline_formula);
    gradients.bytes = largest_pipeline_buffers;
    keep_transient(gradients);
  }
  if (shape.context_parallel > 1) {
    ActivationPiece largest;
    ActivationPiece largest_backward;
    for (int k = 0; k < 3; ++k) {
      if (!attention_kinds[k]) continue;
      const auto kind = static_cast<AttentionKind>(k);
      ActivationPiece p = context_parallel_exchange_piece(model, shape, kind, training);
      if (p.bytes > largest.bytes) largest = p;
      if (auto b = context_parallel_backward_piece(model, shape, kind, training)) {
        if (b->bytes > largest_backward.bytes) largest_backward = *b;
      }
    }
    if (largest.info != nullptr) keep_transient(largest);
    if (largest_backward.info != nullptr) keep_transient(largest_backward);
  }
  // The backward working set of the layer being back-propagated: the largest attention half and
  // the largest MLP half over the layer kinds of the stage.
  {
    ActivationPiece attention;
    for (int k = 0; k < 3; ++k) {
      if (!attention_kinds[k]) continue;
      ActivationPiece p =
          attention_backward_piece(model, static_cast<AttentionKind>(k), shape, training);
      if (p.bytes > attention.bytes || p.formula.overflowed()) attention = p;
    }
    if (attention.info != nullptr) keep_transient(attention);
    ActivationPiece mlp;
    for (int k = 0; k < 2; ++k) {
      if (!mlp_kinds[k]) continue;
      ActivationPiece p =
          mlp_backward_piece(model, static_cast<MlpKind>(k), shape, training, layout);
      if (p.bytes > mlp.bytes || p.formula.overflowed()) mlp = p;
    }
    if (mlp.info != nullptr) keep_transient(mlp);
  }
  if (working_set > 0) {
    working_set_piece.bytes = working_set;
    keep_transient(working_set_piece);
  }

  if (peaks_only) {
    result.fits = sums.append_terms(nullptr, result.stored_bytes) && fits;
    for (const ActivationPiece& p : transients) {
      result.fits = result.fits && !p.formula.overflowed();
      result.largest_transient_bytes = std::max(result.largest_transient_bytes, p.bytes);
    }
    return result;
  }
  std::vector<Term>& stored = result.into != nullptr ? *result.into : result.stored;
  std::vector<Term>& out = result.into != nullptr ? *result.into : result.transients;
  result.first_stored = static_cast<std::int64_t>(stored.size());
  result.fits = sums.append_terms(&stored, result.stored_bytes) && fits;
  result.first_transient = static_cast<std::int64_t>(out.size());
  for (const ActivationPiece& p : transients) {
    result.fits = result.fits && !p.formula.overflowed();
    Term& t = out.emplace_back();
    t.info = p.info;
    t.bytes = p.bytes;
    t.name_value = p.name_value;
    t.formula = p.formula;
    t.family = Family::transient;
    t.allocated_at = p.info->in_backward ? AllocationPoint::backward : AllocationPoint::forward;
    if (p.bytes > result.largest_transient_bytes) {
      result.largest_transient_bytes = p.bytes;
      result.largest_transient = static_cast<std::int64_t>(out.size()) - 1;
    }
  }
  return result;
}

}  // namespace stagemem
