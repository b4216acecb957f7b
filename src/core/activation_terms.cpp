#include "activation_terms.h"

#include <algorithm>
#include <array>
#include <optional>

#include "activation_model.h"
#include "schedule.h"
#include "units.h"

namespace stagemem {
namespace {

std::string_view attention_label(AttentionKind kind) {
  switch (kind) {
    case AttentionKind::gqa:
      return "GQA";
    case AttentionKind::mla:
      return "MLA";
    case AttentionKind::kda:
      return "KDA";
  }
  return "attention";
}

std::string_view mlp_label(MlpKind kind) {
  return kind == MlpKind::dense ? "dense MLP" : "MoE";
}

// Sums identical pieces over layers and micro-batches: one term per (group, piece).
class StoredSums {
 public:
  void add(std::string_view group, const ActivationPiece& piece, std::int64_t copies) {
    if (copies <= 0 || piece.bytes == 0) return;
    std::string name = std::string(group) + ": " + piece.name;
    for (Entry& e : entries_) {
      if (e.name == name) {
        e.copies += copies;
        return;
      }
    }
    entries_.push_back({std::move(name), piece.scaling, piece.formula, piece.bytes, copies});
  }
  void add_all(std::string_view group, const std::vector<ActivationPiece>& pieces,
               std::uint32_t dropped_modules, std::int64_t copies) {
    for (const ActivationPiece& p : pieces) {
      if ((p.dropped_by & dropped_modules) == 0) add(group, p, copies);
    }
  }
  std::vector<Term> terms() const {
    std::vector<Term> out;
    for (const Entry& e : entries_) {
      out.push_back(Term{
          .name = e.name,
          .formula = e.formula + " x [layer-micro-batches alive=" + group_digits(e.copies) + "]",
          .scaling = std::string(e.scaling) + ", layers on stage, micro-batches in flight",
          .family = Family::activation,
          .tag = Tag::derived,
          .allocated_at = AllocationPoint::forward,
          .bytes = e.bytes * e.copies,
      });
    }
    return out;
  }

 private:
  struct Entry {
    std::string name;
    std::string_view scaling;  // a string literal's view: static storage
    std::string formula;
    std::int64_t bytes;
    std::int64_t copies;
  };
  std::vector<Entry> entries_;
};

Term transient_term(const ActivationPiece& p, AllocationPoint when) {
  return Term{.name = p.name,
              .formula = p.formula,
              .scaling = std::string(p.scaling),
              .family = Family::transient,
              .tag = Tag::derived,
              .allocated_at = when,
              .bytes = p.bytes};
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
  f.times("S/CP", s.sequence).times("B", s.micro_batch);
  if (s.sequence_parallel && s.tensor_parallel > 1) {
    f.times("h/TP (SP)", m.hidden / s.tensor_parallel);
  } else {
    f.times("h", m.hidden);
  }
  f.bytes(2, "bf16");
  return {.name = "checkpointed group input (full recompute)",
          .formula = f.text(),
          .scaling = "S/CP, B, h (/TP with SP), checkpointed groups",
          .bytes = f.value()};
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
  const auto keep_transient = [&](ActivationPiece p) {
    if (p.bytes > 0) transients.push_back(std::move(p));
  };
  std::int64_t working_set = 0;  // recompute working set of one group / layer, backward
  std::string working_set_formula;
  bool has_moe = false;
  bool attention_kinds[3] = {false, false, false};
  std::int64_t largest_slots = 0;  // AttnRes K at the rank's last mixing site
  std::int64_t largest_pipeline_buffers = 0;
  std::string pipeline_formula;
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
          working_set_formula = "every piece of " + std::to_string(group_layers) +
                                " recomputed layer(s) (layers " +
                                std::to_string(i + 1 - group_layers) + "-" + std::to_string(i) +
                                ") for one micro-batch";
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
      sums.add_all(attention_label(kind.attention), pieces.attention, dropped, layers * copies);
      sums.add_all(mlp_label(kind.mlp), pieces.mlp, dropped, layers * copies);
      const std::int64_t recomputed = pieces.all_bytes - layer_bytes(pieces, dropped);
      if (dropped != 0 && recomputed > working_set) {
        working_set = recomputed;
        working_set_formula = "the selectively recomputed pieces of one " +
                              std::string(attention_label(kind.attention)) + " + " +
                              std::string(mlp_label(kind.mlp)) + " layer for one micro-batch";
      }
    }
    if (checkpointed_groups > 0)
      sums.add("all layers", checkpoint_input, checkpointed_groups * copies);

    if (chunk.embedding && training.dropout) {
      sums.add("embedding", embedding_dropout_piece(model, shape), copies);
    }
    if (block > 0) {
      const std::int64_t slots = attn_res_slots_before(end, block);
      sums.add("AttnRes", attn_res_slots_piece(model, shape, slots), copies);
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
      sums.add("AttnRes", attn_res_weights_piece(shape, slot_sites), copies);
      largest_slots = std::max(largest_slots, last_site_slots);
    }
    if (chunk.head) {
      for (const ActivationPiece& p : head_pieces(model, shape, training, padded)) {
        sums.add("output", p, copies);
      }
      for (ActivationPiece p : head_transients(shape, training, padded))
        keep_transient(std::move(p));
    }
    for (std::int64_t i = 0; i < chunk.mtp_layers; ++i) {
      const LayerPieces& pieces = pieces_for(model.mtp_layer);
      sums.add_all("MTP", mtp_extra_pieces(model, shape), 0, copies);
      sums.add_all("MTP " + std::string(attention_label(model.mtp_layer.attention)),
                   pieces.attention, dropped, copies);
      sums.add_all("MTP " + std::string(mlp_label(model.mtp_layer.mlp)), pieces.mlp, dropped,
                   copies);
      for (const ActivationPiece& p : head_pieces(model, shape, training, padded)) {
        sums.add("MTP output", p, copies);
      }
      has_moe |= model.mtp_layer.mlp == MlpKind::moe;
    }
    // Pipeline buffers of this chunk: the input arriving from the previous virtual stage and the
    // output leaving for the next one (both alive while a step sends and receives).
    const bool first_virtual = chunk.embedding;
    const bool last_virtual = chunk.head;
    std::int64_t buffers = 0;
    std::string formula;
    if (!first_virtual) {
      const ActivationPiece in = pipeline_buffer_piece(
          model, shape, "receive", attn_res_slots_before(chunk.first_layer, block));
      buffers += in.bytes;
      formula = "receive " + in.formula;
    }
    if (!last_virtual) {
      const ActivationPiece out =
          pipeline_buffer_piece(model, shape, "send", attn_res_slots_before(end, block));
      buffers += out.bytes;
      formula += (formula.empty() ? "send " : " + send ") + out.formula;
    }
    if (buffers > largest_pipeline_buffers) {
      largest_pipeline_buffers = buffers;
      pipeline_formula = formula;
    }
  }

  if (has_moe) keep_transient(moe_dispatch_piece(model, shape));
  if (block > 0) keep_transient(attn_res_internal_piece(model, shape, training, largest_slots));
  if (largest_pipeline_buffers > 0) {
    keep_transient({.name = block > 0
                                ? "pipeline send/receive buffers (hidden state + AttnRes slots)"
                                : "pipeline send/receive buffers (hidden state)",
                    .formula = pipeline_formula,
                    .scaling = "S/CP, B, h (/TP with SP), AttnRes slots at the boundary",
                    .bytes = largest_pipeline_buffers});
  }
  if (shape.context_parallel > 1) {
    ActivationPiece largest;
    for (int k = 0; k < 3; ++k) {
      if (!attention_kinds[k]) continue;
      ActivationPiece p =
          context_parallel_exchange_piece(model, shape, static_cast<AttentionKind>(k));
      if (p.bytes > largest.bytes) largest = std::move(p);
    }
    keep_transient(std::move(largest));
  }
  if (working_set > 0) {
    keep_transient({.name = recompute.policy == RecomputePolicy::full
                                ? "recompute working set (one checkpointed group, backward)"
                                : "selective recompute working set (backward)",
                    .formula = working_set_formula + " = " + group_digits(working_set) + " B",
                    .scaling = "S/CP, B, recompute group size",
                    .bytes = working_set});
  }

  result.stored = sums.terms();
  for (const Term& t : result.stored) result.stored_bytes += t.bytes;
  for (const ActivationPiece& p : transients) {
    const bool backward = p.name.find("gradient") != std::string::npos ||
                          p.name.find("recompute") != std::string::npos;
    result.transients.push_back(
        transient_term(p, backward ? AllocationPoint::backward : AllocationPoint::forward));
    if (p.bytes > result.largest_transient_bytes) {
      result.largest_transient_bytes = p.bytes;
      result.largest_transient = p.name;
    }
  }
  return result;
}

}  // namespace stagemem
