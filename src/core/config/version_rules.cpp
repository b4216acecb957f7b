#include "config/version_rules.h"

namespace stagemem {
namespace {

// One row per rule; docs/physics-notes.md ("Version rules") has the source reading of each.
constexpr std::array<VersionRuleInfo, enum_count<VersionRule>> rules = {{
    {.rule = VersionRule::te_cross_entropy_fp32_gradient,
     .component = StackComponent::transformer_engine,
     .from = release(2, 18),
     .behaviour = "te-fused cross-entropy saves an fp32 gradient of the logits' size",
     .before = "the gradient is written in place into the bf16 logits, which are saved",
     .change = "TransformerEngine PR #3193, commit 01bbe3eea (transformer_engine/pytorch/"
               "triton/cross_entropy.py)"},
    {.rule = VersionRule::moe_probs_in_activation,
     .component = StackComponent::megatron_core,
     .from = release(0, 13),
     .behaviour = "moe_unpermute=probs-in-activation: the expert activation applies the routing "
                  "probabilities; unpermute saves no combine input",
     .before = "moe_unpermute=legacy-unpermute-with-probs: unpermute multiplies by the "
               "probabilities and saves the combine input",
     .change = "Megatron-LM commit 2659630721 (MR !2668), megatron/core/transformer/moe/"
               "experts.py (weighted SwiGLU with permuted_probs) and token_dispatcher.py"},
    {.rule = VersionRule::fla_gate_in_kernel,
     .component = StackComponent::fla,
     .from = release(0, 4, 1),
     .behaviour = "fla_version=since-0.4.1: use_gate_in_kernel, no fp32 gate cumsum saved, bf16 "
                  "Aqk/Akk",
     .before = "fla_version=0.4.0: an fp32 chunk-local gate cumsum saved, fp32 Aqk/Akk",
     .change = "fla PR #662 (gate computed in the kernel) and commit 8d8bfcd4 (bf16 Aqk/Akk), "
               "fla/ops/kda/chunk_fwd.py"},
    {.rule = VersionRule::moe_layer_holds_dispatch_buffers,
     .component = StackComponent::megatron_core,
     .from = release(0, 13),
     .behaviour = "MoELayer.forward keeps the permuted tokens and the all-to-all output until it "
                  "returns: four routed-token buffers (and the shared experts' output) alive at "
                  "the combine all-to-all",
     .before = "the permuted tokens and the all-to-all output die when token_permutation "
               "returns: two routed-token buffers at the dispatch all-to-all",
     .change = "Megatron-LM commit 8333bd5bb6 (MR !3217, token_permutation split into "
               "dispatch_preprocess / token_dispatch / dispatch_postprocess returning into "
               "MoELayer.forward), megatron/core/transformer/moe/moe_layer.py"},
    {.rule = VersionRule::native_cross_entropy_compiled_fp32_copy,
     .component = StackComponent::torch,
     .from = release(2, 2),
     .behaviour = "native-fused cross-entropy compiled (Megatron's jit_fuser is torch.compile): "
                  "the fp32 copy of the logits stays alive beside a separate exp_logits until "
                  "the loss's forward returns",
     .before = "TorchScript (jit_fuser = torch.jit.script): one fp32 tensor, exp_logits computed "
               "in place, as vocab-parallel",
     .change = "Megatron-LM commit 473225f9a5 (megatron/core/jit.py: jit_fuser = torch.compile "
               "from torch 2.2); megatron/core/fusions/fused_cross_entropy.py"},
    {.rule = VersionRule::te_gemm_workspace_plus_1kib,
     .component = StackComponent::transformer_engine,
     .from = release(2, 8),
     .behaviour = "gemm_workspaces=sm90: each TE GEMM workspace is 32 MiB + 1 KiB (alignment "
                  "room)",
     .before = "32 MiB per TE GEMM workspace",
     .change = "TransformerEngine PRs #2177 and #2223 (commits 3f5b47549, aee5a8210, on "
               "release_v2.8), get_cublas_workspace_size_bytes in pytorch/module/base.py"},
    {.rule = VersionRule::te_cp_a2a_saves_output_before_all_to_all,
     .component = StackComponent::transformer_engine,
     .from = release(2, 9),
     .behaviour = "cp_comm_type a2a: AttnFuncWithCPAndQKVOA2A saves out_part, the attention "
                  "output before the output all-to-all (head-sharded), beside the returned output",
     .before = "it saved the returned output (the output projection's input) and redid the "
               "output all-to-all in backward",
     .change = "TransformerEngine commit 25252e9f2 (PR #2012), transformer_engine/pytorch/"
               "attention/dot_product_attention/context_parallel.py"},
    {.rule = VersionRule::te_dummy_wgrad_cache,
     .component = StackComponent::transformer_engine,
     .from = release(2, 3),
     .behaviour = "gradient-accumulation fusion: TE's Linear and LayerNormLinear return one kept "
                  "dummy weight gradient per (shape, dtype) (get_dummy_wgrad, resident)",
     .before = "a fresh torch.empty of the weight's shape per backward, freed by Megatron's "
               "gradient hook (a backward transient, not counted)",
     .change = "TransformerEngine commit ba5dc5dde (PR #1651), transformer_engine/pytorch/"
               "module/base.py"},
    {.rule = VersionRule::te_grouped_linear_dummy_wgrad_cache,
     .component = StackComponent::transformer_engine,
     .from = release(2, 10),
     .behaviour = "the routed experts' GroupedLinear uses the same kept dummy weight gradient "
                  "(one per expert weight shape, resident)",
     .before = "a fresh buffer per local expert in every backward (a backward transient, not "
               "counted)",
     .change = "TransformerEngine commit d2945c6a5 (PR #2305), transformer_engine/pytorch/"
               "module/grouped_linear.py"},
    {.rule = VersionRule::megatron_lm_head_dummy_wgrad_cache,
     .component = StackComponent::megatron_core,
     .from = release(0, 14),
     .behaviour = "Megatron's own linear layers (the output layer) take TE's kept dummy weight "
                  "gradient (with TE >= 2.3): [V/TP, h] resident on the head's stage",
     .before = "a fresh torch.empty per backward (a backward transient, not counted)",
     .change = "Megatron-LM commit e7c55de99e (MR !3473), megatron/core/tensor_parallel/"
               "layers.py"},
    {.rule = VersionRule::te_per_tensor_fp8_one_copy_on_blackwell,
     .component = StackComponent::transformer_engine,
     .from = release(2, 0),
     .behaviour = "per-tensor fp8 (delayed, tensor) on sm100/sm103 keeps one data array for the "
                  "row- and column-wise usages (non-TN GEMMs): 1 B per element",
     .before = "a row-wise array and its transpose on every architecture: 2 B per element",
     .change = "TransformerEngine 2.0 (main commit 544dd14b4), tensor/storage/"
               "float8_tensor_storage.py update_usage and utils.py is_non_tn_fp8_gemm_supported"},
    {.rule = VersionRule::te_linear_save_original_input,
     .component = StackComponent::transformer_engine,
     .from = release(2, 6),
     .behaviour = "TE Linear and GroupedLinear can save their bf16 input instead of a quantised "
                  "copy (save_original_input)",
     .before = "a quantised linear always saves its quantised input",
     .change = "TransformerEngine PR #1865 (commit 07afda985), pytorch/module/linear.py and "
               "grouped_linear.py"},
    {.rule = VersionRule::megatron_proj_saves_original_input,
     .component = StackComponent::megatron_core,
     .from = release(0, 15),
     .behaviour = "the attention output projection saves its bf16 input (already kept by the "
                  "attention kernel) under non-delayed recipes: no quantised copy (with TE >= "
                  "2.6)",
     .before = "the output projection saves a quantised copy of the attention output",
     .change = "Megatron-LM commit 781e765818 (MR !3465), megatron/core/transformer/"
               "attention.py set_save_original_input"},
    {.rule = VersionRule::megatron_fsdp_keeps_non_unit_buckets,
     .component = StackComponent::megatron_core,
     .from = release(0, 18),
     .behaviour = "Megatron-FSDP (optim_grads_params) keeps the parameters outside FSDP units "
                  "(embedding, final norm, head) gathered across steps: resident",
     .before = "the all-gather pipeline's reset frees them every step: gathered from the forward "
               "to the end of the backward only",
     .change = "Megatron-LM commit 378d81fbd3 (#4717), megatron_fsdp/param_and_grad_buffer.py "
               "AllGatherPipeline.reset(preserve_non_fsdp_units)"},
    {.rule = VersionRule::rocm_expandable_segments,
     .component = StackComponent::torch,
     .from = release(2, 11),
     .behaviour = "on ROCm (gfx942, gfx950) expandable_segments maps the pool's segment in pages, "
                  "as on CUDA",
     .before = "ROCm builds lack PYTORCH_C10_DRIVER_API_SUPPORTED: CUDAAllocatorConfig::"
               "expandable_segments() warns 'expandable_segments not supported on this "
               "platform' and returns false; the allocator makes one segment per cudaMalloc",
     .change = "pytorch/pytorch#177974 (ROCm/pytorch#3106), c10/cuda/CUDAAllocatorConfig.h "
               "expandable_segments() and CUDACachingAllocator.cpp ExpandableSegment (L292)"},
}};

// version_rule() indexes the table by the enum: one row per rule, in the enum's order.
constexpr bool rows_in_enum_order() {
  for (std::size_t i = 0; i < rules.size(); ++i) {
    if (static_cast<std::size_t>(rules[i].rule) != i) return false;
  }
  return true;
}
static_assert(rows_in_enum_order());

bool at_least(const Release& given, const Release& from) {
  return !given.given() || compare_releases(given, from) >= 0;
}

}  // namespace

std::span<const VersionRuleInfo> version_rules() {
  return rules;
}

const VersionRuleInfo& version_rule(VersionRule rule) {
  return rules[static_cast<std::size_t>(rule)];
}

bool rule_holds(const SoftwareStack& stack, VersionRule rule) {
  const VersionRuleInfo& info = version_rule(rule);
  if (info.component == StackComponent::compile) return stack.compile == CompileMode::on;
  return at_least(component_release(stack, info.component), info.from);
}

void check_stack(const TrainingConfig& training, bool model_has_kda, Diagnostics& d) {
  const SoftwareStack& s = training.stack;
  const auto older = [](const Release& given, const Release& than) {
    return given.given() && compare_releases(given, than) < 0;
  };
  const auto named = [](StackComponent c, const Release& r) {
    return std::string(enum_name(c)) + "=" + release_text(r);
  };
  const CrossEntropyKernel ce = training.kernels.cross_entropy;
  if (ce == CrossEntropyKernel::te_fused) {
    if (older(s.transformer_engine, release(2, 2))) {
      d.error("stack", named(StackComponent::transformer_engine, s.transformer_engine) +
                           ": TransformerEngine's fused cross-entropy (cross_entropy=te-fused) "
                           "first exists in TE 2.2 (PR #1456)");
    }
    if (older(s.megatron_core, release(0, 12))) {
      d.error("stack",
              named(StackComponent::megatron_core, s.megatron_core) +
                  ": Megatron-core selects TE's cross-entropy (--cross-entropy-fusion-impl "
                  "te, cross_entropy=te-fused) from 0.12.0 on");
    } else if (s.megatron_core.given() &&
               compare_releases(s.megatron_core, release(0, 18, 2)) >= 0) {
      d.warn("stack", named(StackComponent::megatron_core, s.megatron_core) +
                          ": Megatron-core's training arguments refuse TE's cross-entropy fusion "
                          "from 0.18.2 on (PR #5115); cross_entropy=te-fused is what a library "
                          "user of megatron-core gets");
    }
  }
  if (ce == CrossEntropyKernel::native_fused && older(s.megatron_core, release(0, 8))) {
    d.error("stack", named(StackComponent::megatron_core, s.megatron_core) +
                         ": Megatron's native fused cross-entropy (cross_entropy=native-fused) "
                         "first exists in core 0.8.0");
  }
  if (model_has_kda && older(s.fla, release(0, 4))) {
    d.error("stack", named(StackComponent::fla, s.fla) +
                         ": fla's KDA kernels (chunk_kda) first exist in fla 0.4.0");
  }
}

MoeUnpermute stack_moe_unpermute(const SoftwareStack& stack) {
  return rule_holds(stack, VersionRule::moe_probs_in_activation)
             ? MoeUnpermute::probs_in_activation
             : MoeUnpermute::legacy_unpermute_with_probs;
}

FlaVersion stack_fla_version(const SoftwareStack& stack) {
  return rule_holds(stack, VersionRule::fla_gate_in_kernel) ? FlaVersion::since_0_4_1
                                                            : FlaVersion::v0_4_0;
}

GemmWorkspaces stack_gemm_workspaces(const SoftwareStack& stack) {
  switch (stack.architecture) {
    case Architecture::sm80:
    case Architecture::sm86:
    case Architecture::sm89:
      return GemmWorkspaces::sm80;
    case Architecture::current:
    case Architecture::sm90:
    case Architecture::sm100:
    case Architecture::sm103:
    case Architecture::sm120:
      return GemmWorkspaces::sm90;
    case Architecture::gfx942:
    case Architecture::gfx950:
      return GemmWorkspaces::none;
  }
  return GemmWorkspaces::sm90;
}

bool rocm_ignores_expandable_segments(const SoftwareStack& stack) {
  const bool rocm =
      stack.architecture == Architecture::gfx942 || stack.architecture == Architecture::gfx950;
  return rocm && !rule_holds(stack, VersionRule::rocm_expandable_segments);
}

void derive_stack_kernels(TrainingConfig& training) {
  const auto derived = [&](StackKernel k) {
    return (training.explicit_kernels & stack_kernel_bit(k)) == 0;
  };
  if (derived(StackKernel::moe_unpermute))
    training.kernels.moe_unpermute = stack_moe_unpermute(training.stack);
  if (derived(StackKernel::fla_version))
    training.kernels.fla_version = stack_fla_version(training.stack);
  if (derived(StackKernel::gemm_workspaces))
    training.kernels.gemm_workspaces = stack_gemm_workspaces(training.stack);
}

bool kernel_matches_stack(const TrainingConfig& training, StackKernel kernel) {
  switch (kernel) {
    case StackKernel::moe_unpermute:
      return training.kernels.moe_unpermute == stack_moe_unpermute(training.stack);
    case StackKernel::fla_version:
      return training.kernels.fla_version == stack_fla_version(training.stack);
    case StackKernel::gemm_workspaces:
      return training.kernels.gemm_workspaces == stack_gemm_workspaces(training.stack);
  }
  return false;
}

std::vector<KernelOriginEntry> kernel_origins(const TrainingConfig& training) {
  std::vector<KernelOriginEntry> out;
  for (std::size_t i = 0; i < enum_count<StackKernel>; ++i) {
    const auto k = static_cast<StackKernel>(i);
    const bool from_stack =
        (training.explicit_kernels & stack_kernel_bit(k)) == 0 && kernel_matches_stack(training, k);
    std::string_view value;
    switch (k) {
      case StackKernel::moe_unpermute:
        value = enum_name(training.kernels.moe_unpermute);
        break;
      case StackKernel::fla_version:
        value = enum_name(training.kernels.fla_version);
        break;
      case StackKernel::gemm_workspaces:
        value = enum_name(training.kernels.gemm_workspaces);
        break;
    }
    out.push_back({k, value, from_stack ? KernelOrigin::stack : KernelOrigin::explicit_value});
  }
  return out;
}

}  // namespace stagemem
