// activation_pieces.h — the tensors one decoder layer (or the embedding / head) keeps for
// backward, and the transients that sit on top of them, for one micro-batch on one rank.
//
// Purpose: the physics of activation memory, piece by piece, each with the tensor it is, its
// shape and dtype as formula factors (formula.h), and the recompute modules that drop it. Files by
// physics: memory/attention_pieces.cpp (GQA, MLA, KDA), memory/mlp_pieces.cpp (dense MLP, MoE),
// memory/model_pieces.cpp (embedding, final norm, logits and loss, MTP, AttnRes, pipeline and
// context-parallel buffers). The stage-level sums (layers x micro-batches in flight) live in
// activation_terms.cpp.
//
// Conventions (Megatron-core with TransformerEngine, flash attention, fla's chunk_kda):
//  - n = S/CP x B tokens per rank and micro-batch. Token-wise tensors of full hidden width are
//    sharded by TP only under sequence parallelism; tensors split by heads or by the MLP width
//    are always 1/TP; outputs of duplicated (replicated) down-projections are full width.
//  - bf16 activations (2 B) unless a piece says otherwise; dropout masks are 1 B.
//  - a tensor saved by two ops (e.g. the attention output, also the output projection's input)
//    is counted once.
// Units: bytes (int64) per layer and micro-batch on one rank.
// Limitations: balanced routing unless an imbalance scenario is entered; ETP > 1 gathers the
// routed tokens over ETP before the expert GEMMs.
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/sharding_rules.h"
#include "config/training.h"
#include "model/model.h"
#include "parallel/layout.h"
#include "parallel/schedule.h"
#include "report/formula.h"
#include "report/term_info.h"

namespace stagemem {

struct ActivationPiece {
  const TermInfo* info = nullptr;  // name and scaling (static)
  Formula formula;                 // per layer and micro-batch, one rank
  std::int64_t bytes = 0;          // formula.value()
  std::uint32_t dropped_by = 0;    // RecomputeModule bits whose recompute means it is not stored
  std::int64_t name_value = 0;     // the number a name with "{}" carries
};

// The per-rank token geometry every piece needs.
struct TokenShape {
  std::int64_t tokens = 0;           // n = S/CP x B
  std::int64_t sequence = 0;         // S/CP
  std::int64_t micro_batch = 0;      // B
  std::int64_t tensor_parallel = 1;  // TP
  bool sequence_parallel = false;
  std::int64_t context_parallel = 1;
  std::int64_t full_sequence = 0;  // S
};
TokenShape token_shape(const TrainingConfig& training, const ParallelLayout& layout);

// Shape helpers shared by the piece files (inline: every piece of every estimate goes through
// them). A token-wise tensor of full hidden width: whole on every TP rank, 1/TP under sequence
// parallel.
inline Formula hidden_tokens(const TokenShape& s, std::int64_t width, Label width_label) {
  Formula f;
  f.times(label_id("S/CP"), s.sequence).times(label_id("B"), s.micro_batch);
  if (s.sequence_parallel && s.tensor_parallel > 1) {
    f.times_tp_sp(width_label, width / s.tensor_parallel);
  } else {
    f.times(width_label, width);
  }
  return f;
}
// A token-wise tensor split by heads or width over TP.
inline Formula split_tokens(const TokenShape& s, std::int64_t width, Label width_label) {
  Formula f;
  f.times(label_id("S/CP"), s.sequence)
      .times(label_id("B"), s.micro_batch)
      .times_tp(width_label, width / s.tensor_parallel);
  return f;
}
// A token-wise tensor every TP rank holds whole (output of a duplicated projection).
inline Formula full_tokens(const TokenShape& s, std::int64_t width, Label width_label) {
  Formula f;
  f.times(label_id("S/CP"), s.sequence)
      .times(label_id("B"), s.micro_batch)
      .times(width_label, width);
  return f;
}
inline ActivationPiece make_piece(const TermInfo& info, const Formula& formula,
                                  std::uint32_t dropped_by = 0) {
  return {.info = &info, .formula = formula, .bytes = formula.value(), .dropped_by = dropped_by};
}
std::uint32_t module_bits(std::initializer_list<RecomputeModule> modules);

// One decoder layer's stored tensors (norms, attention, MLP), before recompute is applied.
std::vector<ActivationPiece> layer_activation_pieces(const Model& model, LayerKind kind,
                                                     const TokenShape& shape,
                                                     const TrainingConfig& training,
                                                     const ParallelLayout& layout);
std::vector<ActivationPiece> attention_pieces(const Model& model, AttentionKind kind,
                                              const TokenShape& shape,
                                              const TrainingConfig& training);
std::vector<ActivationPiece> mlp_pieces(const Model& model, MlpKind kind, const TokenShape& shape,
                                        const TrainingConfig& training,
                                        const ParallelLayout& layout);
// The same into `out` (replacing its contents, keeping its storage).
void attention_pieces_into(std::vector<ActivationPiece>& out, const Model& model,
                           AttentionKind kind, const TokenShape& shape,
                           const TrainingConfig& training);
void mlp_pieces_into(std::vector<ActivationPiece>& out, const Model& model, MlpKind kind,
                     const TokenShape& shape, const TrainingConfig& training,
                     const ParallelLayout& layout);

// torchtitan's Llama-3 layer and head (torchtitan_pieces.cpp), when TrainingConfig::framework is
// torchtitan: GQA attention with a dense SwiGLU MLP only (validation refuses other layers).
// Recompute maps to torchtitan's AC: selective is per-op SAC, which recomputes the pieces marked
// torchtitan_recomputed_by_sac and saves the ones marked torchtitan_saved_only_by_sac (no AC
// drops the latter); full is FullAC (each block keeps its input).
inline constexpr std::uint32_t torchtitan_recomputed_by_sac = 1u << 30;
inline constexpr std::uint32_t torchtitan_saved_only_by_sac = 1u << 31;
// torchtitan's ChunkedLossWrapper default.
inline constexpr std::int64_t torchtitan_loss_chunks = 8;
void torchtitan_attention_pieces_into(std::vector<ActivationPiece>& out, const Model& model,
                                      const TokenShape& shape);
void torchtitan_mlp_pieces_into(std::vector<ActivationPiece>& out, const Model& model,
                                const TokenShape& shape);
std::vector<ActivationPiece> torchtitan_head_pieces(const Model& model, const TokenShape& shape);
std::vector<ActivationPiece> torchtitan_head_transients(const Model& model, const TokenShape& shape,
                                                        std::int64_t padded_vocab);
// The pieces recompute drops: Megatron's selective modules, or torchtitan's AC marks.
inline std::uint32_t dropped_pieces(const TrainingConfig& training) {
  const bool selective = training.recompute.policy == RecomputePolicy::selective;
  if (training.framework == Framework::torchtitan) {
    return selective ? torchtitan_recomputed_by_sac : torchtitan_saved_only_by_sac;
  }
  return selective ? training.recompute.modules : 0;
}

// Whether a layer kind's norm is fused into the following TE LayerNormColumnParallelLinear
// (Megatron's TE spec: GQA's linear_qkv, the dense MLP's fc1), so that `layernorm` recompute,
// which only reaches stand-alone norm modules, cannot drop its output. MLA and MoE layers (and
// the users' KDA port) have a stand-alone norm.
bool attention_norm_fused(AttentionKind kind);
bool mlp_norm_fused(MlpKind kind);

// Backward working set of one layer (allocated in its backward, freed when it ends), one half at a
// time: the attention half (dq, dk, dv and the kernel's scratch) and the MLP half (the gradients
// of the fc1 and activation outputs while the saved ones are alive).
ActivationPiece attention_backward_piece(const Model& model, AttentionKind kind,
                                         const TokenShape& shape, const TrainingConfig& training);
ActivationPiece mlp_backward_piece(const Model& model, MlpKind kind, const TokenShape& shape,
                                   const TrainingConfig& training, const ParallelLayout& layout);
// Under a quantised recipe: the row-wise quantisation of the widest linear input on a rank with
// dense and/or MoE layers, alive during that layer's forward GEMM beside the column-wise copy it
// saves (none without a recipe, and for per-tensor fp8 keeping one array).
std::optional<ActivationPiece> quantised_forward_transient(const Model& model,
                                                           const TokenShape& shape,
                                                           const TrainingConfig& training,
                                                           const ParallelLayout& layout, bool dense,
                                                           bool moe);
// chunk_kda's forward intermediates of one KDA layer (fused backend; none for the others).
std::optional<ActivationPiece> kda_forward_transient(const Model& model, const TokenShape& shape,
                                                     const TrainingConfig& training);

// Bytes one rank keeps per layer and micro-batch after the recompute policy is applied:
// selective drops the pieces of the chosen modules; a fully recomputed layer keeps its input only.
std::int64_t stored_bytes(const std::vector<ActivationPiece>& pieces,
                          std::uint32_t dropped_modules);

// A layer's pieces depend only on its kind and the training and layout inputs, so one estimate
// builds each kind's pieces once and shares them across its stages (3 attention x 2 MLP kinds).
struct LayerPieces {
  // The attention and MLP halves: lists of the cache shared by every kind with the same half
  // (LayerPieceCache::attention_lists, mlp_lists; set again at each use).
  const std::vector<ActivationPiece>* attention = nullptr;
  const std::vector<ActivationPiece>* mlp = nullptr;
  std::int64_t all_bytes = 0;       // every piece, nothing recomputed
  std::int64_t sac_only_bytes = 0;  // torchtitan: pieces only per-op SAC saves
  bool all_fits = true;             // false: a piece, or their sum, does not fit in int64
  std::int64_t kept_bytes = 0;      // the pieces selective recompute keeps under `kept_mask`
  std::uint32_t kept_mask = 0;
  bool kept_fits = true;         // false: a kept piece, or their sum, does not fit in int64
  std::uint64_t generation = 0;  // LayerPieceCache::generation it was built in (0: never)
};
// One group of stored pieces summed over a stage's layers and micro-batches (activation_terms.cpp).
struct StoredBlock {
  TermGroup group;
  const std::vector<ActivationPiece>* pieces;  // a group's list (in the piece cache)
  ActivationPiece single;                      // or one piece, when `pieces` is null
  std::uint32_t dropped;
};

// How one virtual chunk's layers split under a recompute policy: layer counts only, no bytes
// (they depend on the layout and the recompute setting, not on sequence or batch).
// `count` layers of the layer kind in table slot `slot` (3 attention x 2 MLP kinds, and the same
// again for Megatron's bf16 first/last layers under a quantised recipe: layer_slots).
inline constexpr int layer_slots = 12;
struct SlotCount {
  std::int32_t slot = 0;
  std::int64_t count = 0;
};
// The non-zero entries of a per-slot count table, in slot order.
struct SlotCounts {
  std::array<SlotCount, layer_slots> entries{};
  std::int32_t size = 0;
  const SlotCount* begin() const { return entries.data(); }
  const SlotCount* end() const { return entries.data() + size; }
};
struct ChunkLayers {
  const VirtualStage* stage = nullptr;                  // in the StagePlan the cache was built for
  std::array<std::int64_t, layer_slots> full_layers{};  // layers keeping every piece, per slot
  SlotCounts full;                                      // the same, non-zero slots only
  std::int64_t checkpointed_groups = 0;  // full recompute: groups keeping only their input
  // Full recompute: the distinct compositions of its checkpointed groups (layers per kind slot),
  // in the order they first occur, with the first occurrence's layer range.
  struct Group {
    std::array<std::int64_t, layer_slots> layers{};
    SlotCounts kinds;  // `layers`, non-zero slots only
    std::int64_t count = 0;
    std::int64_t first = 0;
    std::int64_t last = 0;
  };
  std::vector<Group> groups;
};
// A rank's chunks under one recompute setting (policy none and selective share one structure).
struct RankLayers {
  std::uint32_t used_slots = 0;  // bit per layer kind slot that any chunk's layers use
  // The global layer range [bf16_before, bf16_from) computes in the recipe; the layers before
  // and from it compute in bf16 (the whole model when no recipe: bf16_before = 0, bf16_from = L).
  std::int64_t bf16_before = 0;
  std::int64_t bf16_from = 0;
  bool full = false;
  FullRecomputeMethod method = FullRecomputeMethod::uniform;
  std::int64_t group_layers = 0;
  std::vector<ChunkLayers> chunks;
};
// What a rank keeps that depends on the training inputs but not on recompute or micro-batches in
// flight: the AttnRes pieces of each chunk and the rank's transients other than the recompute
// working set, in the order they are listed.
// Where in the step a transient is alive (Term::place, Term::chunk; timeline.h).
struct TransientScope {
  TransientPlace place = TransientPlace::layer;
  std::int16_t chunk = -1;  // TransientPlace::chunk: the chunk's index on the rank
};
// The transients one pass can hold at its moment, the largest first found: a forward pass holds
// forward transients, a backward pass backward ones; boundary buffers are in both; a chunk's own
// transients only in its passes; a backward layer transient sits inside a recompute working set.
struct PassOption {
  std::int64_t bytes = 0;
  std::int64_t transient = -1;  // index into the stage's transient list
  std::int64_t enclosing = -1;  // the recompute working set around it
};

struct RankPieces {
  struct Chunk {
    ActivationPiece attn_res_slots;
    ActivationPiece attn_res_weights;
  };
  std::vector<Chunk> chunks;
  std::vector<ActivationPiece>
      transients;                      // logits (head), MoE dispatch, AttnRes mix, pipeline, CP
  std::vector<TransientScope> scopes;  // one per transient
  std::int64_t largest_transient_bytes = 0;  // of `transients`
  // Bytes of the pass-wide and phase-wide transients every forward ([0]) and backward ([1])
  // pass holds beside its other transients (sharded data parallelism's gathered parameters).
  std::array<std::int64_t, 2> wide_bytes{};
  // What each pass kind (chunk x 2 + backward) holds of `transients`, before the recompute working
  // set (which a stage adds after them, and which encloses the largest backward layer transient,
  // `inner_backward`; -1: none). The working set is the only transient that depends on recompute.
  std::vector<PassOption> pass_options;
  std::int64_t inner_backward = -1;
  std::uint64_t generation = 0;  // LayerPieceCache::generation it was built in
  bool has_moe = false;
  bool fits = true;  // false: a buffer or a transient does not fit in int64
};

// What a rank's passes are weighed with for one piece generation and recompute setting: one
// micro-batch's stored bytes per chunk, and the transient each pass kind holds (PassOption per
// chunk x 2 + backward). Micro-batches per step do not enter: a sweep over them reuses it.
struct RankPeakInputs {
  std::uint64_t generation = 0;  // LayerPieceCache::generation; 0: empty
  RecomputeConfig recompute{};
  std::vector<std::int64_t> chunk_bytes;
  std::vector<PassOption> options;
  bool fits = true;  // false: a byte count behind them does not fit in int64
  // The inputs of the rank's last peaks estimate that did not keep them: the next one with the
  // same inputs keeps them.
  std::uint64_t seen_generation = 0;
  RecomputeConfig seen_recompute{};
};

// Everything per micro-batch that does not depend on the stage: built once per estimate (lazily)
// and shared by its stages; StageActivationTerms' sums point into it.
struct LayerPieceCache {
  // What the pieces were built for: the training inputs they read (TrainingConfig without the
  // fields no piece depends on: global batch, recompute, flat headroom). The layout and model
  // are EstimateCache's keys.
  std::optional<TrainingConfig> built_for;
  std::array<LayerPieces, layer_slots> kinds;  // rebuilt in place when their generation is old
  struct PieceList {
    std::vector<ActivationPiece> pieces;
    std::uint64_t generation = 0;  // 0: never built
  };
  // Per AttentionKind and MlpKind, then the same for the bf16 layers of a quantised run.
  std::array<PieceList, 6> attention_lists;
  std::array<PieceList, 4> mlp_lists;
  std::optional<std::vector<ActivationPiece>> head;             // final norm, logits, loss
  std::optional<std::vector<ActivationPiece>> head_transients;  // logits and their gradient
  std::optional<std::vector<ActivationPiece>> mtp_extra;        // MTP norms and eh_proj input
  std::optional<ActivationPiece> checkpoint_input;              // full recompute's group input
  std::optional<ActivationPiece> embedding_dropout;             // the embedding's dropout mask
  std::optional<ActivationPiece> mtp_checkpoint_inputs;  // an MTP layer's, under full uniform
  // Transients every rank with the layer kind has alike (build_rank_pieces picks among them).
  struct SharedTransients {
    std::optional<ActivationPiece> moe_dispatch;
    std::optional<std::optional<ActivationPiece>> kda_forward;
    std::array<std::optional<ActivationPiece>, 3> attention_backward;  // per AttentionKind
    std::array<std::optional<ActivationPiece>, 2> mlp_backward;        // per MlpKind
    std::array<std::optional<ActivationPiece>, 3> cp_exchange;         // per AttentionKind
    std::array<std::optional<std::optional<ActivationPiece>>, 3> cp_backward;
  };
  SharedTransients shared;
  SharedTransients shared_bf16;  // for ranks holding only bf16 layers of a quantised run
  // Counts the training inputs the cache has been built for: a rank's pieces from an older
  // generation are rebuilt in place (their lists keep their storage).
  std::uint64_t generation = 1;
  std::vector<RankPieces> ranks;  // per pipeline rank
  // Per pipeline rank, the layer structure without and with full recompute (kept when only the
  // training inputs change: prepare_piece_cache keeps them; a new layout clears the whole cache).
  // Per pipeline rank, the passes of one step that can be its peak (schedule.h: peak_candidates)
  // for M micro-batches: the layout and M fix them, not the bytes. Sweeps over the micro-batch
  // size change M: a few are kept per rank, the least recently used replaced.
  struct RankSchedule {
    std::int64_t micro_batches = -1;
    std::int64_t chunks = -1;
    std::uint64_t last_used = 0;
    PeakCandidates candidates;
  };
  static constexpr std::size_t schedules_per_rank = 8;
  std::vector<std::array<RankSchedule, schedules_per_rank>> schedules;  // per pipeline rank
  std::uint64_t schedule_clock = 0;
  std::vector<std::optional<RankLayers>> plain_layers;
  std::vector<std::optional<RankLayers>> full_layers;
  // Scratch storage of stage_activation_terms, reused by every stage (no allocation per stage).
  std::vector<StoredBlock> stored_blocks;
  std::vector<PassOption> pass_options;
  std::vector<RankPeakInputs> rank_peak_inputs;  // per pipeline rank (peaks estimates)
  // Storage of the per-chunk lists a stage report gave up (estimate.cpp swaps them in).
  std::vector<std::int64_t> spare_in_flight;
  std::vector<std::int64_t> spare_chunk_bytes;  // per pass kind (chunk x 2 + backward)
  // Per stored block, micro-batch-independent copies per virtual chunk (block x chunks).
  std::vector<std::int64_t> stored_units;
  // The sharded data parallelism the ranks' transients include (memory/sharding_terms.h).
  ShardingPieceInputs sharding{};
};

// Resets `cache` unless it was built for the same piece inputs of `training` and `sharding`.
void prepare_piece_cache(LayerPieceCache& cache, const TrainingConfig& training,
                         const ShardingPieceInputs& sharding = {});

}  // namespace stagemem
