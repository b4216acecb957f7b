// parameter_tensors.h — the tensors Megatron allocates, one by one, for a stage's parameters and
// their optimizer state: the allocator replay's input for the resident terms
// (allocator/step_replay.h).
//
// Purpose: a resident term is a sum; the caching allocator sees tensors. A term of 3 GiB made of
// 300 fp32 main-parameter shards rounds each shard up on its own (to 512 B, and above 10 MiB to
// 2 MiB segments), and per-parameter tensors freed at init leave cached blocks behind. This file
// lists those tensors in the order Megatron-core creates them (docs/physics-notes.md, "Resident
// tensors", cites each rule's source):
//  - parameters: Megatron's modules, per rank (1/TP, routed experts 1/ETP each), in registration
//    order chunk by chunk: embedding, decoder layers, final norm, MTP, output layer. Fused shapes:
//    linear_qkv = q + k + v (and their biases), linear_fc1 = gate + up (and biases), TE
//    GroupedLinear's weight0..N-1 per local expert for fc1, then for fc2; shared experts one fc1
//    and one fc2. Every parameter starts as a tensor of its own (TE initialises on the device).
//  - DDP (distributed/param_and_grad_buffer.py, _ParamAndGradBuffer): per model chunk one buffer
//    of the dense and one of the expert-parallel parameters, laid out in reverse registration
//    order; with the distributed optimizer each parameter starts at a multiple of 64 elements and
//    each bucket ends at a multiple of lcm(DP, 128). Buckets of ddp_bucket_size elements (default
//    max(40M, 1M x DP x CP)) only with overlap_grad_reduce and only in the first chunk of
//    pipeline rank 0 (distributed_data_parallel.py turns them off elsewhere); a shared embedding
//    (tied, PP > 1) takes a bucket of its own. grad_data is one tensor per buffer; with the
//    distributed optimizer param_data too, into which each parameter is copied, its own tensor
//    freed.
//  - distributed optimizer (optimizer/distrib_optimizer.py): data-parallel rank r owns
//    [r S, (r+1) S) of each bucket (S = bucket / DP). Each parameter's intersection with rank 0's
//    range is one fp32 main-parameter tensor (created at optimizer init) and one tensor per Adam
//    moment (exp_avg, exp_avg_sq; Muon's momentum), created in the first step. Rank 0 is the rank
//    Megatron's memory report prints.
//  - non-distributed optimizer (Float16OptimizerWithFloat16Params): a whole fp32 copy of each
//    parameter, and its moments.
//  - order of the optimizer's tensors: its parameter groups, weight-decayed dense parameters
//    first, then the not decayed ones (biases and 1-D tensors), then the expert-parallel ones;
//    within a group, buffer order (distributed) or registration order.
// Units: bytes (int64) per rank; elements for shapes.
// Limitations (the replay allocates the other resident terms as one tensor each):
//  - a distributed-optimizer term that covers only part of its group's parameters (Muon's and
//    AdamW's groups under distributed Muon; master weights beside fp32-stored tensors) is taken as
//    1/shards of each of its parameters, as the term assumes; the real split follows the buffer;
//  - Megatron's DDP only: Megatron-FSDP and FSDP2 state is left one tensor per term;
//  - weights are split only when one dtype holds them all (bf16 or fp32): quantised primary
//    weights (TE Float8Tensor in a uint8 buffer) and their scales stay one tensor each;
//  - the order of a layer's parameters follows the Hugging Face tensor list with Megatron's
//    fusions, not TE's exact registration order (norm weights fused into linear_qkv / fc1 sit
//    where the unfused norm is); only the packing of small tensors inside shared segments depends
//    on it;
//  - KDA (not upstream Megatron) keeps fla's separate projections.
#pragma once

#include <cstdint>
#include <vector>

#include "config/config.h"
#include "config/sharding_rules.h"
#include "memory/resident_terms.h"
#include "model/model.h"
#include "parallel/layout.h"
#include "report/report.h"

namespace stagemem {

// One Megatron parameter on one rank of a stage.
struct ParameterTensor {
  std::int64_t elements = 0;  // on this rank (TP / ETP shard, padded vocabulary)
  TensorRole role = TensorRole::hidden_matrix;
  std::int32_t chunk = 0;         // virtual chunk on the rank
  bool shared_embedding = false;  // tied embedding or output weight under PP > 1
};

// Every parameter of the stage, chunk by chunk in registration order.
std::vector<ParameterTensor> megatron_parameters(const Model& model, const StageParameters& stage,
                                                 const ParallelLayout& layout);

// Where each parameter lands in its DDP buffer and how much of it data-parallel rank 0's shard
// holds (the distributed optimizer), per parameter of megatron_parameters' list.
struct BufferPlacement {
  std::int64_t buffer = 0;          // index in the stage's buffers: chunk x 2 + (expert ? 1 : 0)
  std::int64_t start = 0;           // first element in the buffer (after the 64-element padding)
  std::int64_t rank0_elements = 0;  // elements in rank 0's shard of the parameter's bucket
};
struct DdpBufferLayout {
  std::vector<BufferPlacement> placement;     // per parameter
  std::vector<std::int64_t> buffer_elements;  // per buffer (chunk x 2 + expert), padded
  std::vector<std::int64_t> buckets;          // per buffer: its bucket count
  std::vector<std::size_t> order;             // parameter indices in buffer order, buffer by buffer
};
// `distributed`: the distributed optimizer (padding and shards); `dense_shards` and
// `expert_shards` the data-parallel groups it shards over; `bucket_elements` 0: one bucket.
DdpBufferLayout ddp_buffer_layout(const std::vector<ParameterTensor>& parameters,
                                  std::int64_t chunks, bool distributed, std::int64_t dense_shards,
                                  std::int64_t expert_shards, std::int64_t first_chunk_bucket);

// The replay's resident allocations (ResidentAllocations, report/report.h).
// Megatron DDP only (empty for Megatron-FSDP and FSDP2). `resident` is the stage's resident term
// list (memory/resident_terms.h, then the sharding and dummy-wgrad terms), whose indices the
// entries carry. Past `max_tensors` (each parameter counted as its 5 possible entries: weight,
// its free, main parameter, two moments) the lists are not built (ResidentAllocations::
// over_bound).
ResidentAllocations resident_allocations(
    const Model& model, const StageParameters& stage, const ParallelLayout& layout,
    const std::vector<Term>& resident, const Precision& precision, const OptimizerConfig& optimizer,
    const ResolvedSharding& sharding, const DataParallelSharding& ddp, std::int64_t max_tensors);

}  // namespace stagemem
