// version_rules.h — every version-dependent behaviour stagemem models, one rule each.
//
// Purpose: a rule says "from release X of a component, this tensor is kept (or not)", with the
// commit or pull request that changed it (docs/physics-notes.md, "Version rules"). The estimate
// asks rule_holds() for the behaviours it models inside a term (the TE cross-entropy's saved
// gradient); the kernel options that are really version questions (moe_unpermute, fla_version,
// gemm_workspaces) are derived from the stack by derive_stack_kernels() unless the user set them
// (explicit wins; TrainingConfig::explicit_kernels says which), and kernel_origins() tells the
// report where each came from.
// Units: none (release numbers, see software_stack.h).
// Limitations: a component the stack does not name is its current release, so every rule holds
// and stagemem models what it modelled before stacks existed. Rules are release boundaries, not
// commit ranges: a build from main between two releases is the older release.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "base/diagnostics.h"
#include "config/software_stack.h"
#include "config/training.h"

namespace stagemem {

enum class VersionRule : std::uint8_t {
  te_cross_entropy_fp32_gradient,    // TE's fused cross-entropy keeps an fp32 gradient
  moe_probs_in_activation,           // the router probabilities move into the expert activation
  fla_gate_in_kernel,                // fla's KDA applies the gate inside the kernel
  moe_layer_holds_dispatch_buffers,  // MoELayer.forward keeps the dispatch buffers referenced
  native_cross_entropy_compiled_fp32_copy,   // compiled native cross-entropy: an extra fp32 copy
  te_gemm_workspace_plus_1kib,               // TE's GEMM workspace is 32 MiB + 1 KiB at sm >= 9
  te_cp_a2a_saves_output_before_all_to_all,  // a2a CP saves the head-sharded attention output
  te_dummy_wgrad_cache,                      // TE keeps one dummy weight gradient per shape
  te_grouped_linear_dummy_wgrad_cache,       // so does its GroupedLinear (routed experts)
  megatron_lm_head_dummy_wgrad_cache,        // and Megatron's own linear layers (output layer)
  te_per_tensor_fp8_one_copy_on_blackwell,   // per-tensor fp8: one data array on sm100/sm103
  te_linear_save_original_input,             // TE's Linear can save its bf16 input instead
  megatron_proj_saves_original_input,        // Megatron sets it on the attention projection
  megatron_fsdp_keeps_non_unit_buckets,      // Megatron-FSDP keeps embedding/head gathered
  rocm_expandable_segments,                  // PyTorch on ROCm honours expandable_segments
};
template <>
struct EnumNames<VersionRule> {
  static constexpr std::array<std::string_view, 15> names = {
      "te-cross-entropy-fp32-gradient",
      "moe-probs-in-activation",
      "fla-gate-in-kernel",
      "moe-layer-holds-dispatch-buffers",
      "native-cross-entropy-compiled-fp32-copy",
      "te-gemm-workspace-plus-1kib",
      "te-cp-a2a-saves-output-before-all-to-all",
      "te-dummy-wgrad-cache",
      "te-grouped-linear-dummy-wgrad-cache",
      "megatron-lm-head-dummy-wgrad-cache",
      "te-per-tensor-fp8-one-copy-on-blackwell",
      "te-linear-save-original-input",
      "megatron-proj-saves-original-input",
      "megatron-fsdp-keeps-non-unit-buckets",
      "rocm-expandable-segments"};
};
static_assert(names_end_at<VersionRule::rocm_expandable_segments>());

struct VersionRuleInfo {
  VersionRule rule;
  StackComponent component;
  Release from;                // first release with the behaviour (compile: none, see `when`)
  std::string_view behaviour;  // what holds from `from` on
  std::string_view before;     // what held before
  std::string_view change;     // the commit / pull request that changed it, and its file
};
std::span<const VersionRuleInfo> version_rules();
const VersionRuleInfo& version_rule(VersionRule rule);

// Whether the rule's behaviour holds for the stack: its component's release is `from` or newer
// (or not given: the current release); compile rules hold when compile=on.
bool rule_holds(const SoftwareStack& stack, VersionRule rule);

// The kernel options that are version questions, as bits of TrainingConfig::explicit_kernels.
enum class StackKernel : std::uint8_t { moe_unpermute, fla_version, gemm_workspaces };
template <>
struct EnumNames<StackKernel> {
  // The options' link keys.
  static constexpr std::array<std::string_view, 3> names = {"moe_unpermute", "fla_version",
                                                            "gemm_workspaces"};
};
static_assert(names_end_at<StackKernel::gemm_workspaces>());
constexpr std::uint32_t stack_kernel_bit(StackKernel k) {
  return std::uint32_t{1} << static_cast<int>(k);
}

// The value each StackKernel option takes for a stack.
MoeUnpermute stack_moe_unpermute(const SoftwareStack& stack);
FlaVersion stack_fla_version(const SoftwareStack& stack);
GemmWorkspaces stack_gemm_workspaces(const SoftwareStack& stack);

// Whether the run's PyTorch ignores expandable_segments: on a ROCm architecture (gfx942, gfx950)
// before the release of rule rocm_expandable_segments, CUDAAllocatorConfig::expandable_segments()
// warns "expandable_segments not supported on this platform" and returns false.
bool rocm_ignores_expandable_segments(const SoftwareStack& stack);

// Sets every StackKernel option the user did not set explicitly from training.stack.
void derive_stack_kernels(TrainingConfig& training);
// True when the option's value is what training.stack derives (an explicit value may be too).
bool kernel_matches_stack(const TrainingConfig& training, StackKernel kernel);

// What the stack cannot run: a kernel option that no release of the stack has (TE's fused
// cross-entropy before TE 2.2 or Megatron-core 0.12, Megatron's native one before core 0.8, KDA
// before fla 0.4.0) is an error naming the stack; one a release refuses in its own argument
// checks (TE's cross-entropy fusion in Megatron-core's training from 0.18.2) a warning.
void check_stack(const TrainingConfig& training, bool model_has_kda, Diagnostics& diagnostics);

enum class KernelOrigin : std::uint8_t { stack, explicit_value };
template <>
struct EnumNames<KernelOrigin> {
  static constexpr std::array<std::string_view, 2> names = {"stack", "explicit"};
};
static_assert(names_end_at<KernelOrigin::explicit_value>());
struct KernelOriginEntry {
  StackKernel kernel;
  std::string_view value;  // the option's spelling
  KernelOrigin origin;     // explicit: set by the user (or to a value the stack does not give)
};
std::vector<KernelOriginEntry> kernel_origins(const TrainingConfig& training);

}  // namespace stagemem
