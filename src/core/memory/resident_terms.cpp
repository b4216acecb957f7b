#include "memory/resident_terms.h"
#include "config/version_rules.h"

#include <algorithm>
#include <array>
#include <span>
#include <utility>

#include "report/term_info.h"

namespace stagemem {
namespace {

constexpr std::int64_t fp8_block_values = 128 * 128;  // one fp32 scale per 128 x 128 block
constexpr std::int64_t mx_block_values = 32;          // one e8m0 scale per 32 values (OCP MX)

constexpr std::string_view parameters_scaling =
    "parameters on this rank: layers on the stage, 1/TP for split tensors, 1/(EP x ETP) for "
    "routed experts, embedding on the first and head on the last stage";

// Names and scaling of the state terms are rendered from their factors (term_text.cpp): the
// dtype, the group and the roles they cover are numbers here.
constexpr TermInfo term_weights{"weights", parameters_scaling, TermText::weights};
constexpr TermInfo term_weight_scales{"weight scales", parameters_scaling, TermText::weight_scales};
constexpr TermInfo term_main_gradient{
    "main gradient buffer",
    "parameters on this rank: layers on the stage, 1/TP for split tensors, 1/(EP x ETP) for "
    "routed experts, embedding on the first and head on the last stage; not sharded by the "
    "distributed optimizer",
    TermText::main_gradient};
constexpr TermInfo term_master_weights{"master weights", parameters_scaling,
                                       TermText::master_weights};
constexpr TermInfo term_muon_momentum{"Muon momentum", parameters_scaling, TermText::muon_momentum};
constexpr TermInfo term_adam_moments{"exp_avg + exp_avg_sq", parameters_scaling,
                                     TermText::adam_moments};
constexpr TermInfo term_cast_copy{"bf16 cast copy kept by the optimizer", parameters_scaling,
                                  TermText::cast_copy};

constexpr TermInfo term_sharded_weights{
    "sharded weights (1/{} of each parameter: Megatron-FSDP model_weight_buffer shard)",
    "parameters on this rank / the shard group (DP x CP, the HSDP shard group x CP; experts: "
    "expert DP)",
    TermText::generic};
constexpr TermInfo term_fp32_parameter_shards{
    "sharded fp32 parameters (FSDP2 DTensor shards, 1/{}; the optimizer's parameters)",
    "parameters on this rank / the shard group (DP x CP, the HSDP shard group x CP; experts: "
    "expert DP)",
    TermText::generic};
constexpr TermInfo term_sharded_gradients{
    "sharded gradients (1/{} of each parameter)",
    "parameters on this rank / the shard group (DP x CP, the HSDP shard group x CP; experts: "
    "expert DP)",
    TermText::generic};

constexpr TermInfo term_dummy_wgrad{
    "TE dummy weight-gradient buffers (gradient-accumulation fusion, {} distinct weight shapes)",
    "distinct per-rank weight shapes on this stage (1/TP, 1/ETP); independent of layer count, "
    "sequence and micro-batch",
    TermText::generic};

constexpr TermInfo term_amax_history{
    "TE delayed-scaling amax histories and scales",
    "quantised weight tensors on this rank (one GEMM each) x the amax history length",
    TermText::generic};
constexpr TermInfo term_fp8_weight_cache{
    "TE cached quantised weight copies (row-wise + column-wise, quantised compute of bf16 "
    "weights)",
    "linear-layer weights on this rank (not the LM head, router or embedding); quantised once per "
    "step, kept across micro-batches and steps",
    TermText::generic};
constexpr TermInfo term_fp8_columnwise{
    "TE column-wise (transposed) copies of the quantised primary weights",
    "fp8-stored linear-layer weights on this rank; made for the backward GEMMs and kept",
    TermText::generic};
constexpr TermInfo term_fp8_cache_scales{"TE quantised weight-copy scales",
                                         "linear-layer weights on this rank", TermText::generic};

constexpr std::array<TensorRole, tensor_role_count> all_roles = {
    TensorRole::hidden_matrix,     TensorRole::expert_matrix, TensorRole::router_matrix,
    TensorRole::embedding_or_head, TensorRole::vector,        TensorRole::convolution};

std::int64_t elements_of(const RoleCounts& counts, TensorRole role) {
  return counts[role];
}

// Elements of `counts` whose role passes `keep`, and those roles as a bit mask (bit = role).
template <typename Keep>
std::pair<std::int64_t, std::int64_t> select(const RoleCounts& counts, Keep keep) {
  std::int64_t elements = 0;
  std::int64_t roles = 0;
  for (TensorRole role : all_roles) {
    if (!keep(role) || elements_of(counts, role) == 0) continue;
    elements += elements_of(counts, role);
    roles |= std::int64_t{1} << static_cast<int>(role);
  }
  return {elements, roles};
}

Term resident_term(const TermInfo& info, AllocationPoint at, std::int64_t bytes,
                   const Formula& factors) {
  return Term{.info = &info,
              .bytes = bytes,
              .formula = factors,
              .family = Family::resident,
              .tag = Tag::derived,
              .allocated_at = at};
}

// Megatron's bf16 first/last layers keep their linear matrices in bf16 under quantised primary
// weights (fp8_model_init is skipped for them): those elements move to the bf16 group.
bool quantised_storage(WeightDtype dtype) {
  return dtype != WeightDtype::bf16 && dtype != WeightDtype::fp32;
}
WeightDtype dtype_of(const Precision& precision, TensorRole role, bool bf16_layer) {
  const WeightDtype dtype = storage_dtype(precision, role);
  return bf16_layer && quantised_storage(dtype) ? WeightDtype::bf16 : dtype;
}

void add_weight_terms(std::vector<Term>& terms, const RoleCounts& counts,
                      const Precision& precision, const RoleCounts& bf16_layers) {
  // Each role's elements outside and inside the bf16 layers, with the dtype each is stored in.
  struct Part {
    TensorRole role;
    WeightDtype dtype;
    std::int64_t elements;
    std::int64_t tensors;
  };
  std::array<Part, 2 * tensor_role_count> parts{};
  std::size_t part_count = 0;
  for (TensorRole role : all_roles) {
    const std::int64_t in_bf16 = std::min(bf16_layers[role], elements_of(counts, role));
    const std::int64_t bf16_tensors = std::min(bf16_layers.tensors(role), counts.tensors(role));
    if (elements_of(counts, role) - in_bf16 > 0) {
      parts[part_count++] = {role, dtype_of(precision, role, false),
                             elements_of(counts, role) - in_bf16,
                             counts.tensors(role) - bf16_tensors};
    }
    if (in_bf16 > 0) {
      parts[part_count++] = {role, dtype_of(precision, role, true), in_bf16, bf16_tensors};
    }
  }
  // One term per storage dtype, so the common all-bf16 case is a single "weights (bf16)" row.
  std::array<WeightDtype, tensor_role_count + 2> dtypes{};
  std::size_t dtype_count = 0;
  const std::span<const Part> used(parts.data(), part_count);
  for (const Part& part : used) {
    bool seen = false;
    for (std::size_t i = 0; i < dtype_count; ++i) seen = seen || dtypes[i] == part.dtype;
    if (!seen) dtypes[dtype_count++] = part.dtype;
  }
  for (std::size_t d = 0; d < dtype_count; ++d) {
    const WeightDtype dtype = dtypes[d];
    std::int64_t elements = 0;
    std::int64_t roles = 0;
    std::int64_t tensors = 0;
    for (const Part& part : used) {
      if (part.dtype != dtype) continue;
      elements += part.elements;
      tensors += part.tensors;
      roles |= std::int64_t{1} << static_cast<int>(part.role);
    }
    const double value_bytes = weight_value_bytes(dtype);
    const std::int64_t named_roles = dtype_count == 1 ? 0 : roles;
    const auto dtype_id = static_cast<std::int64_t>(dtype);
    terms.push_back(resident_term(term_weights, AllocationPoint::model_init,
                                  dtype == WeightDtype::mxfp4 || dtype == WeightDtype::nvfp4
                                      ? ceil_div(elements, 2)
                                      : static_cast<std::int64_t>(value_bytes) * elements,
                                  Formula().number(dtype_id).number(elements).number(named_roles)));
    std::int64_t scale_bytes = 0;
    switch (dtype) {
      case WeightDtype::fp8_tensor_scaled:
        scale_bytes = 4 * tensors;
        break;
      case WeightDtype::fp8_block_scaled:
        scale_bytes = 4 * ceil_div(elements, fp8_block_values);
        break;
      case WeightDtype::mxfp8:
      case WeightDtype::mxfp4:
        scale_bytes = ceil_div(elements, mx_block_values);
        break;
      case WeightDtype::nvfp4:  // e4m3 per 16 values and an fp32 amax per tensor
        scale_bytes = ceil_div(elements, 16) + 4 * tensors;
        break;
      case WeightDtype::bf16:
      case WeightDtype::fp32:
        break;
    }
    if (scale_bytes > 0) {
      terms.push_back(resident_term(
          term_weight_scales, AllocationPoint::model_init, scale_bytes,
          Formula().number(dtype_id).number(elements).number(tensors).number(named_roles)));
    }
  }
}

// TE's quantised compute (Megatron passes is_first_microbatch, so TE Linear/GroupedLinear cache
// the quantised weight in `_fp8_workspaces`, transformer_engine/pytorch/module/base.py
// quantize_weight): the row-wise usage for forward and the column-wise usage for the backward
// dgrad GEMM, each with its scales (low_precision.h has the layouts per recipe and arch).
// Quantised primary weights are the row-wise usage already; their column-wise usage is made by
// update_usage(columnwise_usage=True) and kept with the parameter (nothing for per-tensor fp8 on
// sm100/sm103, whose one array serves both). Elements are the rank's aggregate: scale padding
// per tensor (rows to 128, blocks to 4) is not added.
void add_quantised_weight_terms(std::vector<Term>& terms, const RoleCounts& counts,
                                const Precision& precision, const LowPrecisionResident& lp) {
  const Fp8Recipe recipe = lp.quantisation.recipe;
  if (recipe == Fp8Recipe::none) return;
  std::int64_t high = 0;     // linear-layer elements stored in bf16 / fp32: a whole cached copy
  std::int64_t primary = 0;  // stored quantised already: the column-wise usage only
  std::int64_t gemms = 0;    // quantised weight tensors: one GEMM each
  for (const TensorRole role : {TensorRole::hidden_matrix, TensorRole::expert_matrix}) {
    const std::int64_t elements = elements_of(counts, role) - lp.bf16_layers[role];
    const std::int64_t tensors = counts.tensors(role) - lp.bf16_layers.tensors(role);
    if (elements <= 0) continue;
    gemms += tensors;
    const WeightDtype dtype = storage_dtype(precision, role);
    if (dtype == WeightDtype::bf16 || dtype == WeightDtype::fp32) {
      high += elements;
    } else if (dtype != WeightDtype::mxfp4) {
      primary += elements;
    }
  }
  const bool per_tensor = recipe == Fp8Recipe::tensor || recipe == Fp8Recipe::delayed;
  const bool nvfp4 = recipe == Fp8Recipe::nvfp4;
  const auto data = [&](const TermInfo& info, std::int64_t elements, std::int64_t usages,
                        Label dtype) {
    if (elements == 0 || usages == 0) return;
    Formula f = Formula().times(label_id("linear-layer weight elements"), elements);
    if (usages > 1) f.times(label_id("usages (row-wise, column-wise)"), usages);
    if (nvfp4) f.per(label_id("2 (e2m1 values per byte)"), 2);
    f.bytes(1, dtype);
    terms.push_back(resident_term(info, AllocationPoint::first_step, f.value(), f));
  };
  const Label fp8 = nvfp4 ? label_id("e2m1 pair") : label_id("fp8 e4m3");
  data(term_fp8_weight_cache, high, per_tensor && lp.quantisation.one_copy ? 1 : 2, fp8);
  data(term_fp8_columnwise, primary, per_tensor && lp.quantisation.one_copy ? 0 : 1, fp8);
  // Scales of the cached copies and of the primary weights' column-wise usage (the primary
  // weights' row-wise scales are a "weight scales" term).
  const std::int64_t scaled = 2 * high + (per_tensor ? 0 : primary);
  Formula scales;
  switch (recipe) {
    case Fp8Recipe::tensor:
    case Fp8Recipe::delayed:  // one fp32 scale_inv per cached tensor, shared by both layouts
      if (high > 0) {
        std::int64_t tensors = 0;
        for (const TensorRole role : {TensorRole::hidden_matrix, TensorRole::expert_matrix}) {
          const WeightDtype dtype = storage_dtype(precision, role);
          if (dtype == WeightDtype::bf16 || dtype == WeightDtype::fp32) {
            tensors += counts.tensors(role) - lp.bf16_layers.tensors(role);
          }
        }
        scales = Formula().times(label_id("weight tensors"), tensors).bytes(4, label_id("fp32"));
      }
      break;
    case Fp8Recipe::mxfp8:
      if (scaled > 0) {
        scales = Formula()
                     .times(label_id("32-value blocks x usages"), ceil_div(scaled, mx_block_values))
                     .bytes(1, label_id("e8m0"));
      }
      break;
    case Fp8Recipe::block:
      if (scaled > 0) {
        scales =
            Formula()
                .times(label_id("128 x 128 blocks x usages"), ceil_div(scaled, fp8_block_values))
                .bytes(4, label_id("fp32"));
      }
      break;
    case Fp8Recipe::nvfp4:
      if (scaled > 0) {
        scales = Formula()
                     .times(label_id("16-value blocks x usages"), ceil_div(scaled, 16))
                     .bytes(1, label_id("e4m3"));
      }
      break;
    case Fp8Recipe::none:
      break;
  }
  if (scales.size() > 0) {
    terms.push_back(
        resident_term(term_fp8_cache_scales, AllocationPoint::first_step, scales.value(), scales));
  }
  // Delayed scaling: per quantised GEMM an fp32 amax history [L, 3] and scale [3] for its
  // forward tensors (input, weight, output) and [L, 2] and [2] for its backward ones (TE
  // DelayedScalingRecipeState, quantization.py), from the first fp8 forward.
  if (recipe == Fp8Recipe::delayed && gemms > 0) {
    const Formula f =
        Formula()
            .times(label_id("quantised GEMMs"), gemms)
            .times(label_id("5 x amax history + 5 values"), 5 * lp.amax_history_len + 5)
            .bytes(4, label_id("fp32"));
    terms.push_back(resident_term(term_amax_history, AllocationPoint::first_step, f.value(), f));
  }
}

}  // namespace

double weight_value_bytes(WeightDtype dtype) {
  switch (dtype) {
    case WeightDtype::bf16:
      return 2.0;
    case WeightDtype::fp32:
      return 4.0;
    case WeightDtype::fp8_tensor_scaled:
    case WeightDtype::fp8_block_scaled:
    case WeightDtype::mxfp8:
      return 1.0;
    case WeightDtype::mxfp4:
    case WeightDtype::nvfp4:
      return 0.5;
  }
  return 0.0;
}

std::int64_t grad_bytes(GradDtype dtype) {
  return dtype == GradDtype::fp32 ? 4 : 2;
}
std::int64_t master_bytes(MasterDtype dtype) {
  return dtype == MasterDtype::fp32 ? 4 : 2;
}

std::int64_t moment_bytes(MomentDtype dtype) {
  switch (dtype) {
    case MomentDtype::fp32:
      return 4;
    case MomentDtype::bf16:
    case MomentDtype::fp16:
      return 2;
    case MomentDtype::fp8:
      return 1;
  }
  return 4;
}

std::int64_t moments_per_element(bool muon) {
  return muon ? 1 : 2;
}

bool is_distributed(OptimizerKind kind) {
  return kind == OptimizerKind::distributed_adam || kind == OptimizerKind::distributed_muon;
}

bool is_muon(OptimizerKind kind) {
  return kind == OptimizerKind::muon || kind == OptimizerKind::distributed_muon;
}

bool muon_covers(const OptimizerConfig& optimizer, TensorRole role) {
  if (!is_muon(optimizer.kind)) return false;
  switch (role) {
    case TensorRole::hidden_matrix:
      return true;
    case TensorRole::expert_matrix:
      return optimizer.muon_expert_matrices;
    case TensorRole::router_matrix:
      return optimizer.muon_routers;
    case TensorRole::embedding_or_head:
      return optimizer.muon_embedding_and_head;
    case TensorRole::vector:
    case TensorRole::convolution:
      return false;
  }
  return false;
}

WeightDtype storage_dtype(const Precision& precision, TensorRole role) {
  if (role == TensorRole::hidden_matrix) return precision.dense_weights;
  if (role == TensorRole::expert_matrix) return precision.expert_weights;
  // Non-linear-layer tensors never take fp8/MX storage: TE quantizes linear layers only.
  return precision.dense_weights == WeightDtype::fp32 ? WeightDtype::fp32 : WeightDtype::bf16;
}

LowPrecisionResident low_precision_resident(const TrainingConfig& training, const Model& model,
                                            const StageParameters& stage,
                                            const ParallelLayout& layout) {
  if (!training.low_precision.quantised()) return {};
  LowPrecisionResident out{.quantisation = linear_quantisation(training),
                           .amax_history_len = training.low_precision.amax_history_len};
  const auto layers = static_cast<std::int64_t>(model.layers.size());
  const std::int64_t start = training.low_precision.bf16_layers_at_start;
  const std::int64_t end = layers - training.low_precision.bf16_layers_at_end;
  for (const VirtualStage& chunk : stage.chunks) {
    for (std::int64_t i = chunk.first_layer; i < chunk.first_layer + chunk.layer_count; ++i) {
      if (i >= start && i < end) continue;
      const RoleCounts one =
          layer_role_counts(model, model.layers[static_cast<std::size_t>(i)], layout);
      for (std::size_t r = 0; r < one.elements.size(); ++r) {
        out.bf16_layers.elements[r] += one.elements[r];
        out.bf16_layers.weight_tensors[r] += one.weight_tensors[r];
      }
    }
  }
  return out;
}

StateShards state_shards(const OptimizerKind kind, const ParallelLayout& layout) {
  if (!is_distributed(kind)) return {};
  return {.dense = data_parallel_size(layout) * layout.context_parallel,
          .expert = expert_data_parallel_size(layout),
          .sharded_state = true};
}

StateShards state_shards(const ResolvedSharding& sharding) {
  if (!sharding.shards_state()) return {};
  return {.dense = sharding.dense_shards,
          .expert = sharding.expert_shards,
          .sharded_state = true,
          .sharded_grads = sharding.shards_grads(),
          .sharded_params = sharding.shards_params(),
          .fp32_parameter_shards = sharding.implementation == DataParallelImpl::fsdp2};
}

std::vector<Term> resident_terms(const RoleCounts& counts, const Precision& precision,
                                 const OptimizerConfig& optimizer, const StateShards& shards,
                                 const LowPrecisionResident& low_precision) {
  std::vector<Term> terms;
  append_resident_terms(counts, precision, optimizer, shards, terms, low_precision);
  return terms;
}

void append_resident_terms(const RoleCounts& counts, const Precision& precision,
                           const OptimizerConfig& optimizer, const StateShards& shards,
                           std::vector<Term>& terms, const LowPrecisionResident& low_precision) {
  const std::int64_t all = counts.total();
  const std::int64_t expert_elements = counts[TensorRole::expert_matrix];
  const std::int64_t dense_elements = all - expert_elements;
  // ceil(dense / dense shards) + ceil(expert / expert shards): one rank's shard of every group.
  const std::int64_t shard_elements =
      ceil_div(dense_elements, shards.dense) + ceil_div(expert_elements, shards.expert);
  const auto sharded = [&](const TermInfo& info, AllocationPoint at, std::int64_t bytes,
                           Label dtype) {
    const Formula f =
        Formula()
            .times(label_id("elements on this rank / shard group, rounded up"), shard_elements)
            .bytes(bytes, dtype);
    Term t = resident_term(info, at, f.value(), f);
    t.name_value = shards.dense;
    terms.push_back(t);
  };
  const bool fp32_dense = precision.dense_weights == WeightDtype::fp32;
  if (shards.fp32_parameter_shards) {
    sharded(term_fp32_parameter_shards, AllocationPoint::model_init, 4, label_id("fp32"));
  } else if (shards.sharded_params) {
    sharded(term_sharded_weights, AllocationPoint::model_init, fp32_dense ? 4 : 2,
            fp32_dense ? label_id("fp32") : label_id("bf16"));
  } else {
    add_weight_terms(terms, counts, precision, low_precision.bf16_layers);
    add_quantised_weight_terms(terms, counts, precision, low_precision);
  }

  const std::int64_t grad = grad_bytes(precision.grads);
  if (shards.fp32_parameter_shards) {
    // FSDP2 casts each reduce-scattered gradient to the parameter's dtype (fp32).
    sharded(term_sharded_gradients, AllocationPoint::first_step, 4, label_id("fp32"));
  } else if (shards.sharded_grads) {
    sharded(term_sharded_gradients, AllocationPoint::model_init, grad,
            grad == 4 ? label_id("fp32") : label_id("bf16"));
  } else {
    terms.push_back(
        resident_term(term_main_gradient, AllocationPoint::model_init, grad * all,
                      Formula().number(static_cast<std::int64_t>(precision.grads)).number(all)));
  }

  const bool distributed = is_distributed(optimizer.kind) || shards.sharded_state;
  const bool muon = is_muon(optimizer.kind);
  const std::int64_t moment = moment_bytes(optimizer.moments);
  for (const bool expert : {false, true}) {
    const auto in_group = [expert](TensorRole r) {
      return (r == TensorRole::expert_matrix) == expert;
    };
    const std::int64_t group_shards = expert ? shards.expert : shards.dense;
    // Tensors stored in fp32 are their own master copy.
    const auto [master_elements, master_roles] = select(counts, [&](TensorRole r) {
      return in_group(r) && storage_dtype(precision, r) != WeightDtype::fp32;
    });
    if (master_elements > 0 && !shards.fp32_parameter_shards) {
      const std::int64_t shard = ceil_div(master_elements, group_shards);
      const std::int64_t bytes = master_bytes(optimizer.master_weights);
      terms.push_back(resident_term(term_master_weights, AllocationPoint::optimizer_init,
                                    bytes * shard,
                                    Formula()
                                        .number(static_cast<std::int64_t>(optimizer.master_weights))
                                        .number(expert)
                                        .number(master_elements)
                                        .number(group_shards)
                                        .number(distributed)));
    }
    for (const bool muon_group : {true, false}) {
      if (muon_group && !muon) continue;
      const auto [elements, roles] = select(counts, [&](TensorRole r) {
        return in_group(r) && muon_covers(optimizer, r) == muon_group;
      });
      if (elements == 0) continue;
      const std::int64_t shard = ceil_div(elements, group_shards);
      const std::int64_t per_element = moments_per_element(muon_group) * moment;
      terms.push_back(resident_term(muon_group ? term_muon_momentum : term_adam_moments,
                                    AllocationPoint::first_step, per_element * shard,
                                    Formula()
                                        .number(static_cast<std::int64_t>(optimizer.moments))
                                        .number(expert)
                                        .number(roles)
                                        .number(elements)
                                        .number(group_shards)
                                        .number(distributed)
                                        .number(muon)));
    }
  }

  if (optimizer.cast_copy != CastCopy::none) {
    const bool muon_only = optimizer.cast_copy == CastCopy::muon_group;
    const auto [elements, roles] =
        select(counts, [&](TensorRole r) { return !muon_only || muon_covers(optimizer, r); });
    if (elements > 0) {
      terms.push_back(resident_term(term_cast_copy, AllocationPoint::first_step, 2 * elements,
                                    Formula().number(muon_only).number(roles).number(elements)));
    }
  }
}

void append_dummy_wgrad_terms(const Model& m, const StageParameters& stage,
                              const ParallelLayout& layout, const Precision& precision,
                              const SoftwareStack& stack, std::vector<Term>& out) {
  if (!precision.gradient_accumulation_fusion) return;
  const bool te_cache = rule_holds(stack, VersionRule::te_dummy_wgrad_cache);
  const bool grouped_cache =
      te_cache && rule_holds(stack, VersionRule::te_grouped_linear_dummy_wgrad_cache);
  const bool head_cache =
      te_cache && rule_holds(stack, VersionRule::megatron_lm_head_dummy_wgrad_cache);
  // Distinct [rows, cols] per-rank weight shapes: get_dummy_wgrad's dict key (one dtype here).
  std::vector<std::pair<std::int64_t, std::int64_t>> shapes;
  // `kept`: whether this module's release keeps a buffer per shape (else a fresh one per backward).
  const auto add_if = [&](bool kept, std::int64_t rows, std::int64_t cols) {
    if (!kept || rows <= 0 || cols <= 0) return;
    for (const auto& s : shapes) {
      if (s.first == rows && s.second == cols) return;
    }
    shapes.emplace_back(rows, cols);
  };
  const auto add = [&](std::int64_t rows, std::int64_t cols) { add_if(te_cache, rows, cols); };
  const std::int64_t tp = std::max<std::int64_t>(1, layout.tensor_parallel);
  const std::int64_t etp = std::max<std::int64_t>(1, layout.expert_tensor_parallel);
  const std::int64_t h = m.hidden;
  const auto layer = [&](LayerKind kind) {
    switch (kind.attention) {
      case AttentionKind::gqa: {
        const GqaShape& a = m.gqa;
        add((a.heads + 2 * a.kv_heads) * a.head_dim / tp, h);
        add(h, a.heads * a.head_dim / tp);
        break;
      }
      case AttentionKind::mla: {
        const MlaShape& a = m.mla;
        const std::int64_t q_head = a.qk_nope_head_dim + a.qk_rope_head_dim;
        if (a.q_lora_rank > 0) {
          add(a.q_lora_rank, h);
          add(a.heads * q_head / tp, a.q_lora_rank);
        } else {
          add(a.heads * q_head / tp, h);
        }
        add(a.kv_lora_rank + a.qk_rope_head_dim, h);
        add(a.heads * (a.qk_nope_head_dim + a.v_head_dim) / tp, a.kv_lora_rank);
        add(h, a.heads * a.v_head_dim / tp);
        if (a.output_gate) add(a.heads * a.v_head_dim / tp, h);
        break;
      }
      case AttentionKind::kda: {
        const std::int64_t width = m.kda.heads * m.kda.head_dim / tp;
        add(width, h);  // q, k, v (and a full-rank gate) share the shape
        add(h, width);
        break;
      }
    }
    if (kind.mlp == MlpKind::dense) {
      const std::int64_t i = m.dense_mlp.intermediate / tp;
      add((m.dense_mlp.activation == MlpActivation::swiglu ? 2 : 1) * i, h);
      add(h, i);
    } else {
      const MoeShape& e = m.moe;
      const std::int64_t width = e.latent_hidden > 0 ? e.latent_hidden : h;
      add_if(grouped_cache, 2 * e.expert_intermediate / etp, width);
      add_if(grouped_cache, width, e.expert_intermediate / etp);
      if (e.shared_experts > 0) {
        const std::int64_t i = e.shared_experts * e.shared_intermediate / tp;
        add(2 * i, h);
        add(h, i);
      }
      if (e.latent_hidden > 0) {
        add(e.latent_hidden, h);
        add(h, e.latent_hidden);
      }
    }
  };
  bool head = false;
  bool mtp = false;
  for (const VirtualStage& chunk : stage.chunks) {
    for (std::int64_t i = chunk.first_layer; i < chunk.first_layer + chunk.layer_count; ++i) {
      layer(m.layers[static_cast<std::size_t>(i)]);
    }
    if (chunk.mtp_layers > 0) {
      mtp = true;
      layer(m.mtp_layer);
    }
    head = head || chunk.head;
  }
  if (mtp) add(h, 2 * h);  // eh_proj
  if (head || mtp) add_if(head_cache, padded_vocab(m.vocab, layout) / tp, h);
  if (shapes.empty()) return;
  std::int64_t elements = 0;
  for (const auto& s : shapes) elements += s.first * s.second;  // each < 2^40: no overflow
  const std::int64_t bytes = precision.dense_weights == WeightDtype::fp32 ? 4 : 2;
  const Formula formula = Formula()
                              .times(label_id("elements of the distinct weight shapes"), elements)
                              .bytes(bytes, bytes == 4 ? label_id("fp32") : label_id("bf16"));
  out.push_back(Term{.info = &term_dummy_wgrad,
                     .bytes = formula.value(),
                     .name_value = static_cast<std::int64_t>(shapes.size()),
                     .formula = formula,
                     .family = Family::resident,
                     .tag = Tag::derived,
                     .allocated_at = AllocationPoint::first_step});
}

double resident_bytes_per_parameter(const Precision& precision, const OptimizerConfig& optimizer,
                                    std::int64_t shards) {
  const WeightDtype dtype = precision.dense_weights;
  const double divisor =
      is_distributed(optimizer.kind) && shards > 0 ? static_cast<double>(shards) : 1.0;
  const double master = dtype == WeightDtype::fp32
                            ? 0.0
                            : static_cast<double>(master_bytes(optimizer.master_weights));
  const double moments = static_cast<double>(moments_per_element(is_muon(optimizer.kind)) *
                                             moment_bytes(optimizer.moments));
  const bool cast_covers = optimizer.cast_copy == CastCopy::all ||
                           (optimizer.cast_copy == CastCopy::muon_group && is_muon(optimizer.kind));
  const double cast = cast_covers ? 2.0 : 0.0;
  return weight_value_bytes(dtype) + static_cast<double>(grad_bytes(precision.grads)) +
         (master + moments) / divisor + cast;
}

}  // namespace stagemem
