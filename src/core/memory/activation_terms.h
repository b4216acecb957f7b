// activation_terms.h — a pipeline rank's activation and transient terms for one training step.
//
// Purpose: sums the per-micro-batch pieces (activation_pieces.h, memory/model_pieces.h) over the
// rank's layers, its virtual chunks and the micro-batches each chunk holds at the peak
// (schedule.h), under the recompute policy, and lists the transients that sit on top.
//
// Recompute (Megatron's options):
//  - none: every piece is kept;
//  - selective: pieces of the chosen --recompute-modules are dropped; the largest dropped set of
//    one layer comes back in backward as a transient (the selective working set);
//  - full, uniform: each chunk's layers are checkpointed in groups of `layers`; a group keeps only
//    its input (S/CP x B x h bf16, /TP with SP); full, block: the first `layers` layers of each
//    chunk are checkpointed one by one, the others keep everything. In backward one group is
//    recomputed at a time: its full working set for one micro-batch is a transient.
// Peak of the forward/backward phase: the largest moment of the step (schedule.h's order). At each
// forward or backward pass of a micro-batch on a chunk, the stored activations of the
// micro-batches alive then (that pass's own counted whole) are co-live with the transients that
// pass can hold (TransientPlace): one at a time, except that a backward transient of a layer sits
// inside the recompute working set of its group. The search visits only the passes that can be
// the first maximum for some bytes (schedule.h: peak_candidates, cached per rank and M), not all
// 2 x M x chunks. timeline.h walks the same order event by event; its maximum equals this peak
// (tested).
// Units: bytes (int64) per rank.
// Limitations: AttnRes slots and MTP layers are kept whatever the recompute policy. A pass holds
// all of its micro-batch's activations on the chunk at its moment (exact for the first layer a
// backward runs, an upper bound for its other layers); layer transients and recompute working
// sets are the largest over the rank's layers and may occur in any of its chunks.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "config/training.h"
#include "memory/activation_pieces.h"
#include "model/model.h"
#include "parallel/layout.h"
#include "report/report.h"

namespace stagemem {

struct StageActivationTerms {
  std::vector<Term> stored;      // Family::activation
  std::vector<Term> transients;  // Family::transient, forward/backward phase
  // When set, stored and transient terms are appended here (estimate() passes the stage's term
  // list, so no intermediate vectors are built); `stored`/`transients` then stay empty and the
  // indices below are into `*into`.
  std::vector<Term>* into = nullptr;
  std::int64_t first_stored = 0;     // index of the first stored term in its list
  std::int64_t first_transient = 0;  // index of the first transient term in its list
  std::int64_t stored_bytes = 0;
  std::int64_t largest_transient_bytes = 0;
  std::int64_t largest_transient = -1;            // its index in its list; -1 when there is none
  std::vector<std::int64_t> in_flight_per_chunk;  // at the peak moment
  std::vector<std::int64_t> chunk_stored_bytes;   // one micro-batch on each chunk
  std::vector<std::int64_t> activation_units;     // StageReport::activation_units (full only)
  // The peak moment; its `transient` and `enclosing` are indices into the transient list (as
  // largest_transient); largest_transient_bytes is their sum.
  PeakMoment moment;
  bool fits = true;  // false: some term's bytes do not fit in int64 (they are saturated)
};

// With `peaks_only`, no terms are built: only stored_bytes, largest_transient_bytes,
// in_flight_per_chunk, chunk_stored_bytes, moment (phase, micro-batch and chunk) and fits are set
// (the same sums, for sweeps).
// Requires a validated configuration: `plan` from plan_stages, M >= 1. `cache` must be used with
// one (model, layout, training) only.
StageActivationTerms stage_activation_terms(const Model& model, const ParallelLayout& layout,
                                            const TrainingConfig& training, const StagePlan& plan,
                                            std::int64_t rank, std::int64_t micro_batches,
                                            LayerPieceCache& cache,
                                            std::vector<Term>* into = nullptr,
                                            bool peaks_only = false);
StageActivationTerms stage_activation_terms(const Model& model, const ParallelLayout& layout,
                                            const TrainingConfig& training, const StagePlan& plan,
                                            std::int64_t rank, std::int64_t micro_batches);

// The pipeline input each virtual chunk fed by a previous stage keeps after the step, with its
// gradient: Megatron's forward_step hands the received tensor to the model by set_input_tensor,
// and TransformerBlock keeps it in `self.input_tensor` until the next set_input_tensor
// (megatron/core/transformer/transformer_block.py); the tensor is a leaf that requires grad, so
// its `.grad`, computed in the micro-batch's backward and sent back, stays attached
// (megatron/core/pipeline_parallel/schedules.py backward_step). After a step each such chunk
// holds the [S/CP, B, h] bf16 input of its last forward (h/TP under sequence parallelism) and its
// gradient. One Family::transient term (TransientPlace::between_steps) appended to `out` when the
// rank has such chunks: alive in the optimizer step and between steps; the next step's first
// forward of the chunk replaces it before that pass allocates anything.
// Limitations: AttnRes slots that travel with the hidden state are not counted in it; in the
// interleaved schedule a chunk keeps it during the next step's passes on earlier chunks too, which
// the step timeline does not hold.
void append_kept_pipeline_input_terms(const Model& model, const ParallelLayout& layout,
                                      const TrainingConfig& training, const StagePlan& plan,
                                      std::int64_t rank, std::vector<Term>& out);

}  // namespace stagemem
