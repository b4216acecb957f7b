#include "config/config_fields.h"

#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>

#include "config/devices.h"
#include "config/measurement_text.h"
#include "config/version_rules.h"
#include "model/model_text.h"
#include "model/presets.h"

namespace stagemem {
namespace {

constexpr std::int64_t max_bytes = max_config_bytes;

std::vector<std::string_view> device_names() {
  std::vector<std::string_view> names;
  for (const DevicePreset& device : device_presets()) names.push_back(device.name);
  return names;
}

// Accessor shorthands for the table: each expands to the accessor pair of one member.
#define STAGEMEM_INTEGER(member) .integer = [](Config& c) { return &c.member; }
#define STAGEMEM_BOOLEAN(member) .boolean = [](Config& c) { return &c.member; }
#define STAGEMEM_TEXT(member) .text = [](Config& c) { return &c.member; }
#define STAGEMEM_NUMBER(member) .number = [](Config& c) { return &c.member; }
#define STAGEMEM_CHOICE(member, Enum)                                       \
  .get_choice = [](const Config& c) { return static_cast<int>(c.member); }, \
  .set_choice = [](Config& c, int index) { c.member = static_cast<Enum>(index); }
// A kernel option that is a version question: setting it makes it explicit (version_rules.h).
#define STAGEMEM_STACK_CHOICE(member, Enum, kernel)                         \
  .get_choice = [](const Config& c) { return static_cast<int>(c.member); }, \
  .set_choice =                                                             \
      [](Config& c, int index) {                                            \
        c.member = static_cast<Enum>(index);                                \
        c.training.explicit_kernels |= stack_kernel_bit(kernel);            \
      },                                                                    \
  .stack_kernel = static_cast<int>(kernel)

// Megatron's --fp8-recipe spellings of the recipes stagemem named first.
constexpr std::array<ChoiceAlias, 2> recipe_aliases = {{
    {"tensorwise", static_cast<int>(Fp8Recipe::tensor)},
    {"blockwise", static_cast<int>(Fp8Recipe::block)},
}};

// Megatron-FSDP's strategy names are the ZeRO stages; PyTorch FSDP1's ShardingStrategy names.
constexpr std::array<ChoiceAlias, 6> sharding_aliases = {{
    {"ddp", static_cast<int>(ShardingStrategy::no_shard)},
    {"zero1", static_cast<int>(ShardingStrategy::optim)},
    {"zero2", static_cast<int>(ShardingStrategy::optim_grads)},
    {"shard_grad_op", static_cast<int>(ShardingStrategy::optim_grads)},
    {"zero3", static_cast<int>(ShardingStrategy::optim_grads_params)},
    {"full_shard", static_cast<int>(ShardingStrategy::optim_grads_params)},
}};
// FSDP2's reshard_after_forward=True / False.
constexpr std::array<ChoiceAlias, 2> reshard_aliases = {{
    {"true", static_cast<int>(ReshardAfterForward::always)},
    {"false", static_cast<int>(ReshardAfterForward::never)},
}};

// The table. Keys are short, lowercase and stable: they appear in published links. Append only.
const std::array<ConfigField, 77> fields = {{
    {.key = "model",
     .path = "model",
     .help = "built-in model preset name",
     .kind = FieldKind::text,
     .max_text_length = 64,
     STAGEMEM_TEXT(model),
     .names = preset_names},
    {.key = "custom",
     .path = "custom_model",
     .help = "a custom model in stagemem's one-line model text (overrides model)",
     .kind = FieldKind::text,
     .max_text_length = 8192,
     STAGEMEM_TEXT(custom_model)},
    // Parallel layout.
    {.key = "tp",
     .path = "parallel.tensor_parallel",
     .help = "tensor parallel size",
     .min = 1,
     .max = 1024,
     STAGEMEM_INTEGER(parallel.tensor_parallel)},
    {.key = "pp",
     .path = "parallel.pipeline_parallel",
     .help = "pipeline parallel size (ranks)",
     .min = 1,
     .max = 1024,
     STAGEMEM_INTEGER(parallel.pipeline_parallel)},
    {.key = "vpp",
     .path = "parallel.virtual_stages",
     .help = "virtual pipeline stages (model chunks) per pipeline rank",
     .min = 1,
     .max = 1024,
     STAGEMEM_INTEGER(parallel.virtual_stages)},
    {.key = "cp",
     .path = "parallel.context_parallel",
     .help = "context parallel size",
     .min = 1,
     .max = 1024,
     STAGEMEM_INTEGER(parallel.context_parallel)},
    {.key = "ep",
     .path = "parallel.expert_parallel",
     .help = "expert parallel size",
     .min = 1,
     .max = 65536,
     STAGEMEM_INTEGER(parallel.expert_parallel)},
    {.key = "etp",
     .path = "parallel.expert_tensor_parallel",
     .help = "expert tensor parallel size",
     .min = 1,
     .max = 1024,
     STAGEMEM_INTEGER(parallel.expert_tensor_parallel)},
    {.key = "dp",
     .path = "parallel.data_parallel",
     .help = "data parallel size (0: derive from the world size or the expert groups)",
     .min = 0,
     .max = 1048576,
     STAGEMEM_INTEGER(parallel.data_parallel)},
    {.key = "world",
     .path = "parallel.world_size",
     .help = "world size in GPUs (0: TP x PP x CP x DP)",
     .min = 0,
     .max = 16777216,
     STAGEMEM_INTEGER(parallel.world_size)},
    {.key = "sp",
     .path = "parallel.sequence_parallel",
     .help = "sequence parallel (shards token-wise tensors over TP)",
     .kind = FieldKind::boolean,
     STAGEMEM_BOOLEAN(parallel.sequence_parallel)},
    {.key = "vocab_multiple",
     .path = "parallel.vocab_multiple",
     .help = "vocabulary padded to a multiple of this times TP (Megatron's default 128)",
     .min = 1,
     .max = 65536,
     STAGEMEM_INTEGER(parallel.vocab_multiple)},
    {.key = "split",
     .path = "parallel.assignment",
     .help = "how layers are assigned to stages",
     .kind = FieldKind::choice,
     .choices = enum_names<StageAssignment>,
     STAGEMEM_CHOICE(parallel.assignment, StageAssignment)},
    {.key = "stages",
     .path = "parallel.layers_per_stage",
     .help = "layers per (virtual) stage in pipeline order, for split=explicit",
     .kind = FieldKind::integer_list,
     .min = 0,
     .max = 100000,
     .max_list_length = 65536,
     .integer_list = [](Config& c) { return &c.parallel.layers_per_stage; }},
    {.key = "first_layers",
     .path = "parallel.first_stage_layers",
     .help = "decoder layers on the first stage, for split=first-last (-1: not set)",
     .min = -1,
     .max = 100000,
     STAGEMEM_INTEGER(parallel.first_stage_layers)},
    {.key = "last_layers",
     .path = "parallel.last_stage_layers",
     .help = "decoder layers on the last stage, for split=first-last (-1: not set)",
     .min = -1,
     .max = 100000,
     STAGEMEM_INTEGER(parallel.last_stage_layers)},
    {.key = "layout",
     .path = "parallel.layout_string",
     .help = "Megatron --pipeline-model-parallel-layout string, for split=layout-string",
     .kind = FieldKind::text,
     .max_text_length = 4096,
     STAGEMEM_TEXT(parallel.layout_string)},
    // Training: sequence, batch, recompute.
    {.key = "seq",
     .path = "training.sequence_length",
     .help = "sequence length in tokens",
     .min = 1,
     .max = std::int64_t{1} << 24,
     STAGEMEM_INTEGER(training.sequence_length)},
    {.key = "mbs",
     .path = "training.micro_batch",
     .help = "micro-batch size",
     .min = 1,
     .max = 65536,
     STAGEMEM_INTEGER(training.micro_batch)},
    {.key = "gbs",
     .path = "training.global_batch",
     .help = "global batch size (a multiple of micro-batch x DP)",
     .min = 1,
     .max = std::int64_t{1} << 30,
     STAGEMEM_INTEGER(training.global_batch)},
    {.key = "dropout",
     .path = "training.dropout",
     .help = "dropout > 0 (1-byte masks are kept)",
     .kind = FieldKind::boolean,
     STAGEMEM_BOOLEAN(training.dropout)},
    {.key = "imbalance",
     .path = "training.routing_imbalance",
     .help =
         "MoE routing imbalance scenario: the busiest expert rank's multiple of balanced tokens",
     .kind = FieldKind::number,
     .min = 1,
     .max = 1024,
     STAGEMEM_NUMBER(training.routing_imbalance)},
    {.key = "flat_headroom",
     .path = "training.flat_headroom_bytes",
     .help = "a flat non-parameter headroom constant to compare against, bytes (0: none)",
     .min = 0,
     .max = max_bytes,
     STAGEMEM_INTEGER(training.flat_headroom_bytes)},
    {.key = "recompute",
     .path = "training.recompute.policy",
     .help = "activation recompute policy",
     .kind = FieldKind::choice,
     .choices = enum_names<RecomputePolicy>,
     STAGEMEM_CHOICE(training.recompute.policy, RecomputePolicy)},
    {.key = "recompute_modules",
     .path = "training.recompute.modules",
     .help = "modules recomputed under selective recompute (Megatron's --recompute-modules)",
     .kind = FieldKind::name_set,
     .choices = enum_names<RecomputeModule>,
     .bits = [](Config& c) { return &c.training.recompute.modules; }},
    {.key = "recompute_method",
     .path = "training.recompute.method",
     .help = "full recompute method",
     .kind = FieldKind::choice,
     .choices = enum_names<FullRecomputeMethod>,
     STAGEMEM_CHOICE(training.recompute.method, FullRecomputeMethod)},
    {.key = "recompute_layers",
     .path = "training.recompute.layers",
     .help = "full recompute: layers per checkpointed group (uniform) or checkpointed (block)",
     .min = 1,
     .max = 100000,
     STAGEMEM_INTEGER(training.recompute.layers)},
    // Kernel assumptions.
    {.key = "attention_kernel",
     .path = "training.kernels.attention",
     .help = "attention kernel: flash (no S x S score) or materialized",
     .kind = FieldKind::choice,
     .choices = enum_names<AttentionKernel>,
     STAGEMEM_CHOICE(training.kernels.attention, AttentionKernel)},
    {.key = "kda_backend",
     .path = "training.kernels.kda",
     .help = "KDA backend: fused (chunk_kda), eager (fla's naive_chunk_kda) or disable-recompute",
     .kind = FieldKind::choice,
     .choices = enum_names<KdaBackend>,
     STAGEMEM_CHOICE(training.kernels.kda, KdaBackend)},
    {.key = "kda_chunk",
     .path = "training.kernels.kda_chunk",
     .help = "KDA chunk size (fla's BT)",
     .min = 16,
     .max = 1024,
     STAGEMEM_INTEGER(training.kernels.kda_chunk)},
    {.key = "cross_entropy",
     .path = "training.kernels.cross_entropy",
     .help = "cross-entropy kernel",
     .kind = FieldKind::choice,
     .choices = enum_names<CrossEntropyKernel>,
     STAGEMEM_CHOICE(training.kernels.cross_entropy, CrossEntropyKernel)},
    {.key = "ce_chunk",
     .path = "training.kernels.cross_entropy_chunk",
     .help = "tokens per chunk of the fused cross-entropy",
     .min = 1,
     .max = std::int64_t{1} << 24,
     STAGEMEM_INTEGER(training.kernels.cross_entropy_chunk)},
    {.key = "attnres_temps",
     .path = "training.kernels.attn_res_live_temporaries",
     .help = "live fp32 temporaries of the AttnRes mix besides the upcast slots",
     .min = 0,
     .max = 64,
     STAGEMEM_INTEGER(training.kernels.attn_res_live_temporaries)},
    {.key = "fla_version",
     .path = "training.kernels.fla_version",
     .help = "fla release of chunk_kda (0.4.0 keeps an fp32 gate cumsum and fp32 Aqk/Akk); "
             "follows the stack's fla= unless set",
     .kind = FieldKind::choice,
     .choices = enum_names<FlaVersion>,
     STAGEMEM_STACK_CHOICE(training.kernels.fla_version, FlaVersion, StackKernel::fla_version)},
    {.key = "moe_unpermute",
     .path = "training.kernels.moe_unpermute",
     .help = "MoE unpermute: probs in the activation (Megatron core >= 0.13) or legacy with probs; "
             "follows the stack's megatron-core= unless set",
     .kind = FieldKind::choice,
     .choices = enum_names<MoeUnpermute>,
     STAGEMEM_STACK_CHOICE(training.kernels.moe_unpermute, MoeUnpermute,
                           StackKernel::moe_unpermute)},
    {.key = "router_dtype",
     .path = "training.kernels.router_dtype",
     .help = "dtype of the MoE routing probabilities (Megatron's --moe-router-dtype)",
     .kind = FieldKind::choice,
     .choices = enum_names<RouterDtype>,
     STAGEMEM_CHOICE(training.kernels.router_dtype, RouterDtype)},
    {.key = "cp_comm_type",
     .path = "training.kernels.cp_comm_type",
     .help = "context-parallel attention communication (Megatron's --cp-comm-type)",
     .kind = FieldKind::choice,
     .choices = enum_names<CpCommType>,
     STAGEMEM_CHOICE(training.kernels.cp_comm_type, CpCommType)},
    // Precision and optimizer.
    {.key = "weights",
     .path = "precision.dense_weights",
     .help = "weight storage dtype",
     .kind = FieldKind::choice,
     .choices = enum_names<WeightDtype>,
     STAGEMEM_CHOICE(precision.dense_weights, WeightDtype)},
    {.key = "expert_weights",
     .path = "precision.expert_weights",
     .help = "routed-expert weight storage dtype",
     .kind = FieldKind::choice,
     .choices = enum_names<WeightDtype>,
     STAGEMEM_CHOICE(precision.expert_weights, WeightDtype)},
    {.key = "grads",
     .path = "precision.grads",
     .help = "main gradient buffer dtype",
     .kind = FieldKind::choice,
     .choices = enum_names<GradDtype>,
     STAGEMEM_CHOICE(precision.grads, GradDtype)},
    {.key = "optimizer",
     .path = "optimizer.kind",
     .help = "optimizer",
     .kind = FieldKind::choice,
     .choices = enum_names<OptimizerKind>,
     STAGEMEM_CHOICE(optimizer.kind, OptimizerKind)},
    {.key = "master",
     .path = "optimizer.master_weights",
     .help = "master weight dtype",
     .kind = FieldKind::choice,
     .choices = enum_names<MasterDtype>,
     STAGEMEM_CHOICE(optimizer.master_weights, MasterDtype)},
    {.key = "moments",
     .path = "optimizer.moments",
     .help = "optimizer moment dtype",
     .kind = FieldKind::choice,
     .choices = enum_names<MomentDtype>,
     STAGEMEM_CHOICE(optimizer.moments, MomentDtype)},
    {.key = "cast_copy",
     .path = "optimizer.cast_copy",
     .help = "an extra bf16 copy the optimizer keeps",
     .kind = FieldKind::choice,
     .choices = enum_names<CastCopy>,
     STAGEMEM_CHOICE(optimizer.cast_copy, CastCopy)},
    // Device.
    {.key = "device",
     .path = "device.preset",
     .help = "device preset (see `stagemem devices`)",
     .kind = FieldKind::text,
     .max_text_length = 64,
     STAGEMEM_TEXT(device.preset),
     .names = device_names},
    {.key = "device_bytes",
     .path = "device.bytes",
     .help = "usable device bytes of a custom device (overrides the preset; 0: preset)",
     .min = 0,
     .max = max_bytes,
     STAGEMEM_INTEGER(device.bytes)},
    // Which tensors Muon updates (appended after the first published links).
    {.key = "muon_routers",
     .path = "optimizer.muon_routers",
     .help = "Muon updates the MoE routers (else AdamW)",
     .kind = FieldKind::boolean,
     STAGEMEM_BOOLEAN(optimizer.muon_routers)},
    {.key = "muon_experts",
     .path = "optimizer.muon_expert_matrices",
     .help = "Muon updates the routed-expert matrices (else AdamW)",
     .kind = FieldKind::boolean,
     STAGEMEM_BOOLEAN(optimizer.muon_expert_matrices)},
    {.key = "muon_embedding",
     .path = "optimizer.muon_embedding_and_head",
     .help = "Muon also updates the embedding and the LM head",
     .kind = FieldKind::boolean,
     STAGEMEM_BOOLEAN(optimizer.muon_embedding_and_head)},
    // Issue 11: optimizer and library implementation choices.
    {.key = "param_gather",
     .path = "optimizer.param_gather",
     .help = "distributed Muon's parameter all-gather: buffer (in place, current Megatron), "
             "layer-wise (legacy: the whole bf16 group), layer-wise-2026-01 (1 + 1/D groups)",
     .kind = FieldKind::choice,
     .choices = enum_names<ParamGather>,
     STAGEMEM_CHOICE(optimizer.param_gather, ParamGather)},
    {.key = "muon_tp_mode",
     .path = "optimizer.muon_tp_mode",
     .help = "Megatron's --muon-tp-mode: duplicated (gather, Newton-Schulz on the full matrix), "
             "blockwise (on the shard), distributed",
     .kind = FieldKind::choice,
     .choices = enum_names<MuonTpMode>,
     STAGEMEM_CHOICE(optimizer.muon_tp_mode, MuonTpMode)},
    {.key = "grad_accum_fusion",
     .path = "precision.gradient_accumulation_fusion",
     .help = "Megatron's gradient-accumulation fusion (0: --no-gradient-accumulation-fusion); "
             "on: TE's dummy bf16 weight-gradient buffers, one per weight shape",
     .kind = FieldKind::boolean,
     STAGEMEM_BOOLEAN(precision.gradient_accumulation_fusion)},
    {.key = "gemm_workspaces",
     .path = "training.kernels.gemm_workspaces",
     .help = "documented GEMM workspace constants: sm90 (TE 32 MiB + 1 KiB per workspace, "
             "cuBLAS 32 MiB), sm80 (TE 4 MiB, cuBLAS 8 MiB + 128 KiB), none (gap row only); "
             "follows the stack's arch= unless set",
     .kind = FieldKind::choice,
     .choices = enum_names<GemmWorkspaces>,
     STAGEMEM_STACK_CHOICE(training.kernels.gemm_workspaces, GemmWorkspaces,
                           StackKernel::gemm_workspaces)},
    {.key = "fp8_recipe",
     .path = "precision.fp8_recipe",
     .help = "TE quantised compute recipe of the linear layers (none: bf16): tensor (Megatron "
             "tensorwise), mxfp8, block (blockwise), delayed or nvfp4: saved inputs, output "
             "gradients and cached weight copies in the recipe's format",
     .kind = FieldKind::choice,
     .choices = enum_names<Fp8Recipe>,
     STAGEMEM_CHOICE(training.low_precision.recipe, Fp8Recipe),
     .choice_aliases = recipe_aliases},
    {.key = "schedule",
     .path = "parallel.schedule",
     .help = "pipeline schedule: 1f1b (Megatron's; interleaved when vpp > 1) or dualpipev "
             "(DeepSeek's DualPipeV: 2 chunks per rank in a V, needs M >= 2 x PP)",
     .kind = FieldKind::choice,
     .choices = enum_names<PipelineSchedule>,
     STAGEMEM_CHOICE(parallel.schedule, PipelineSchedule)},
    {.key = "stack",
     .path = "stack",
     .help = "the run's library releases as name=version pairs (te=2.11,megatron-core=0.13,"
             "torch=2.7,compile=on,arch=sm90); left out: the current releases",
     .kind = FieldKind::stack,
     .stack = [](Config& c) { return &c.training.stack; }},
    // Issue 24: low-precision compute.
    {.key = "fp8_amax_history_len",
     .path = "precision.fp8_amax_history_len",
     .help = "delayed scaling's amax history length per quantised tensor (Megatron "
             "--fp8-amax-history-len; default 1)",
     .min = 1,
     .max = std::int64_t{1} << 20,
     STAGEMEM_INTEGER(training.low_precision.amax_history_len)},
    {.key = "bf16_layers_at_start",
     .path = "precision.bf16_layers_at_start",
     .help = "the model's first decoder layers that compute in bf16 under a quantised recipe "
             "(Megatron --first-last-layers-bf16 --num-layers-at-start-in-bf16)",
     .min = 0,
     .max = 1 << 20,
     STAGEMEM_INTEGER(training.low_precision.bf16_layers_at_start)},
    {.key = "bf16_layers_at_end",
     .path = "precision.bf16_layers_at_end",
     .help = "the model's last decoder layers that compute in bf16 under a quantised recipe "
             "(Megatron --num-layers-at-end-in-bf16)",
     .min = 0,
     .max = 1 << 20,
     STAGEMEM_INTEGER(training.low_precision.bf16_layers_at_end)},
    {.key = "fp8_attention",
     .path = "precision.fp8_attention",
     .help = "TE's fp8 dot-product attention (Megatron --fp8-dot-product-attention): q, k, v "
             "saved in fp8",
     .kind = FieldKind::boolean,
     STAGEMEM_BOOLEAN(training.low_precision.fp8_attention)},
    {.key = "tp_comm_overlap",
     .path = "training.kernels.tp_comm_overlap",
     .help = "Megatron's --tp-comm-overlap (TE userbuffers, needs TP > 1 with sequence "
             "parallelism): the userbuffer GEMMs' own 3-stream TE workspace",
     .kind = FieldKind::boolean,
     STAGEMEM_BOOLEAN(training.kernels.tp_comm_overlap)},
    // Data-parallel sharding (sharding.h).
    {.key = "framework",
     .path = "framework",
     .help = "training framework: megatron-core (TE modules) or torchtitan (PyTorch modules, "
             "FSDP2)",
     .kind = FieldKind::choice,
     .choices = enum_names<Framework>,
     STAGEMEM_CHOICE(training.framework, Framework)},
    {.key = "dp_impl",
     .path = "sharding.implementation",
     .help = "data-parallel implementation: megatron-ddp, megatron-fsdp (--use-megatron-fsdp), "
             "fsdp2 (fully_shard); auto: the framework's",
     .kind = FieldKind::choice,
     .choices = enum_names<DataParallelImpl>,
     STAGEMEM_CHOICE(training.sharding.implementation, DataParallelImpl)},
    {.key = "sharding",
     .path = "sharding.strategy",
     .help = "what data parallelism shards (--data-parallel-sharding-strategy): no_shard (DDP), "
             "optim (ZeRO-1), optim_grads (ZeRO-2), optim_grads_params (ZeRO-3 / FSDP)",
     .kind = FieldKind::choice,
     .choices = enum_names<ShardingStrategy>,
     STAGEMEM_CHOICE(training.sharding.strategy, ShardingStrategy),
     .choice_aliases = sharding_aliases},
    {.key = "dp_shard",
     .path = "sharding.shard_group",
     .help = "HSDP shard group size (divides DP; DP / it = replicate group); 0: all of DP",
     .min = 0,
     .max = 1048576,
     STAGEMEM_INTEGER(training.sharding.shard_group)},
    {.key = "reshard_after_forward",
     .path = "sharding.reshard_after_forward",
     .help = "FSDP2: free a unit's gathered parameters after its forward (default: torchtitan's "
             "policy, not under PP)",
     .kind = FieldKind::choice,
     .choices = enum_names<ReshardAfterForward>,
     STAGEMEM_CHOICE(training.sharding.reshard_after_forward, ReshardAfterForward),
     .choice_aliases = reshard_aliases},
    {.key = "reshard_ranks",
     .path = "sharding.reshard_ranks",
     .help = "FSDP2 reshard_after_forward=int: keep parameters sharded over this many ranks "
             "between forward and backward (0: off)",
     .min = 0,
     .max = 1048576,
     STAGEMEM_INTEGER(training.sharding.reshard_ranks)},
    {.key = "reduce_dtype",
     .path = "sharding.reduce_dtype",
     .help = "FSDP2 MixedPrecisionPolicy.reduce_dtype (gradient reduce-scatter dtype)",
     .kind = FieldKind::choice,
     .choices = enum_names<ReduceDtype>,
     STAGEMEM_CHOICE(training.sharding.reduce_dtype, ReduceDtype)},
    {.key = "fsdp_prefetch",
     .path = "sharding.forward_prefetch",
     .help = "FSDP2 units prefetched explicitly in forward, beyond the implicit one",
     .min = 0,
     .max = 16,
     STAGEMEM_INTEGER(training.sharding.forward_prefetch)},
    {.key = "overlap_grad_reduce",
     .path = "sharding.overlap_grad_reduce",
     .help = "Megatron DDP's --overlap-grad-reduce: gradients reduced in buckets (first model "
             "chunk of pipeline rank 0), which moves the distributed optimizer's shard boundaries",
     .kind = FieldKind::boolean,
     STAGEMEM_BOOLEAN(training.sharding.overlap_grad_reduce)},
    {.key = "ddp_bucket_size",
     .path = "sharding.ddp_bucket_size",
     .help = "Megatron DDP's --ddp-bucket-size in elements, with overlap_grad_reduce (0: "
             "Megatron's default max(40M, 1M x DP x CP))",
     .min = 0,
     .max = std::int64_t{1} << 40,
     STAGEMEM_INTEGER(training.sharding.ddp_bucket_size)},
    // PyTorch's caching allocator (allocator_settings.h).
    {.key = "expandable_segments",
     .path = "allocator.expandable_segments",
     .help = "PYTORCH_CUDA_ALLOC_CONF expandable_segments:True (one growing segment per pool)",
     .kind = FieldKind::boolean,
     STAGEMEM_BOOLEAN(training.allocator.expandable_segments)},
    {.key = "max_split_size_mb",
     .path = "allocator.max_split_size_mb",
     .help = "PYTORCH_CUDA_ALLOC_CONF max_split_size_mb: blocks this large are never split "
             "(0: unlimited)",
     .min = 0,
     .max = 1 << 30,
     STAGEMEM_INTEGER(training.allocator.max_split_size_mb)},
    {.key = "roundup_power2_divisions",
     .path = "allocator.roundup_power2_divisions",
     .help = "PYTORCH_CUDA_ALLOC_CONF roundup_power2_divisions (0: off; a power of two)",
     .min = 0,
     .max = 64,
     STAGEMEM_INTEGER(training.allocator.roundup_power2_divisions)},
    {.key = "empty_unused_memory_level",
     .path = "allocator.empty_unused_memory_level",
     .help = "Megatron's --empty-unused-memory-level: 1 empties the cache before the optimizer "
             "step, 2 after it too",
     .min = 0,
     .max = 2,
     STAGEMEM_INTEGER(training.allocator.empty_unused_memory_level)},
    {.key = "per_process_memory_fraction",
     .path = "allocator.per_process_memory_fraction",
     .help = "torch.cuda.set_per_process_memory_fraction: the allocator reserves at most this "
             "fraction of the device (0: not set)",
     .kind = FieldKind::number,
     .min = 0,
     .max = 1,
     STAGEMEM_NUMBER(training.allocator.per_process_memory_fraction)},
    {.key = "garbage_collection_threshold",
     .path = "allocator.garbage_collection_threshold",
     .help = "PYTORCH_CUDA_ALLOC_CONF garbage_collection_threshold: under a memory fraction, free "
             "the oldest cached segments above this share of it (0: off)",
     .kind = FieldKind::number,
     .min = 0,
     .max = 1,
     STAGEMEM_NUMBER(training.allocator.garbage_collection_threshold)},
}};

#undef STAGEMEM_INTEGER
#undef STAGEMEM_BOOLEAN
#undef STAGEMEM_TEXT
#undef STAGEMEM_NUMBER
#undef STAGEMEM_CHOICE
#undef STAGEMEM_STACK_CHOICE

bool parse_integer(std::string_view text, std::int64_t& out) {
  if (text.empty()) return false;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), out);
  return error == std::errc() && end == text.data() + text.size();
}

std::string quoted_prefix(std::string_view text) {
  constexpr std::size_t shown = 40;
  return "'" + std::string(text.substr(0, shown)) + (text.size() > shown ? "...'" : "'");
}

// Readers of a const Config share the mutable accessors; nothing is written through them.
Config& readable(const Config& config) {
  return const_cast<Config&>(config);
}

// The readers of the field kinds with more than one rule: each returns what is wrong with
// `text` (the caller adds what the field expects), or nothing and the value.

// Comma-separated integers, each in the field's range, at most max_list_length of them.
std::optional<std::string> read_integer_list(const ConfigField& field, std::string_view text,
                                             std::vector<std::int64_t>& values) {
  std::string_view rest = text;
  while (!rest.empty()) {
    const auto comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    std::int64_t value = 0;
    if (!parse_integer(item, value)) return quoted_prefix(item) + " is not an integer";
    if (value < field.min || value > field.max) return std::to_string(value) + " is out of range";
    if (static_cast<std::int64_t>(values.size()) >= field.max_list_length) {
      return "the list is too long";
    }
    values.push_back(value);
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
    if (rest.empty()) return "the list ends with a comma";
  }
  return std::nullopt;
}

// Plain decimal only: no hex floats, no inf/nan, no leading '+' or spaces. An exponent may carry
// a sign: builds before the fixed-point formatting wrote 10 as "1e+01" in links.
std::optional<std::string> read_number(const ConfigField& field, std::string_view text,
                                       double& value) {
  bool plain = !text.empty() && text.size() <= 32;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    const bool exponent_sign = c == '+' && i > 0 && (text[i - 1] == 'e' || text[i - 1] == 'E');
    plain = plain && ((c >= '0' && c <= '9') || c == '.' || c == '-' || c == 'e' || c == 'E' ||
                      exponent_sign);
  }
  if (!plain) return quoted_prefix(text) + " is not a decimal number";
  const std::string copy(text);
  char* end = nullptr;
  value = std::strtod(copy.c_str(), &end);
  if (end != copy.c_str() + copy.size() || !std::isfinite(value)) {
    return quoted_prefix(text) + " is not a decimal number";
  }
  if (value < static_cast<double>(field.min) || value > static_cast<double>(field.max)) {
    return quoted_prefix(text) + " is out of range";
  }
  return std::nullopt;
}

// "none", or comma-separated names of the field's choices, as one bit per choice.
std::optional<std::string> read_name_set(const ConfigField& field, std::string_view text,
                                         std::uint32_t& bits) {
  bits = 0;
  if (text == "none") return std::nullopt;
  for (std::string_view rest = text;;) {
    const auto comma = rest.find(',');
    const std::string_view name = rest.substr(0, comma);
    std::size_t index = 0;
    while (index < field.choices.size() && field.choices[index] != name) ++index;
    if (index == field.choices.size()) return quoted_prefix(name) + " is not a known name";
    bits |= std::uint32_t{1} << index;
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return std::nullopt;
}

}  // namespace

std::span<const ConfigField> config_fields() {
  return fields;
}

const ConfigField* find_field_by_key(std::string_view key) {
  for (const ConfigField& f : fields) {
    if (f.key == key) return &f;
  }
  return nullptr;
}

const ConfigField* find_field_by_path(std::string_view path) {
  for (const ConfigField& f : fields) {
    if (f.path == path) return &f;
  }
  return nullptr;
}

std::string allowed_values(const ConfigField& field) {
  switch (field.kind) {
    case FieldKind::integer:
      return "an integer in [" + std::to_string(field.min) + ", " + std::to_string(field.max) + "]";
    case FieldKind::boolean:
      return "true or false (1 or 0)";
    case FieldKind::text:
      return "text of at most " + std::to_string(field.max_text_length) + " characters";
    case FieldKind::choice: {
      std::string names;
      for (std::string_view c : field.choices)
        names += (names.empty() ? "" : ", ") + std::string(c);
      for (const ChoiceAlias& alias : field.choice_aliases) {
        names += ", " + std::string(alias.name) +
                 " (= " + std::string(field.choices[static_cast<std::size_t>(alias.index)]) + ")";
      }
      return "one of: " + names;
    }
    case FieldKind::integer_list:
      return "a comma-separated list of at most " + std::to_string(field.max_list_length) +
             " integers in [" + std::to_string(field.min) + ", " + std::to_string(field.max) + "]";
    case FieldKind::number:
      return "a number in [" + std::to_string(field.min) + ", " + std::to_string(field.max) + "]";
    case FieldKind::name_set: {
      std::string names;
      for (std::string_view c : field.choices)
        names += (names.empty() ? "" : ", ") + std::string(c);
      return "a comma-separated set of: " + names + " (or none)";
    }
    case FieldKind::stack:
      return stack_syntax();
  }
  return "a valid value";
}

bool parse_field_text(const ConfigField& field, std::string_view text, Config& config,
                      Diagnostics& diagnostics, std::string_view reported_name) {
  const auto fail = [&](const std::string& what) {
    diagnostics.error(std::string(reported_name), what + ": expected " + allowed_values(field));
    return false;
  };
  switch (field.kind) {
    case FieldKind::integer: {
      std::int64_t value = 0;
      if (!parse_integer(text, value)) return fail(quoted_prefix(text) + " is not an integer");
      if (value < field.min || value > field.max) {
        return fail(std::to_string(value) + " is out of range");
      }
      *field.integer(config) = value;
      return true;
    }
    case FieldKind::boolean:
      if (text == "1" || text == "true") {
        *field.boolean(config) = true;
      } else if (text == "0" || text == "false") {
        *field.boolean(config) = false;
      } else {
        return fail(quoted_prefix(text) + " is not a boolean");
      }
      return true;
    case FieldKind::text:
      if (static_cast<std::int64_t>(text.size()) > field.max_text_length) {
        return fail("the text is " + std::to_string(text.size()) + " characters long");
      }
      if (!is_clean_text(text)) {
        return fail("the text contains a control character or is not valid UTF-8");
      }
      *field.text(config) = std::string(text);
      return true;
    case FieldKind::choice:
      for (std::size_t i = 0; i < field.choices.size(); ++i) {
        if (field.choices[i] == text) {
          field.set_choice(config, static_cast<int>(i));
          return true;
        }
      }
      for (const ChoiceAlias& alias : field.choice_aliases) {
        if (alias.name == text) {
          field.set_choice(config, alias.index);
          return true;
        }
      }
      return fail(quoted_prefix(text) + " is not a known name");
    case FieldKind::integer_list: {
      std::vector<std::int64_t> values;
      if (const auto failure = read_integer_list(field, text, values)) return fail(*failure);
      *field.integer_list(config) = std::move(values);
      return true;
    }
    case FieldKind::number: {
      double value = 0;
      if (const auto failure = read_number(field, text, value)) return fail(*failure);
      *field.number(config) = value;
      return true;
    }
    case FieldKind::name_set: {
      std::uint32_t bits = 0;
      if (const auto failure = read_name_set(field, text, bits)) return fail(*failure);
      *field.bits(config) = bits;
      return true;
    }
    case FieldKind::stack: {
      std::string error;
      const auto stack = parse_stack(text, error);
      if (!stack) {
        diagnostics.error(std::string(reported_name), error);
        return false;
      }
      *field.stack(config) = *stack;
      // The options the user did not set follow the new stack (explicit ones keep their value).
      derive_stack_kernels(config.training);
      return true;
    }
  }
  return false;
}

std::string format_field_text(const ConfigField& field, const Config& config) {
  Config& c = readable(config);
  switch (field.kind) {
    case FieldKind::integer:
      return std::to_string(*field.integer(c));
    case FieldKind::boolean:
      return *field.boolean(c) ? "1" : "0";
    case FieldKind::text:
      return *field.text(c);
    case FieldKind::choice: {
      const int index = field.get_choice(config);
      return index >= 0 && static_cast<std::size_t>(index) < field.choices.size()
                 ? std::string(field.choices[static_cast<std::size_t>(index)])
                 : std::string("?");
    }
    case FieldKind::integer_list: {
      std::string out;
      for (std::int64_t v : *field.integer_list(c)) {
        out += (out.empty() ? "" : ",") + std::to_string(v);
      }
      return out;
    }
    case FieldKind::number: {
      // The shortest fixed-point text that reads back to the same double ("10", "1.25"; never
      // "1e+01", found by fuzzing). Numbers fields are bounded, so fixed point stays short.
      const double value = *field.number(c);
      char buffer[400];
      for (int decimals = 0; decimals <= 20; ++decimals) {
        std::snprintf(buffer, sizeof buffer, "%.*f", decimals, value);
        if (std::strtod(buffer, nullptr) == value) return buffer;
      }
      std::snprintf(buffer, sizeof buffer, "%.17g", value);
      return buffer;
    }
    case FieldKind::name_set: {
      std::string out;
      const std::uint32_t bits = *field.bits(c);
      for (std::size_t i = 0; i < field.choices.size(); ++i) {
        if (bits & (std::uint32_t{1} << i))
          out += (out.empty() ? "" : ",") + std::string(field.choices[i]);
      }
      return out.empty() ? "none" : out;
    }
    case FieldKind::stack:
      return stack_text(*field.stack(c));
  }
  return {};
}

bool field_equals(const ConfigField& field, const Config& a, const Config& b) {
  Config& x = readable(a);
  Config& y = readable(b);
  switch (field.kind) {
    case FieldKind::integer:
      return *field.integer(x) == *field.integer(y);
    case FieldKind::boolean:
      return *field.boolean(x) == *field.boolean(y);
    case FieldKind::text:
      return *field.text(x) == *field.text(y);
    case FieldKind::choice:
      return field.get_choice(a) == field.get_choice(b);
    case FieldKind::integer_list:
      return *field.integer_list(x) == *field.integer_list(y);
    case FieldKind::number:
      return *field.number(x) == *field.number(y);
    case FieldKind::name_set:
      return *field.bits(x) == *field.bits(y);
    case FieldKind::stack:
      return *field.stack(x) == *field.stack(y);
  }
  return false;
}

bool field_is_written(const ConfigField& field, const Config& config, const Config& defaults) {
  if (field.stack_kernel >= 0) {
    const auto kernel = static_cast<StackKernel>(field.stack_kernel);
    return (config.training.explicit_kernels & stack_kernel_bit(kernel)) != 0 ||
           !kernel_matches_stack(config.training, kernel);
  }
  return !field_equals(field, config, defaults);
}

void check_references(const Config& config, Diagnostics& diagnostics, std::string_view prefix,
                      bool by_path) {
  const auto name = [&](std::string_view key) {
    const ConfigField* field = find_field_by_key(key);
    return std::string(prefix) + std::string(by_path ? field->path : field->key);
  };
  if (!config.custom_model.empty()) {
    DecodedModel decoded = model_from_text(config.custom_model, name("custom"));
    for (auto& e : decoded.diagnostics.errors)
      diagnostics.error(std::move(e.field), std::move(e.message));
  } else if (!find_preset(config.model)) {
    std::string names;
    for (std::string_view n : preset_names()) names += (names.empty() ? "" : ", ") + std::string(n);
    diagnostics.error(name("model"), "unknown preset '" + config.model.substr(0, 64) +
                                         "': expected one of: " + names);
  }
  if (!config.device.preset.empty() && !find_device(config.device.preset)) {
    std::string names;
    for (const DevicePreset& device : device_presets()) {
      names += (names.empty() ? "" : ", ") + std::string(device.name);
    }
    diagnostics.error(name("device"), "unknown device '" + config.device.preset.substr(0, 64) +
                                          "': expected one of: " + names);
  }
}

}  // namespace stagemem
