// training.h — how the model is trained: sequence, batch, recompute and the kernel assumptions
// that decide which tensors are kept for backward.
//
// Purpose: the inputs of the activation and transient terms. Every kernel assumption that changes
// memory (flash vs materialised attention, fused vs eager KDA, fused vs vocabulary-parallel
// cross-entropy, live temporaries of the AttnRes mix) is a named, visible option here, never a
// hidden constant.
// Units: tokens, micro-batches, bytes (int64).
// Allowed ranges (validate() names the field on error):
//  - training.sequence_length [1, 2^24], training.micro_batch [1, 65536],
//    training.global_batch [1, 2^30] (a multiple of micro_batch x DP);
//  - recompute.layers [1, layers on a stage] for full recompute;
//  - kernels.kda_chunk [16, 1024]; kernels.cross_entropy_chunk [1, 2^24];
//    kernels.attn_res_live_temporaries [0, 64];
//  - training.routing_imbalance [1, 1024] (a scenario: the busiest expert rank receives this
//    multiple of the balanced token count; 1 means balanced routing).
// Limitations: one micro-batch size for every stage; no sequence packing.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

#include "base/enum_names.h"
#include "config/allocator_settings.h"
#include "config/sharding.h"
#include "config/software_stack.h"

namespace stagemem {

enum class RecomputePolicy : std::uint8_t { none, selective, full };
template <>
struct EnumNames<RecomputePolicy> {
  static constexpr std::array<std::string_view, 3> names = {"none", "selective", "full"};
};
static_assert(names_end_at<RecomputePolicy::full>());
// Megatron's --recompute-modules names, in this order (bit i of RecomputeConfig::modules).
enum class RecomputeModule : std::uint8_t {
  core_attn,       // attention core: softmax statistics / scores; q, k, v stay as checkpoint inputs
  moe_act,         // the routed experts' activation function output (fc2 input)
  layernorm,       // norm outputs (the linear layers' inputs); norm inputs stay
  mla_up_proj,     // MLA up-projections: the up-projected q, k, v; the latents stay
  mlp,             // the whole dense MLP; only its input stays
  moe,             // the whole MoE block; only its input stays
  shared_experts,  // shared experts' internals; their input stays
};
template <>
struct EnumNames<RecomputeModule> {
  static constexpr std::array<std::string_view, 7> names = {
      "core_attn", "moe_act", "layernorm", "mla_up_proj", "mlp", "moe", "shared_experts"};
};
static_assert(names_end_at<RecomputeModule::shared_experts>());
inline constexpr int recompute_module_count = static_cast<int>(enum_count<RecomputeModule>);
enum class FullRecomputeMethod : std::uint8_t { uniform, block };
template <>
struct EnumNames<FullRecomputeMethod> {
  static constexpr std::array<std::string_view, 2> names = {"uniform", "block"};
};
static_assert(names_end_at<FullRecomputeMethod::block>());
enum class AttentionKernel : std::uint8_t { flash, materialized };
template <>
struct EnumNames<AttentionKernel> {
  static constexpr std::array<std::string_view, 2> names = {"flash", "materialized"};
};
static_assert(names_end_at<AttentionKernel::materialized>());
// fused: fla's chunk_kda (recomputes its intermediates in backward); eager: fla's naive_chunk_kda
// under autograd; disable_recompute: chunk_kda with disable_recompute=True (keeps them, bf16).
enum class KdaBackend : std::uint8_t { fused, eager, disable_recompute };
template <>
struct EnumNames<KdaBackend> {
  static constexpr std::array<std::string_view, 3> names = {"fused", "eager", "disable-recompute"};
};
static_assert(names_end_at<KdaBackend::disable_recompute>());
// Megatron's loss paths (vocab_parallel, te_fused, native_fused) all keep an fp32 [S/CP, B, V/TP]
// tensor; fused_chunked is an external fused linear + cross-entropy kernel (Liger-style).
enum class CrossEntropyKernel : std::uint8_t {
  vocab_parallel,
  fused_chunked,
  te_fused,
  native_fused
};
template <>
struct EnumNames<CrossEntropyKernel> {
  static constexpr std::array<std::string_view, 4> names = {"vocab-parallel", "fused-chunked",
                                                            "te-fused", "native-fused"};
};
static_assert(names_end_at<CrossEntropyKernel::native_fused>());
// fla releases whose saved tensors differ: since_0_4_1 (use_gate_in_kernel; no fp32 gate; bf16
// Aqk/Akk) and v0_4_0 (the first KDA release: one fp32 chunk-local cumsum; fp32 Aqk/Akk).
enum class FlaVersion : std::uint8_t { since_0_4_1, v0_4_0 };
template <>
struct EnumNames<FlaVersion> {
  static constexpr std::array<std::string_view, 2> names = {"since-0.4.1", "0.4.0"};
};
static_assert(names_end_at<FlaVersion::v0_4_0>());
// Megatron's MoE unpermute: probs_in_activation (core >= 0.13: the weighted SwiGLU applies the
// probabilities, the combine input is not saved); legacy_unpermute_with_probs (core <= 0.12:
// unpermute multiplies by the probabilities and saves the combine input).
enum class MoeUnpermute : std::uint8_t { probs_in_activation, legacy_unpermute_with_probs };
template <>
struct EnumNames<MoeUnpermute> {
  static constexpr std::array<std::string_view, 2> names = {"probs-in-activation",
                                                            "legacy-unpermute-with-probs"};
};
static_assert(names_end_at<MoeUnpermute::legacy_unpermute_with_probs>());
// Megatron's --moe-router-dtype: the routing probabilities in the activation dtype (default) or
// fp32.
enum class RouterDtype : std::uint8_t { activation, fp32 };
template <>
struct EnumNames<RouterDtype> {
  static constexpr std::array<std::string_view, 2> names = {"activation", "fp32"};
};
static_assert(names_end_at<RouterDtype::fp32>());
// Megatron's --cp-comm-type (TransformerEngine's context-parallel attention): p2p ring,
// all-to-all over heads, or all-to-all inside and p2p ring across (hierarchical).
enum class CpCommType : std::uint8_t { p2p, a2a, a2a_p2p };
template <>
struct EnumNames<CpCommType> {
  static constexpr std::array<std::string_view, 3> names = {"p2p", "a2a", "a2a+p2p"};
};
static_assert(names_end_at<CpCommType::a2a_p2p>());
// The GEMM workspaces the math libraries allocate through PyTorch's caching allocator (so they
// count in torch.cuda.max_memory_allocated), as documented library constants:
//  - sm90 (compute capability >= 9, CUDA): TE's GEMM workspace 32 MiB + 1 KiB
//    (transformer_engine/pytorch/cpp_extensions/gemm.py get_cublas_workspace_size_bytes), TE's
//    grouped GEMM (MoE experts) one more per compute stream, 4 streams
//    (common/util/multi_stream.cpp num_compute_streams), and PyTorch's cuBLAS workspace for the
//    GEMMs outside TE (the output layer) :4096:8 = 32 MiB on sm90 and under Megatron's
//    --deterministic-mode (CUBLAS_WORKSPACE_CONFIG);
//  - sm80: TE 4 MiB per workspace; PyTorch's default :4096:2:16:8 = 8 MiB + 128 KiB;
//  - none: not derived; the "math-library workspaces" gap row alone (e.g. ROCm).
// A MEASURED "math-library workspaces" gap row of a stage replaces these constants there.
enum class GemmWorkspaces : std::uint8_t { sm90, sm80, none };
template <>
struct EnumNames<GemmWorkspaces> {
  static constexpr std::array<std::string_view, 3> names = {"sm90", "sm80", "none"};
};
static_assert(names_end_at<GemmWorkspaces::none>());

// TransformerEngine's quantised compute recipe for the linear layers (none: bf16 compute), as
// Megatron's --fp8-recipe / --fp4-recipe select it (transformer_engine/common/recipe):
//  - tensor: Float8CurrentScaling (Megatron `tensorwise`), one fp32 scale per tensor;
//  - mxfp8: MXFP8BlockScaling, one e8m0 scale per 32 values, row- and column-wise quantisations;
//  - block: Float8BlockScaling (Megatron `blockwise`, DeepSeek-V3's), fp32 scales per 1 x 128
//    (activations, gradients) and 128 x 128 (weights) blocks;
//  - delayed: DelayedScaling (Megatron's default recipe), per-tensor scales from an amax history;
//  - nvfp4: NVFP4BlockScaling (Megatron --fp4-recipe nvfp4), e2m1 values with one e4m3 scale per
//    16 values and an fp32 amax per tensor.
// The names `tensor` and `block` predate Megatron's spellings, which are accepted as aliases.
enum class Fp8Recipe : std::uint8_t { none, tensor, mxfp8, block, delayed, nvfp4 };
template <>
struct EnumNames<Fp8Recipe> {
  static constexpr std::array<std::string_view, 6> names = {"none",  "tensor",  "mxfp8",
                                                            "block", "delayed", "nvfp4"};
};
static_assert(names_end_at<Fp8Recipe::nvfp4>());
inline std::string_view fp8_recipe_name(Fp8Recipe recipe) {
  return enum_name(recipe);
}

// Low-precision compute of the linear layers (memory/low_precision.h has what each keeps):
//  - recipe: the quantised recipe (Megatron --fp8-recipe, --fp4-recipe);
//  - amax_history_len: DelayedScaling's amax history per quantised tensor (Megatron
//    --fp8-amax-history-len, default 1; TE's own default is 1024), [1, 2^20];
//  - bf16_layers_at_start / _at_end: Megatron --first-last-layers-bf16 with
//    --num-layers-at-start-in-bf16 / --num-layers-at-end-in-bf16: the first and last decoder
//    layers of the model (global indices) compute in bf16, [0, layers];
//  - fp8_attention: TE's fp8 dot-product attention (Megatron --fp8-dot-product-attention): q, k,
//    v (and O under delayed scaling) saved in fp8.
struct LowPrecisionCompute {
  Fp8Recipe recipe = Fp8Recipe::none;
  std::int64_t amax_history_len = 1;
  std::int64_t bf16_layers_at_start = 0;
  std::int64_t bf16_layers_at_end = 0;
  bool fp8_attention = false;
  bool quantised() const { return recipe != Fp8Recipe::none; }
  friend bool operator==(const LowPrecisionCompute&, const LowPrecisionCompute&) = default;
};

// The spelling of each option value is its enum's EnumNames list above (base/enum_names.h).

constexpr std::uint32_t module_bit(RecomputeModule module) {
  return std::uint32_t{1} << static_cast<int>(module);
}

struct RecomputeConfig {
  RecomputePolicy policy = RecomputePolicy::none;
  std::uint32_t modules = module_bit(RecomputeModule::core_attn);  // selective: which modules
  FullRecomputeMethod method = FullRecomputeMethod::uniform;
  std::int64_t layers = 1;  // full: Megatron's --recompute-num-layers
  friend bool operator==(const RecomputeConfig&, const RecomputeConfig&) = default;
};

struct KernelAssumptions {
  // flash: no [B, heads, S, S] score is stored, only the log-sum-exp; materialized: the
  // Korthikanti et al. accounting (softmax output, dropout mask and output are kept).
  AttentionKernel attention = AttentionKernel::flash;
  // fused: fla's chunk_kda (recomputes its intermediates in backward); eager: fla's
  // naive_chunk_kda under autograd (fp32, keeps per-position intra-chunk products);
  // disable_recompute: chunk_kda keeps w, u, qg, kg, v_new and the chunk states (bf16).
  KdaBackend kda = KdaBackend::fused;
  FlaVersion fla_version = FlaVersion::since_0_4_1;
  std::int64_t kda_chunk = 64;  // fla's chunk size BT
  // vocab_parallel: Megatron's cross-entropy keeps the fp32 softmax over V/TP per token;
  // te_fused: TransformerEngine's Triton cross-entropy (saves its fp32 gradient); native_fused:
  // Megatron's --cross-entropy-fusion-impl native (torch.compile, keeps the fp32 softmax);
  // fused_chunked: an external fused linear + cross-entropy kernel (Liger-style): logits are
  // produced and consumed chunk by chunk, only per-token statistics stay.
  CrossEntropyKernel cross_entropy = CrossEntropyKernel::vocab_parallel;
  std::int64_t cross_entropy_chunk = 4096;  // tokens per chunk of the fused kernel
  // Live fp32 temporaries of the AttnRes mix besides the (1+K) upcast slots (running
  // accumulator and output in the users' kernel).
  std::int64_t attn_res_live_temporaries = 2;
  MoeUnpermute moe_unpermute = MoeUnpermute::probs_in_activation;
  RouterDtype router_dtype = RouterDtype::activation;
  CpCommType cp_comm_type = CpCommType::p2p;
  GemmWorkspaces gemm_workspaces = GemmWorkspaces::sm90;
  // Megatron's --tp-comm-overlap (TE userbuffers): the userbuffer GEMMs take their own cached
  // workspace of 3 streams (gaps.h); the userbuffers themselves are outside PyTorch's allocator.
  bool tp_comm_overlap = false;
  friend bool operator==(const KernelAssumptions&, const KernelAssumptions&) = default;
};

struct TrainingConfig {
  std::int64_t sequence_length = 4096;
  std::int64_t micro_batch = 1;
  std::int64_t global_batch = 1024;
  bool dropout = false;  // dropout > 0: 1-byte masks after attention and MLP (and in attention)
  double routing_imbalance = 1.0;
  RecomputeConfig recompute{};
  KernelAssumptions kernels{};
  LowPrecisionCompute low_precision{};
  // The training framework and how data parallelism shards the model state (sharding.h).
  Framework framework = Framework::megatron_core;
  DataParallelSharding sharding{};
  // The library releases of the run (software_stack.h): the version rules' input, and what the
  // kernel options that are version questions are derived from (version_rules.h).
  SoftwareStack stack{};
  // Bits (stack_kernel_bit, version_rules.h) of the kernel options the user set explicitly: those
  // keep their value whatever the stack says; the others follow the stack.
  std::uint32_t explicit_kernels = 0;
  // PyTorch's caching allocator options and Megatron's cache emptying (allocator_settings.h).
  AllocatorSettings allocator{};
  // A flat "non-parameter headroom" constant to compare against (e.g. the legacy 82 GiB); 0: none.
  std::int64_t flat_headroom_bytes = 0;
  friend bool operator==(const TrainingConfig&, const TrainingConfig&) = default;
};

}  // namespace stagemem
