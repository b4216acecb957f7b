#include "render/term_catalogue.h"

#include <string_view>

#include "estimate/estimate.h"
#include "render/term_text.h"

namespace stagemem {
namespace {

// Every layer kind once, every feature on: 6 layers, AttnRes blocks of 2, one MTP layer.
constexpr std::string_view catalogue_model =
    "name:catalogue;h:1024;v:32000;gqa:8,4,128,qknorm;mla:8,256,128,64,32,64,gate;"
    "kda:8,64,4;mlp:4096,swiglu;moe:16,4,512,1,512,bias,latent=512,lnorm;mtp:1,me;ar:2,2;"
    "layers:gd,ge,md,me,kd,ke";
// torchtitan's pieces are its Llama-3 decoder's: GQA and a dense SwiGLU MLP only.
constexpr std::string_view catalogue_llama =
    "name:catalogue-llama;h:1024;v:32000;gqa:8,4,128;mlp:4096,swiglu;layers:gd*4";

// PP 1: torchtitan's default policy then reshards the blocks (and keeps the head gathered).
void torchtitan(Config& c, RecomputePolicy policy) {
  c.custom_model = std::string(catalogue_llama);
  c.parallel.pipeline_parallel = 1;
  c.training.framework = Framework::torchtitan;
  c.training.recompute.policy = policy;
}

struct Variant {
  std::string_view label;
  void (*apply)(Config&);
};

constexpr Variant variants[] = {
    {"default options", [](Config&) {}},
    {"optimizer=distributed-muon",
     [](Config& c) { c.optimizer.kind = OptimizerKind::distributed_muon; }},
    {"optimizer=distributed-adam",
     [](Config& c) { c.optimizer.kind = OptimizerKind::distributed_adam; }},
    {"weights=fp8-block",
     [](Config& c) { c.precision.dense_weights = WeightDtype::fp8_block_scaled; }},
    {"expert_weights=mxfp4", [](Config& c) { c.precision.expert_weights = WeightDtype::mxfp4; }},
    {"cast_copy=all", [](Config& c) { c.optimizer.cast_copy = CastCopy::all; }},
    {"recompute=selective",
     [](Config& c) {
       c.training.recompute.policy = RecomputePolicy::selective;
       c.training.recompute.modules = (1u << recompute_module_count) - 1;
     }},
    {"recompute=full", [](Config& c) { c.training.recompute.policy = RecomputePolicy::full; }},
    {"kda_backend=eager", [](Config& c) { c.training.kernels.kda = KdaBackend::eager; }},
    {"attention_kernel=materialized, dropout",
     [](Config& c) {
       c.training.kernels.attention = AttentionKernel::materialized;
       c.training.dropout = true;
     }},
    {"cross_entropy=fused-chunked",
     [](Config& c) { c.training.kernels.cross_entropy = CrossEntropyKernel::fused_chunked; }},
    {"cp=2", [](Config& c) { c.parallel.context_parallel = 2; }},
    {"cp=2, cp_comm_type=a2a",
     [](Config& c) {
       c.parallel.context_parallel = 2;
       c.training.kernels.cp_comm_type = CpCommType::a2a;
     }},
    {"kda_backend=disable-recompute",
     [](Config& c) { c.training.kernels.kda = KdaBackend::disable_recompute; }},
    {"fla_version=0.4.0", [](Config& c) { c.training.kernels.fla_version = FlaVersion::v0_4_0; }},
    {"moe_unpermute=legacy-unpermute-with-probs",
     [](Config& c) {
       c.training.kernels.moe_unpermute = MoeUnpermute::legacy_unpermute_with_probs;
     }},
    {"cross_entropy=te-fused",
     [](Config& c) { c.training.kernels.cross_entropy = CrossEntropyKernel::te_fused; }},
    {"cross_entropy=native-fused",
     [](Config& c) { c.training.kernels.cross_entropy = CrossEntropyKernel::native_fused; }},
    {"fp8_recipe=delayed, fp8_attention",
     [](Config& c) {
       c.training.low_precision.recipe = Fp8Recipe::delayed;
       c.training.low_precision.fp8_attention = true;
     }},
    {"fp8_recipe=mxfp8, weights=mxfp8",
     [](Config& c) {
       c.training.low_precision.recipe = Fp8Recipe::mxfp8;
       c.precision.dense_weights = WeightDtype::mxfp8;
     }},
    {"fp8_recipe=nvfp4, weights=nvfp4",
     [](Config& c) {
       c.training.low_precision.recipe = Fp8Recipe::nvfp4;
       c.precision.dense_weights = WeightDtype::nvfp4;
     }},
    {"dp_impl=megatron-fsdp",
     [](Config& c) {
       c.optimizer.kind = OptimizerKind::distributed_adam;
       c.training.sharding.implementation = DataParallelImpl::megatron_fsdp;
     }},
    {"dp_impl=megatron-fsdp, stack megatron-core=0.17",
     [](Config& c) {
       c.optimizer.kind = OptimizerKind::distributed_adam;
       c.training.sharding.implementation = DataParallelImpl::megatron_fsdp;
       c.training.stack.megatron_core = release(0, 17);
     }},
    {"framework=torchtitan (a Llama-3 model)",
     [](Config& c) { torchtitan(c, RecomputePolicy::none); }},
    {"framework=torchtitan, recompute=selective (per-op SAC)",
     [](Config& c) { torchtitan(c, RecomputePolicy::selective); }},
    {"framework=torchtitan, reshard_after_forward=never",
     [](Config& c) {
       torchtitan(c, RecomputePolicy::full);
       c.training.sharding.reshard_after_forward = ReshardAfterForward::never;
     }},
    {"framework=torchtitan, reshard_ranks=2",
     [](Config& c) {
       torchtitan(c, RecomputePolicy::full);
       c.training.sharding.reshard_ranks = 2;
     }},
    {"tp=2, sp, tp_comm_overlap",
     [](Config& c) {
       c.parallel.tensor_parallel = 2;
       c.parallel.sequence_parallel = true;
       c.training.kernels.tp_comm_overlap = true;
     }},
};

}  // namespace

std::vector<CatalogueEntry> term_catalogue() {
  std::vector<CatalogueEntry> out;
  for (const Variant& variant : variants) {
    Config config;
    config.custom_model = std::string(catalogue_model);
    config.parallel.pipeline_parallel = 2;
    config.parallel.data_parallel = 4;
    config.training.global_batch = 64;
    variant.apply(config);
    const Report report = estimate(config);
    for (const StageReport& stage : report.stages) {
      for (const Term& term : stage.terms) {
        const std::string name = term_name(term);
        bool known = false;
        for (const CatalogueEntry& e : out) known = known || e.name == name;
        if (known) continue;
        out.push_back({.name = name,
                       .family = term.family,
                       .tag = term.tag,
                       .allocated_at = term.allocated_at,
                       .scaling = term_scaling(term),
                       .example_formula = term_formula(term),
                       .brought_in_by = std::string(variant.label)});
      }
    }
  }
  return out;
}

}  // namespace stagemem
