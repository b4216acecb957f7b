#include "config/low_precision_rules.h"

#include "config/version_rules.h"

namespace stagemem {
namespace {

bool te_at_least(const SoftwareStack& stack, Release from) {
  return !stack.transformer_engine.given() || compare_releases(stack.transformer_engine, from) >= 0;
}

std::string recipe_text(Fp8Recipe recipe) {
  return "fp8_recipe=" + std::string(fp8_recipe_name(recipe));
}

}  // namespace

Config bf16_twin(const Config& config) {
  Config twin = config;
  twin.training.low_precision = LowPrecisionCompute{};
  for (WeightDtype* dtype : {&twin.precision.dense_weights, &twin.precision.expert_weights}) {
    if (*dtype != WeightDtype::fp32) *dtype = WeightDtype::bf16;
  }
  return twin;
}

Config with_recipe(const Config& config, Fp8Recipe recipe) {
  if (recipe == Fp8Recipe::none) return bf16_twin(config);
  Config out = config;
  out.training.low_precision.recipe = recipe;
  WeightDtype primary = WeightDtype::fp8_tensor_scaled;
  if (recipe == Fp8Recipe::block) primary = WeightDtype::fp8_block_scaled;
  if (recipe == Fp8Recipe::mxfp8) primary = WeightDtype::mxfp8;
  if (recipe == Fp8Recipe::nvfp4) primary = WeightDtype::nvfp4;
  for (WeightDtype* dtype : {&out.precision.dense_weights, &out.precision.expert_weights}) {
    if (*dtype != WeightDtype::bf16 && *dtype != WeightDtype::fp32) *dtype = primary;
  }
  return out;
}

bool uses_low_precision(const Config& config) {
  return bf16_twin(config).training.low_precision != config.training.low_precision ||
         bf16_twin(config).precision != config.precision;
}

bool blackwell_datacenter(Architecture architecture) {
  return architecture == Architecture::sm100 || architecture == Architecture::sm103;
}

bool per_tensor_one_copy(const SoftwareStack& stack) {
  return blackwell_datacenter(stack.architecture) &&
         rule_holds(stack, VersionRule::te_per_tensor_fp8_one_copy_on_blackwell);
}

bool projection_saves_original_input(const TrainingConfig& training) {
  const Fp8Recipe recipe = training.low_precision.recipe;
  if (recipe == Fp8Recipe::none || recipe == Fp8Recipe::delayed) return false;
  return rule_holds(training.stack, VersionRule::te_linear_save_original_input) &&
         rule_holds(training.stack, VersionRule::megatron_proj_saves_original_input);
}

std::vector<std::string> low_precision_problems(const TrainingConfig& training) {
  std::vector<std::string> problems;
  const LowPrecisionCompute& lp = training.low_precision;
  const SoftwareStack& stack = training.stack;
  const Architecture arch = stack.architecture;
  const std::string arch_name(enum_name(arch));
  const auto needs_te = [&](Release from, std::string_view what) {
    if (!te_at_least(stack, from)) {
      problems.push_back(std::string(what) + " needs TransformerEngine " + release_text(from) +
                         " or newer; the stack names te=" + release_text(stack.transformer_engine));
    }
  };
  // The recipe on an architecture TE refuses it on: "<recipe> <needs>; the stack names arch=".
  const auto refuse_arch = [&](bool refused, std::string_view needs) {
    if (refused) {
      problems.push_back(recipe_text(lp.recipe) + " " + std::string(needs) +
                         "; the stack names arch=" + arch_name);
    }
  };
  const bool given_arch = arch != Architecture::current;
  switch (lp.recipe) {
    case Fp8Recipe::none:
      return problems;
    case Fp8Recipe::delayed:
    case Fp8Recipe::tensor:
      refuse_arch(arch == Architecture::sm80 || arch == Architecture::sm86,
                  "needs fp8 tensor cores (sm89 or newer)");
      if (lp.recipe == Fp8Recipe::tensor) needs_te(release(2, 2), recipe_text(lp.recipe));
      break;
    case Fp8Recipe::mxfp8:
      refuse_arch(given_arch && !blackwell_datacenter(arch),
                  "needs sm100 or sm103 (TE refuses MXFP8 elsewhere)");
      needs_te(release(2, 0), recipe_text(lp.recipe));
      break;
    case Fp8Recipe::block:
      refuse_arch(arch == Architecture::sm80 || arch == Architecture::sm86 ||
                      arch == Architecture::sm89 || arch == Architecture::sm120,
                  "runs on sm90 (and on sm100/sm103 from TE 2.9)");
      needs_te(release(2, 3), recipe_text(lp.recipe));
      if (blackwell_datacenter(arch)) {
        needs_te(release(2, 9), recipe_text(lp.recipe) + " on " + arch_name);
      }
      break;
    case Fp8Recipe::nvfp4:
      refuse_arch(given_arch && !blackwell_datacenter(arch) && arch != Architecture::sm120,
                  "needs sm100 or newer");
      needs_te(release(2, 8), recipe_text(lp.recipe));
      break;
  }
  if (lp.fp8_attention) {
    if (lp.recipe == Fp8Recipe::block || lp.recipe == Fp8Recipe::nvfp4) {
      problems.push_back("fp8_attention: TE's " + recipe_text(lp.recipe) +
                         " recipe refuses fp8 dot-product attention");
    } else if (lp.recipe == Fp8Recipe::tensor) {
      needs_te(release(2, 8), "fp8_attention with fp8_recipe=tensor");
    } else if (lp.recipe == Fp8Recipe::mxfp8) {
      needs_te(release(2, 16), "fp8_attention with fp8_recipe=mxfp8");
    }
  }
  if (lp.bf16_layers_at_start + lp.bf16_layers_at_end > 0) {
    if (lp.recipe == Fp8Recipe::delayed) {
      problems.push_back("bf16 first/last layers: Megatron refuses them with delayed scaling");
    }
    if (stack.megatron_core.given() && compare_releases(stack.megatron_core, release(0, 12)) < 0) {
      problems.push_back(
          "bf16 first/last layers need megatron-core 0.12 or newer; the stack "
          "names megatron-core=" +
          release_text(stack.megatron_core));
    }
  }
  return problems;
}

}  // namespace stagemem
