// sharding_terms.h — what sharded data parallelism holds besides the sharded state: the gathered
// parameters and the gradient buffers of the units being computed, at their moments in the step.
//
// Purpose: the transients of Megatron-FSDP and FSDP2 on the step timeline (timeline.h), from
// their source (docs/physics-notes.md, "Sharded data parallelism"; docs/research/issue25-*):
//  - a unit is what one all-gather gathers: a decoder layer (FSDP2 under torchtitan: each
//    TransformerBlock; Megatron-FSDP: fsdp_unit_modules = TransformerLayer), the embedding and the
//    norm + output head (torchtitan's separate units); sizes are the rank's elements of it (after
//    TP / EP). FSDP2's figures are the largest over the moments of the rank's unit sequence (its
//    chunks' units in forward order; a unit's neighbours are the ones before and after it);
//    Megatron-FSDP's use the largest layer;
//  - FSDP2 (torch/distributed/fsdp/_fully_shard/_fsdp_collectives.py foreach_all_gather,
//    foreach_all_gather_copy_out, foreach_reduce; _fsdp_param_group.py), bf16 parameters (b_p = 2)
//    and the reduce dtype b_r:
//     - forward, through each unit's pass: its per-parameter unsharded copies and the flat
//       all-gather output kept in all_gather_state for implicit prefetch (2 x N b_p), plus the
//       flat outputs of explicitly prefetched units; at the unit boundary the next unit's flat
//       output (N b_p) before the previous one is freed;
//     - backward, through each unit's pass: its parameters (N b_p), the next unit's prefetched
//       all-gather (N b_p), its unsharded gradients (N b_p) and the previous unit's
//       reduce-scatter input held in reduce_scatter_state (N b_r). The reduce-scatter copy-in
//       frees the held input first and reshards the parameters, so it holds no more;
//     - reshard_after_forward False: every unit's unsharded parameters stay from its forward to
//       its backward (torchtitan's default under PP, and its norm + output unit unless
//       "always"); int k: a 1/k shard of every unit stays instead;
//  - Megatron-FSDP optim_grads_params (megatron_fsdp/param_and_grad_buffer.py
//    AllGatherPipeline, GradReducePipeline; megatron_fsdp.py suggested_communication_unit_size):
//    the unit computing plus the units prefetched until the prefetched elements reach the
//    suggested all-gather prefetch size (max(1e9, 2 x the average unit) / 2 elements); the
//    non-unit parameters (embedding, head, final norm) stay gathered once gathered (resident);
//    optim_grads and optim_grads_params: unsharded gradient buckets wait for their reduce-scatter
//    until the queue passes suggested_RS_queue_capacity (the same 1e9 floor), so in backward up
//    to that many elements of the rank's units are held in the gradient dtype.
// Units: bytes (int64) per rank.
// Limitations: a pass-wide figure is exact at the pass where every unit counted is alive (the
// end of forward for parameters kept gathered) and an upper bound before; FSDP2's reduce-scatter
// output and fp32 cast (1/W of a unit) and HSDP's all-reduce buffers are below the compute
// moment's size and not listed; gradient accumulation without reduce-scatter (no_sync) is not
// modelled; Megatron-FSDP's double buffer (fsdp_double_buffer, NCCL user buffers) is not
// modelled; its prefetch and queue rules were read in source, not measured.
#pragma once

#include <cstdint>
#include <vector>

#include "config/sharding_rules.h"
#include "memory/activation_pieces.h"
#include "model/model.h"
#include "parallel/layout.h"
#include "report/report.h"

namespace stagemem {

// The units one pipeline rank gathers, in its elements.
struct RankUnits {
  std::int64_t largest = 0;        // the largest unit gathered whole
  std::int64_t all = 0;            // every unit on the rank (layers, MTP layers, embedding, head)
  std::int64_t count = 0;          // units on the rank
  std::int64_t non_layer = 0;      // embedding, final norm and head (Megatron-FSDP: not units)
  std::int64_t largest_layer = 0;  // the largest decoder (or MTP) layer
  std::int64_t layers = 0;         // decoder and MTP layers on the rank
  std::int64_t kept_head = 0;      // torchtitan's norm + output unit (kept gathered by default)
  // Every unit in forward order (per chunk: embedding, layers, MTP layers, head).
  std::vector<std::int64_t> order;
};
RankUnits rank_units(const Model& model, const ParallelLayout& layout,
                     const std::vector<const VirtualStage*>& chunks);

// The sharding transients of one rank, each with where it is alive (TransientScope), appended
// to `pieces` / `scopes`; nothing for Megatron's DDP or without parameter/gradient sharding.
void append_sharding_transients(const Model& model, const ParallelLayout& layout,
                                const ShardingPieceInputs& inputs,
                                const std::vector<const VirtualStage*>& chunks,
                                std::vector<ActivationPiece>& pieces,
                                std::vector<TransientScope>& scopes);

// Megatron-FSDP optim_grads_params: the non-unit parameters kept gathered after their first
// all-gather, as one resident term (allocated in the first step); nothing otherwise.
void append_sharding_resident_terms(const Model& model, const ParallelLayout& layout,
                                    const ResolvedSharding& sharding, const Precision& precision,
                                    const StageParameters& stage, std::vector<Term>& out);

}  // namespace stagemem
