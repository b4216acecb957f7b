#include "activation_terms.h"

#include <algorithm>
#include <array>
#include <optional>

#include "activation_model.h"
#include "schedule.h"
#include "units.h"

namespace stagemem {
namespace {

constexpr TermInfo term_checkpoint_input{"checkpointed group input (full recompute)",
                                         "S/CP, B, h (/TP with SP), checkpointed groups"};
constexpr TermInfo term_pipeline_buffers{"pipeline send/receive buffers (hidden state)",
                                         "S/CP, B, h (/TP with SP), AttnRes slots at the boundary"};
constexpr TermInfo term_pipeline_buffers_attn_res{
    "pipeline send/receive buffers (hidden state + AttnRes slots)",
    "S/CP, B, h (/TP with SP), AttnRes slots at the boundary"};
constexpr TermInfo term_recompute_group{"recompute working set (one checkpointed group, backward)",
                                        "S/CP, B, recompute group size", TermText::recompute_group};
constexpr TermInfo term_recompute_selective{"selective recompute working set (backward)",
                                            "S/CP, B, recompute group size",
                                            TermText::recompute_selective};

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

// Sums identical pieces over layers and micro-batches: one term per (group, piece).
class StoredSums {
 public:
  void add(TermGroup group, const ActivationPiece& piece, std::int64_t copies) {
    if (copies <= 0 || piece.bytes == 0) return;
    for (Entry& e : entries_) {
      if (e.group == group && e.piece.info == piece.info) {
        e.copies += copies;
        return;
      }
    }
    entries_.push_back({group, piece, copies});
  }
  void add_all(TermGroup group, const std::vector<ActivationPiece>& pieces,
               std::uint32_t dropped_modules, std::int64_t copies) {
    for (const ActivationPiece& p : pieces) {
      if ((p.dropped_by & dropped_modules) == 0) add(group, p, copies);
    }
  }
  // Appends the sums as terms; false when one does not fit in int64 bytes.
  bool append_terms(std::vector<Term>& out, std::int64_t& total) const {
    bool fits = true;
    for (const Entry& e : entries_) {
      Term t{.info = e.piece.info,
             .bytes = 0,
             .copies = e.copies,
             .name_value = e.piece.name_value,
             .formula = e.piece.formula,
             .group = e.group,
             .family = Family::activation,
             .tag = Tag::derived,
             .allocated_at = AllocationPoint::forward};
      if (e.piece.formula.overflowed() || !checked_mul(e.piece.bytes, e.copies, &t.bytes) ||
          !checked_add(total, t.bytes, &total)) {
        fits = false;
      }
      out.push_back(t);
    }
    return fits;
  }

 private:
  struct Entry {
    TermGroup group;
    ActivationPiece piece;
    std::int64_t copies;
  };
  std::vector<Entry> entries_;
};

Term transient_term(const ActivationPiece& p) {
  const bool backward = p.info->name.find("gradient") != std::string_view::npos ||
                        p.info->name.find("recompute") != std::string_view::npos;
  return Term{.info = p.info,
              .bytes = p.bytes,
              .name_value = p.name_value,
              .formula = p.formula,
              .family = Family::transient,
              .tag = Tag::derived,
              .allocated_at = backward ? AllocationPoint::backward : AllocationPoint::forward};
}

// The pieces a layer keeps, split so each half is labelled by its own kind.
std::int64_t layer_bytes(const LayerPieces& p, std::uint32_t dropped) {
  return stored_bytes(p.attention, dropped) + stored_bytes(p.mlp, dropped);
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

StageActivationTerms stage_activation_terms(const Model& model, const ParallelLayout& layout,
                                            const TrainingConfig& training, const StagePlan& plan,
                                            std::int64_t rank, std::int64_t micro_batches) {
  LayerPieceCache cache;
  return stage_activation_terms(model, layout, training, plan, rank, micro_batches, cache);
}

StageActivationTerms stage_activation_terms(const Model& model, const ParallelLayout& layout,
                                            const TrainingConfig& training, const StagePlan& plan,
                                            std::int64_t rank, std::int64_t micro_batches,
                                            LayerPieceCache& cache) {
  StageActivationTerms result;
  const TokenShape shape = token_shape(training, layout);
  const InFlight in_flight =
      in_flight_at_peak(plan.pipeline_ranks, plan.chunks_per_rank, rank, micro_batches);
  result.in_flight_per_chunk = in_flight.per_chunk;
  const RecomputeConfig& recompute = training.recompute;
  const std::uint32_t dropped =
      recompute.policy == RecomputePolicy::selective ? recompute.modules : 0;
  const std::int64_t block = model.attn_res.block_size;
  const std::int64_t total_layers = static_cast<std::int64_t>(model.layers.size());
  const std::int64_t padded = padded_vocab(model.vocab, layout);

  StoredSums sums;
  std::vector<ActivationPiece> transients;
  const auto keep_transient = [&](const ActivationPiece& p) {
    if (p.bytes > 0 || p.formula.overflowed()) transients.push_back(p);
  };
  std::int64_t working_set = 0;  // recompute working set of one group / layer, backward
  ActivationPiece working_set_piece;
  bool has_moe = false;
  bool attention_kinds[3] = {false, false, false};
  std::int64_t largest_slots = 0;  // AttnRes K at the rank's last mixing site
  std::int64_t largest_pipeline_buffers = 0;
  Formula pipeline_formula;
  const ActivationPiece checkpoint_input = checkpoint_input_piece(model, shape);
  const auto pieces_for = [&](LayerKind kind) -> const LayerPieces& {
    auto& entry = cache.kinds[static_cast<std::size_t>(slot_of(kind))];
    if (!entry) {
      entry = LayerPieces{attention_pieces(model, kind.attention, shape, training),
                          mlp_pieces(model, kind.mlp, shape, training, layout)};
      entry->all_bytes = layer_bytes(*entry, 0);
    }
    return *entry;
  };

  for (const VirtualStage& chunk : plan.virtual_stages) {
    if (chunk.pipeline_rank != rank) continue;
    const std::int64_t copies = in_flight.per_chunk[static_cast<std::size_t>(chunk.chunk)];
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
      if (i >= first_full_layer) {
        ++full_layers[static_cast<std::size_t>(slot_of(kind))];
        continue;
      }
      // Inside a checkpointed group: its whole working set is rebuilt in backward.
      group_bytes += pieces_for(kind).all_bytes;
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
      sums.add_all(attention_group(kind.attention, false), pieces.attention, dropped,
                   layers * copies);
      sums.add_all(mlp_group(kind.mlp, false), pieces.mlp, dropped, layers * copies);
      const std::int64_t recomputed = pieces.all_bytes - layer_bytes(pieces, dropped);
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
      std::int64_t slot_sites = 0;
      for (std::int64_t i = chunk.first_layer; i < end; ++i) {
        slot_sites += model.attn_res.sites_per_layer * (1 + attn_res_slots_before(i, block));
      }
      std::int64_t last_site_slots =
          attn_res_slots_before(std::max<std::int64_t>(end - 1, 0), block);
      if (chunk.head) {
        slot_sites += 1 + attn_res_slots_before(total_layers, block);
        last_site_slots = attn_res_slots_before(total_layers, block);
      }
      sums.add(TermGroup::attn_res, attn_res_weights_piece(shape, slot_sites), copies);
      largest_slots = std::max(largest_slots, last_site_slots);
    }
    if (chunk.head) {
      for (const ActivationPiece& p : head_pieces(model, shape, training, padded)) {
        sums.add(TermGroup::output, p, copies);
      }
      for (const ActivationPiece& p : head_transients(shape, training, padded)) keep_transient(p);
    }
    for (std::int64_t i = 0; i < chunk.mtp_layers; ++i) {
      const LayerPieces& pieces = pieces_for(model.mtp_layer);
      sums.add_all(TermGroup::mtp, mtp_extra_pieces(model, shape), 0, copies);
      sums.add_all(attention_group(model.mtp_layer.attention, true), pieces.attention, dropped,
                   copies);
      sums.add_all(mlp_group(model.mtp_layer.mlp, true), pieces.mlp, dropped, copies);
      for (const ActivationPiece& p : head_pieces(model, shape, training, padded)) {
        sums.add(TermGroup::mtp_output, p, copies);
      }
      has_moe |= model.mtp_layer.mlp == MlpKind::moe;
    }
    // Pipeline buffers of this chunk: the input arriving from the previous virtual stage and the
    // output leaving for the next one (both alive while a step sends and receives).
    const bool first_virtual = chunk.embedding;
    const bool last_virtual = chunk.head;
    Formula formula;
    if (!first_virtual) {
      formula.receive().add(
          pipeline_buffer_formula(model, shape, attn_res_slots_before(chunk.first_layer, block)));
    }
    if (!last_virtual) {
      formula.send().add(pipeline_buffer_formula(model, shape, attn_res_slots_before(end, block)));
    }
    const std::int64_t buffers = formula.size() > 0 ? formula.value() : 0;
    if (buffers > largest_pipeline_buffers || (formula.overflowed() && buffers != 0)) {
      largest_pipeline_buffers = buffers;
      pipeline_formula = formula;
    }
  }

  if (has_moe) keep_transient(moe_dispatch_piece(model, shape));
  if (block > 0) keep_transient(attn_res_internal_piece(model, shape, training, largest_slots));
  if (largest_pipeline_buffers > 0) {
    keep_transient(make_piece(block > 0 ? term_pipeline_buffers_attn_res : term_pipeline_buffers,
                              pipeline_formula));
  }
  if (shape.context_parallel > 1) {
    ActivationPiece largest;
    for (int k = 0; k < 3; ++k) {
      if (!attention_kinds[k]) continue;
      ActivationPiece p =
          context_parallel_exchange_piece(model, shape, static_cast<AttentionKind>(k));
      if (p.bytes > largest.bytes) largest = p;
    }
    if (largest.info != nullptr) keep_transient(largest);
  }
  if (working_set > 0) {
    working_set_piece.bytes = working_set;
    keep_transient(working_set_piece);
  }

  result.fits = sums.append_terms(result.stored, result.stored_bytes);
  for (const ActivationPiece& p : transients) {
    result.fits = result.fits && !p.formula.overflowed();
    result.transients.push_back(transient_term(p));
    if (p.bytes > result.largest_transient_bytes) {
      result.largest_transient_bytes = p.bytes;
      result.largest_transient = static_cast<std::int64_t>(result.transients.size()) - 1;
    }
  }
  return result;
}

}  // namespace stagemem
