// resident_terms.h — memory that lives across training steps, per rank of one pipeline stage.
//
// Purpose: weights, gradient buffers, optimizer state and extra cast copies, each a named term
// derived from the stage's per-rank parameter elements (layout.h) with its formula text, what it
// scales with and its allocation point. This file is the one place these formulas live.
//
// Conventions (Megatron-core with TransformerEngine; each is a visible option in config.h):
//  - weights: bf16 by default. fp8 / MX storage applies to linear-layer matrices only (TE's fp8
//    primary weights, `--fp8-param-gather`); embedding, head, norms, routers, biases, vectors and
//    convolution kernels keep bf16 (fp32 when the dense weights are fp32). Scale tensors are
//    separate terms.
//  - gradients: one contiguous main_grad buffer per rank over every parameter it holds (fp32 by
//    default), allocated when the model is wrapped for data parallelism, before the optimizer.
//  - master weights: a copy in the master dtype of every parameter not already stored in fp32,
//    created when the optimizer is constructed (Megatron builds its main params up front).
//  - Adam keeps exp_avg and exp_avg_sq, Muon one momentum buffer; PyTorch-style optimizers create
//    them lazily inside the first step() (`state` is empty until then), so they are alive only
//    after the first optimizer step.
//  - Muon updates 2-D hidden matrices (routers and expert matrices by default); embedding, head,
//    norms, biases, vectors and convolution kernels use AdamW (OptimizerConfig says which).
//  - the distributed optimizer shards master weights and moments (not weights, not gradients):
//    dense parameters over DP x CP (Megatron's data-parallel group with context parallelism),
//    routed-expert parameters over the expert-data-parallel group TP x CP x DP / (EP x ETP).
//    Distributed Muon shards the same way. This gives Megatron's 6 + 12/d B/param for bf16
//    weights with fp32 grads, and 2 + 4 + 8/d for distributed Muon.
// Units: bytes (int64) per rank; per-parameter figures are doubles for display only.
// Limitations:
//  - a shard is ceil(elements / shards); Megatron's extra bucket padding is not modelled.
//  - each shard is assumed to hold the Muon and AdamW groups in proportion; the real split follows
//    the buffer order (layer-wise distributed Muon assigns whole tensors), so one rank can hold
//    more AdamW state (4 B/elem more) than the average shown.
//  - quantised compute (precision.fp8_recipe, low_precision.h): TE's cached weight copies
//    (bf16/fp32 weights: row- and column-wise usages, one array for per-tensor fp8 on sm100/
//    sm103) and the column-wise usage of quantised primary weights, with their scales; delayed
//    scaling's amax histories. The scales are counted on the rank's aggregate elements (per-tensor
//    padding of scale rows to 128 and columns to 4 is not added); scales of fp8 moments are not
//    counted. Megatron's bf16 first/last layers get no cached copies and keep bf16 matrices.
//
// Library buffers kept for the whole run (append_dummy_wgrad_terms):
//  - with gradient-accumulation fusion (Megatron's default), every TE linear (and Megatron's own
//    ColumnParallelLinear, the LM head) accumulates its weight gradient into main_grad inside the
//    backward GEMM and returns a dummy weight gradient to autograd: TE's get_dummy_wgrad
//    (transformer_engine/pytorch/module/base.py) keeps one uninitialised tensor per (shape,
//    dtype) in a module-level dict for the life of the process, so every distinct per-rank weight
//    shape on the rank costs one buffer in the parameter dtype (bf16; fp32 for fp32 weights),
//    shared by every layer and micro-batch with that shape. Megatron's linear layers
//    (core/tensor_parallel/layers.py) use the same function when TE is installed. Created in the
//    first backward. Without the fusion (--no-gradient-accumulation-fusion) no such buffer exists.
//    Shapes follow Megatron's fused modules: linear_qkv [(np + 2 ng) hn / TP, h], linear_proj,
//    fc1 [2I / TP, h] (gated) or [I / TP, h], fc2, MLA's five projections and output gate, KDA's
//    q/k/v/o projections, grouped experts [2I / ETP, w] and [w, I / ETP] per expert, shared
//    experts, latent-MoE projections, MTP eh_proj [h, 2h] and the LM head [padded V / TP, h]
//    (also when tied: the head's GEMM gets the embedding weight). The router (a plain matmul),
//    norms, biases and the embedding lookup take no dummy. Limitation: KDA is not upstream
//    Megatron; only its q/k/v and output projection shapes are counted (its low-rank gate and
//    beta projections may be TE linears in the users' fork, each a further small buffer).
#pragma once

#include <cstdint>
#include <vector>

#include "config/config.h"
#include "config/sharding_rules.h"
#include "memory/low_precision.h"
#include "model/model.h"
#include "parallel/layout.h"
#include "report/report.h"

namespace stagemem {

// Bytes of one stored value, without scales (mxfp4: 0.5).
double weight_value_bytes(WeightDtype dtype);
std::int64_t grad_bytes(GradDtype dtype);
std::int64_t master_bytes(MasterDtype dtype);
std::int64_t moment_bytes(MomentDtype dtype);
// Moment buffers per element: Adam 2 (exp_avg, exp_avg_sq), Muon 1 (momentum).
std::int64_t moments_per_element(bool muon);
bool is_distributed(OptimizerKind kind);
bool is_muon(OptimizerKind kind);
// Whether Muon updates tensors of this role under the configured split (false for Adam kinds).
bool muon_covers(const OptimizerConfig& optimizer, TensorRole role);
// The dtype a tensor of this role is stored in.
WeightDtype storage_dtype(const Precision& precision, TensorRole role);

// How many ranks share the state of dense and routed-expert parameters, and which state is
// sharded (sharding_rules.h):
//  - the optimizer state (master weights, moments) with the distributed optimizer or any FSDP
//    strategy from optim;
//  - the gradients from optim_grads (Megatron-FSDP's main_grad_buffer shard, FSDP2's fp32 .grad
//    shards);
//  - the parameters under optim_grads_params (Megatron-FSDP's model_weight_buffer shard; FSDP2's
//    DTensor shards, which are fp32 and are the optimizer's parameters themselves: no master
//    copy). A shard is ceil(elements / shards) of each group.
struct StateShards {
  std::int64_t dense = 1;   // DP x CP (the shard group x CP under HSDP), else 1
  std::int64_t expert = 1;  // the expert-data-parallel size (/ the replicate group), else 1
  bool sharded_state = false;
  bool sharded_grads = false;
  bool sharded_params = false;
  bool fp32_parameter_shards = false;  // FSDP2
};
// Megatron's DDP: the distributed optimizer shards the state over DP x CP (experts: expert DP).
StateShards state_shards(const OptimizerKind kind, const ParallelLayout& layout);
StateShards state_shards(const ResolvedSharding& sharding);

// What the resident terms need of the low-precision compute: the recipe and layouts, the amax
// history length (delayed scaling) and the elements of the rank's bf16 first/last layers (no
// cached quantised copies; bf16 storage where the other linear matrices are quantised).
struct LowPrecisionResident {
  LinearQuantisation quantisation{};
  std::int64_t amax_history_len = 1;
  RoleCounts bf16_layers{};
};
LowPrecisionResident low_precision_resident(const TrainingConfig& training, const Model& model,
                                            const StageParameters& stage,
                                            const ParallelLayout& layout);

// Every resident term of one rank of a stage, in a stable order: weights, scales, quantised weight
// copies, gradients, master weights, moments, cast copies. Terms with zero bytes are left out.
std::vector<Term> resident_terms(const RoleCounts& per_rank, const Precision& precision,
                                 const OptimizerConfig& optimizer, const StateShards& shards,
                                 const LowPrecisionResident& low_precision = {});
// The same, appended to `out`.
void append_resident_terms(const RoleCounts& per_rank, const Precision& precision,
                           const OptimizerConfig& optimizer, const StateShards& shards,
                           std::vector<Term>& out, const LowPrecisionResident& low_precision = {});

// The dummy weight-gradient buffers TE keeps under gradient-accumulation fusion (see above), as
// one resident term (allocated in the first step's backward); nothing without the fusion. Which
// weights have a kept buffer follows the stack (version rules te-dummy-wgrad-cache: TE's Linear
// and LayerNormLinear from TE 2.3; te-grouped-linear-dummy-wgrad-cache: the routed experts'
// GroupedLinear from TE 2.10; megatron-lm-head-dummy-wgrad-cache: the output layer from
// Megatron-core 0.14 with TE 2.3). Before those releases each backward allocates a fresh buffer
// that Megatron's gradient hook frees: a backward transient of one weight (all local experts'
// for GroupedLinear), not counted (docs/physics-notes.md, "Version rules").
void append_dummy_wgrad_terms(const Model& model, const StageParameters& stage,
                              const ParallelLayout& layout, const Precision& precision,
                              const SoftwareStack& stack, std::vector<Term>& out);

// Resident bytes per parameter for a model made only of dense bf16/fp32 hidden matrices, in the
// form of Megatron's table (e.g. distributed Adam, bf16 weights, fp32 grads: 6 + 12/d). Built from
// the same per-element functions as resident_terms. Under Muon every such matrix is in the Muon
// group. `shards` is the data-parallel sharding of the state (ignored without a distributed kind).
double resident_bytes_per_parameter(const Precision& precision, const OptimizerConfig& optimizer,
                                    std::int64_t shards);

}  // namespace stagemem
