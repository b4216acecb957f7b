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
                                         "S/CP, B, h (/TP with SP), AttnRes slots at the boundary",
                                         TermText::pipeline_buffers};
constexpr TermInfo term_pipeline_buffers_attn_res{
    "pipeline send/receive buffers (hidden state + AttnRes slots)",
    "S/CP, B, h (/TP with SP), AttnRes slots at the boundary", TermText::pipeline_buffers};
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
// bytes (AttnRes slots differ from chunk to chunk: each size is its own term).
// With `sum_only` (peaks), nothing is listed: the bytes are added up as they come.
class StoredSums {
 public:
  // `blocks` is scratch storage reused across stages (its capacity survives).
  StoredSums(std::uint32_t dropped, std::vector<StoredBlock>& blocks, bool sum_only)
      : dropped_(dropped), blocks_(blocks), sum_only_(sum_only) {
    blocks_.clear();
  }
  void add_all(TermGroup group, const std::vector<ActivationPiece>& pieces, std::int64_t copies,
               std::uint32_t dropped) {
    if (copies <= 0) return;
    if (sum_only_) {
      std::int64_t bytes = 0;
      fits_ = kept_sum(pieces, dropped, &bytes) && checked_mul(bytes, copies, &bytes) &&
              checked_add(total_, bytes, &total_) && fits_;
      return;
    }
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
  // Sum only: `copies` of a layer whose kept pieces come to `bytes` (`fits`: they fit in int64).
  void add_kept(std::int64_t bytes, bool fits, std::int64_t copies) {
    if (copies <= 0) return;
    fits_ =
        fits && checked_mul(bytes, copies, &bytes) && checked_add(total_, bytes, &total_) && fits_;
  }
  void add(TermGroup group, const ActivationPiece& piece, std::int64_t copies) {
    if (copies <= 0 || piece.bytes == 0) return;
    if (sum_only_) {
      std::int64_t bytes = 0;
      fits_ = !piece.formula.overflowed() && checked_mul(piece.bytes, copies, &bytes) &&
              checked_add(total_, bytes, &total_) && fits_;
      return;
    }
    for (StoredBlock& b : blocks_) {
      if (b.group == group && b.pieces == nullptr && b.single.info == piece.info &&
          b.single.bytes == piece.bytes) {
        b.copies += copies;
        return;
      }
    }
    blocks_.push_back({group, nullptr, piece, copies, 0});
  }
  // Appends the sums as terms (or, with `out` null, only adds up their bytes); false when one does
  // not fit in int64 bytes.
  bool append_terms(std::vector<Term>* out, std::int64_t& total) const {
    if (sum_only_) {
      total = total_;
      return fits_;
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
  bool sum_only_;
  std::int64_t total_ = 0;
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

void prepare_piece_cache(LayerPieceCache& cache, const TrainingConfig& training) {
  TrainingConfig inputs = training;
  inputs.global_batch = 0;
  inputs.flat_headroom_bytes = 0;
  inputs.recompute = {};
  if (cache.built_for && *cache.built_for == inputs) return;
  // The layer structure depends on the layout and recompute only: it survives. The ranks' pieces
  // and the scratch lists keep their storage.
  cache.built_for = inputs;
  ++cache.generation;
  cache.kinds = {};
  cache.head.reset();
  cache.head_transients.reset();
  cache.mtp_extra.reset();
  cache.checkpoint_input.reset();
}

namespace {

// The rank's chunks split into layers that keep everything and checkpointed groups (with their
// distinct compositions), per layer kind: the part of the recompute policy that has no bytes.
RankLayers rank_layers(const Model& model, const StagePlan& plan, std::int64_t rank,
                       const RecomputeConfig& recompute) {
  RankLayers result;
  result.full = recompute.policy == RecomputePolicy::full;
  result.method = recompute.method;
  result.group_layers = recompute.layers;
  for (const VirtualStage& chunk : plan.virtual_stages) {
    if (chunk.pipeline_rank != rank) continue;
    ChunkLayers& out = result.chunks.emplace_back();
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
      const auto slot =
          static_cast<std::size_t>(slot_of(model.layers[static_cast<std::size_t>(i)]));
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
  return result;
}

const RankLayers& cached_rank_layers(LayerPieceCache& cache, const Model& model,
                                     const StagePlan& plan, std::int64_t rank,
                                     const RecomputeConfig& recompute) {
  const bool full = recompute.policy == RecomputePolicy::full;
  auto& slots = full ? cache.full_layers : cache.plain_layers;
  if (slots.size() < static_cast<std::size_t>(plan.pipeline_ranks))
    slots.resize(static_cast<std::size_t>(plan.pipeline_ranks));
  auto& entry = slots[static_cast<std::size_t>(rank)];
  if (!entry ||
      (full && (entry->method != recompute.method || entry->group_layers != recompute.layers))) {
    entry = rank_layers(model, plan, rank, recompute);
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

// The rank's AttnRes pieces per chunk and its transients other than the recompute working set.
void build_rank_pieces(const Model& model, const TokenShape& shape, const TrainingConfig& training,
                       const StagePlan& plan, std::int64_t rank, LayerPieceCache& cache,
                       std::int64_t padded, RankPieces& result) {
  result.chunks.clear();
  result.transients.clear();
  result.largest_transient_bytes = 0;
  result.has_moe = false;
  result.fits = true;
  result.generation = cache.generation;
  const std::int64_t block = model.attn_res.block_size;
  const std::int64_t total_layers = static_cast<std::int64_t>(model.layers.size());
  const auto keep_transient = [&](const ActivationPiece& p) {
    if (p.bytes > 0 || p.formula.overflowed()) result.transients.push_back(p);
  };
  bool attention_kinds[3] = {false, false, false};
  std::int64_t largest_slots = 0;  // AttnRes K at the rank's last mixing site
  std::int64_t largest_pipeline_buffers = 0;
  Formula pipeline_formula;
  const std::int64_t boundary_width = shape.sequence_parallel && shape.tensor_parallel > 1
                                          ? model.hidden / shape.tensor_parallel
                                          : model.hidden;
  for (const VirtualStage& chunk : plan.virtual_stages) {
    if (chunk.pipeline_rank != rank) continue;
    RankPieces::Chunk& pieces = result.chunks.emplace_back();
    const std::int64_t end = chunk.first_layer + chunk.layer_count;
    for (std::int64_t i = chunk.first_layer; i < end; ++i) {
      const LayerKind kind = model.layers[static_cast<std::size_t>(i)];
      result.has_moe |= kind.mlp == MlpKind::moe;
      attention_kinds[static_cast<int>(kind.attention)] = true;
    }
    if (block > 0) {
      pieces.attn_res_slots = attn_res_slots_piece(model, shape, attn_res_slots_before(end, block));
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
      pieces.attn_res_weights = attn_res_weights_piece(shape, slot_sites);
      largest_slots = std::max(largest_slots, last_site_slots);
    }
    if (chunk.head) {
      if (!cache.head_transients) cache.head_transients = head_transients(shape, training, padded);
      for (const ActivationPiece& p : *cache.head_transients) keep_transient(p);
    }
    if (chunk.mtp_layers > 0) result.has_moe |= model.mtp_layer.mlp == MlpKind::moe;
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
      result.fits = checked_mul(one, shape.sequence, &one) &&
                    checked_mul(one, shape.micro_batch, &one) &&
                    checked_mul(one, boundary_width, &one) && checked_mul(one, slots, &one) &&
                    checked_add(buffers, one, &buffers) && result.fits;
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
  if (result.has_moe) keep_transient(moe_dispatch_piece(model, shape));
  if (block > 0) keep_transient(attn_res_internal_piece(model, shape, training, largest_slots));
  if (largest_pipeline_buffers > 0) {
    ActivationPiece buffers = make_piece(
        block > 0 ? term_pipeline_buffers_attn_res : term_pipeline_buffers, pipeline_formula);
    buffers.bytes = largest_pipeline_buffers;
    keep_transient(buffers);
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
  for (const ActivationPiece& p : result.transients) {
    result.fits = result.fits && !p.formula.overflowed();
    result.largest_transient_bytes = std::max(result.largest_transient_bytes, p.bytes);
  }
}

}  // namespace

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
  const std::int64_t padded = padded_vocab(model.vocab, layout);

  const RankLayers& layers = cached_rank_layers(cache, model, plan, rank, recompute);
  if (cache.ranks.size() < static_cast<std::size_t>(plan.pipeline_ranks))
    cache.ranks.resize(static_cast<std::size_t>(plan.pipeline_ranks));
  RankPieces& pieces_of_rank = cache.ranks[static_cast<std::size_t>(rank)];
  if (pieces_of_rank.generation != cache.generation) {
    build_rank_pieces(model, shape, training, plan, rank, cache, padded, pieces_of_rank);
  }

  StoredSums sums(dropped, cache.stored_blocks, peaks_only);
  std::vector<ActivationPiece>& transients = cache.transients;
  if (!peaks_only) {
    transients.assign(pieces_of_rank.transients.begin(), pieces_of_rank.transients.end());
  }
  const auto keep_transient = [&](const ActivationPiece& p) {
    if (p.bytes > 0 || p.formula.overflowed()) transients.push_back(p);
  };
  std::int64_t working_set = 0;  // recompute working set of one group / layer, backward
  ActivationPiece working_set_piece;
  if (!cache.checkpoint_input) cache.checkpoint_input = checkpoint_input_piece(model, shape);
  const ActivationPiece& checkpoint_input = *cache.checkpoint_input;
  const auto pieces_for = [&](LayerKind kind) -> const LayerPieces& {
    auto& entry = cache.kinds[static_cast<std::size_t>(slot_of(kind))];
    if (!entry) {
      entry = LayerPieces{attention_pieces(model, kind.attention, shape, training),
                          mlp_pieces(model, kind.mlp, shape, training, layout)};
      entry->all_bytes = layer_bytes(*entry, 0);
      entry->kept_mask = ~dropped;  // not computed yet
    }
    if (entry->kept_mask != dropped) {
      std::int64_t attention = 0;
      std::int64_t mlp = 0;
      entry->kept_bytes = layer_bytes(*entry, dropped);
      entry->kept_fits = kept_sum(entry->attention, dropped, &attention) &&
                         kept_sum(entry->mlp, dropped, &mlp) && checked_add(attention, mlp, &mlp);
      entry->kept_mask = dropped;
    }
    return *entry;
  };
  bool fits = pieces_of_rank.fits;

  std::size_t chunk_slot = 0;
  for (const VirtualStage& chunk : plan.virtual_stages) {
    if (chunk.pipeline_rank != rank) continue;
    const ChunkLayers& split = layers.chunks[chunk_slot];
    const RankPieces::Chunk& chunk_pieces = pieces_of_rank.chunks[chunk_slot];
    ++chunk_slot;
    const std::int64_t copies = result.in_flight_per_chunk[static_cast<std::size_t>(chunk.chunk)];
    // Checkpointed groups: the whole working set of one group is rebuilt in backward; the first
    // group of the largest composition names it.
    for (const ChunkLayers::Group& group : split.groups) {
      std::int64_t group_bytes = 0;
      for (int slot = 0; slot < kind_slots; ++slot) {
        const std::int64_t count = group.layers[static_cast<std::size_t>(slot)];
        if (count == 0) continue;
        std::int64_t bytes = 0;
        fits = checked_mul(pieces_for(kind_of(slot)).all_bytes, count, &bytes) &&
               checked_add(group_bytes, bytes, &group_bytes) && fits;
      }
      if (group_bytes > working_set) {
        working_set = group_bytes;
        working_set_piece.info = &term_recompute_group;
        working_set_piece.formula = Formula()
                                        .number(group.count)
                                        .number(group.first)
                                        .number(group.last)
                                        .number(group_bytes);
      }
    }
    // Layers that keep everything, counted per kind; the pieces of a kind are built once.
    for (int slot = 0; slot < kind_slots; ++slot) {
      const std::int64_t layer_count = split.full_layers[static_cast<std::size_t>(slot)];
      if (layer_count == 0) continue;
      const LayerKind kind = kind_of(slot);
      const LayerPieces& pieces = pieces_for(kind);
      std::int64_t layer_copies = 0;
      fits = checked_mul(layer_count, copies, &layer_copies) && fits;
      if (peaks_only) {
        sums.add_kept(pieces.kept_bytes, pieces.kept_fits, layer_copies);
      } else {
        sums.add_all(attention_group(kind.attention, false), pieces.attention, layer_copies);
        sums.add_all(mlp_group(kind.mlp, false), pieces.mlp, layer_copies);
      }
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
    if (split.checkpointed_groups > 0)
      sums.add(TermGroup::all_layers, checkpoint_input, split.checkpointed_groups * copies);

    if (chunk.embedding && training.dropout) {
      sums.add(TermGroup::embedding, embedding_dropout_piece(model, shape), copies);
    }
    if (model.attn_res.block_size > 0) {
      sums.add(TermGroup::attn_res, chunk_pieces.attn_res_slots, copies);
      sums.add(TermGroup::attn_res, chunk_pieces.attn_res_weights, copies);
    }
    if (chunk.head || chunk.mtp_layers > 0) {
      if (!cache.head) cache.head = head_pieces(model, shape, training, padded);
    }
    if (chunk.head) {
      // The head's pieces are never recomputed (mask 0).
      sums.add_all(TermGroup::output, *cache.head, copies, 0);
    }
    if (chunk.mtp_layers > 0) {
      if (!cache.mtp_extra) cache.mtp_extra = mtp_extra_pieces(model, shape);
      const LayerPieces& pieces = pieces_for(model.mtp_layer);
      std::int64_t mtp_copies = 0;
      fits = checked_mul(chunk.mtp_layers, copies, &mtp_copies) && fits;
      sums.add_all(TermGroup::mtp, *cache.mtp_extra, mtp_copies, 0);
      sums.add_all(attention_group(model.mtp_layer.attention, true), pieces.attention, mtp_copies);
      sums.add_all(mlp_group(model.mtp_layer.mlp, true), pieces.mlp, mtp_copies);
      sums.add_all(TermGroup::mtp_output, *cache.head, mtp_copies, 0);
    }
  }

  if (working_set > 0) {
    working_set_piece.bytes = working_set;
    keep_transient(working_set_piece);
  }

  if (peaks_only) {
    result.fits = sums.append_terms(nullptr, result.stored_bytes) && fits;
    result.largest_transient_bytes = std::max(pieces_of_rank.largest_transient_bytes, working_set);
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
