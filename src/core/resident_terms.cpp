#include "resident_terms.h"

#include <array>
#include <cstdio>
#include <string>

#include "units.h"

namespace stagemem {
namespace {

constexpr std::int64_t fp8_block_values = 128 * 128;  // one fp32 scale per 128 x 128 block
constexpr std::int64_t mx_block_values = 32;          // one e8m0 scale per 32 values (OCP MX)

std::string count(std::int64_t value) {
  return group_digits(value);
}

std::string bytes_text(double bytes_per_value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%g B", bytes_per_value);
  return buffer;
}

std::int64_t ceil_div(std::int64_t value, std::int64_t divisor) {
  return divisor <= 0 ? value : (value + divisor - 1) / divisor;
}

std::string_view weight_dtype_label(WeightDtype dtype) {
  switch (dtype) {
    case WeightDtype::bf16:
      return "bf16";
    case WeightDtype::fp32:
      return "fp32";
    case WeightDtype::fp8_tensor_scaled:
      return "fp8 e4m3, per-tensor scale";
    case WeightDtype::fp8_block_scaled:
      return "fp8 e4m3, 128x128 block scales";
    case WeightDtype::mxfp8:
      return "mxfp8";
    case WeightDtype::mxfp4:
      return "mxfp4";
  }
  return "unknown";
}

constexpr std::array<TensorRole, tensor_role_count> all_roles = {
    TensorRole::hidden_matrix,     TensorRole::expert_matrix, TensorRole::router_matrix,
    TensorRole::embedding_or_head, TensorRole::vector,        TensorRole::convolution};

std::int64_t elements_of(const RoleCounts& counts, TensorRole role) {
  return counts[role];
}

// Elements of `counts` whose role passes `keep`, and the role names joined for a term name.
template <typename Keep>
std::pair<std::int64_t, std::string> select(const RoleCounts& counts, Keep keep) {
  std::int64_t elements = 0;
  std::string names;
  for (TensorRole role : all_roles) {
    if (!keep(role) || elements_of(counts, role) == 0) continue;
    elements += elements_of(counts, role);
    names += (names.empty() ? "" : ", ") + std::string(tensor_role_name(role));
  }
  return {elements, names};
}

const std::string parameters_scaling =
    "parameters on this rank: layers on the stage, 1/TP for split tensors, 1/(EP x ETP) for "
    "routed experts, embedding on the first and head on the last stage";

std::string shard_text(bool expert, std::int64_t shards, bool distributed) {
  if (!distributed) return "not sharded: one full copy per rank";
  return std::string("sharded over ") + (expert ? "expert DP = " : "DP x CP = ") + count(shards);
}

void add_weight_terms(std::vector<Term>& terms, const RoleCounts& counts,
                      const Precision& precision) {
  // One term per storage dtype, so the common all-bf16 case is a single "weights (bf16)" row.
  std::vector<WeightDtype> dtypes;
  for (TensorRole role : all_roles) {
    if (elements_of(counts, role) == 0) continue;
    const WeightDtype dtype = storage_dtype(precision, role);
    bool seen = false;
    for (WeightDtype d : dtypes) seen = seen || d == dtype;
    if (!seen) dtypes.push_back(dtype);
  }
  for (WeightDtype dtype : dtypes) {
    const auto [elements, names] =
        select(counts, [&](TensorRole r) { return storage_dtype(precision, r) == dtype; });
    std::int64_t tensors = 0;
    for (TensorRole role : all_roles) {
      if (storage_dtype(precision, role) == dtype) tensors += counts.tensors(role);
    }
    const double value_bytes = weight_value_bytes(dtype);
    const std::string label(weight_dtype_label(dtype));
    const std::string suffix = dtypes.size() == 1 ? "" : ": " + names;
    Term weights{
        .name = "weights (" + std::string(weight_dtype_name(dtype)) + ")" + suffix,
        .formula = bytes_text(value_bytes) + " x " + count(elements) + " parameters on this rank",
        .scaling = parameters_scaling,
        .family = Family::resident,
        .tag = Tag::derived,
        .allocated_at = AllocationPoint::model_init,
        .bytes = dtype == WeightDtype::mxfp4 ? ceil_div(elements, 2)
                                             : static_cast<std::int64_t>(value_bytes) * elements,
    };
    terms.push_back(weights);
    Term scales;
    scales.scaling = parameters_scaling;
    scales.allocated_at = AllocationPoint::model_init;
    scales.name = "weight scales (" + label + ")" + suffix;
    switch (dtype) {
      case WeightDtype::fp8_tensor_scaled:
        scales.formula = "4 B (fp32 scale_inv) x " + count(tensors) + " weight tensors";
        scales.bytes = 4 * tensors;
        break;
      case WeightDtype::fp8_block_scaled:
        scales.formula = "4 B (fp32) x ceil(" + count(elements) + " / (128 x 128)) blocks";
        scales.bytes = 4 * ceil_div(elements, fp8_block_values);
        break;
      case WeightDtype::mxfp8:
      case WeightDtype::mxfp4:
        scales.formula = "1 B (e8m0) x ceil(" + count(elements) + " / 32) blocks";
        scales.bytes = ceil_div(elements, mx_block_values);
        break;
      case WeightDtype::bf16:
      case WeightDtype::fp32:
        break;
    }
    if (scales.bytes > 0) terms.push_back(scales);
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

StateShards state_shards(const OptimizerKind kind, const ParallelLayout& layout) {
  if (!is_distributed(kind)) return {};
  return {.dense = data_parallel_size(layout) * layout.context_parallel,
          .expert = expert_data_parallel_size(layout)};
}

std::vector<Term> resident_terms(const RoleCounts& counts, const Precision& precision,
                                 const OptimizerConfig& optimizer, const StateShards& shards) {
  std::vector<Term> terms;
  add_weight_terms(terms, counts, precision);

  const std::int64_t all = counts.total();
  const std::int64_t grad = grad_bytes(precision.grads);
  terms.push_back(Term{
      .name = "main gradient buffer (" + std::string(grad_dtype_name(precision.grads)) + ")",
      .formula = std::to_string(grad) + " B x " + count(all) + " parameters on this rank",
      .scaling = parameters_scaling + "; not sharded by the distributed optimizer",
      .family = Family::resident,
      .tag = Tag::derived,
      .allocated_at = AllocationPoint::model_init,
      .bytes = grad * all,
  });

  const bool distributed = is_distributed(optimizer.kind);
  const bool muon = is_muon(optimizer.kind);
  const std::string master_name(master_dtype_name(optimizer.master_weights));
  const std::string moment_name(moment_dtype_name(optimizer.moments));
  const std::int64_t moment = moment_bytes(optimizer.moments);
  for (const bool expert : {false, true}) {
    const auto in_group = [expert](TensorRole r) {
      return (r == TensorRole::expert_matrix) == expert;
    };
    const std::int64_t group_shards = expert ? shards.expert : shards.dense;
    const std::string group = expert ? "routed experts" : "dense parameters";
    const std::string sharding = shard_text(expert, group_shards, distributed);
    const std::string state_scaling = parameters_scaling + "; " + sharding;
    // Tensors stored in fp32 are their own master copy.
    const auto [master_elements, master_roles] = select(counts, [&](TensorRole r) {
      return in_group(r) && storage_dtype(precision, r) != WeightDtype::fp32;
    });
    if (master_elements > 0) {
      const std::int64_t shard = ceil_div(master_elements, group_shards);
      const std::int64_t bytes = master_bytes(optimizer.master_weights);
      terms.push_back(Term{
          .name = master_name + " master weights: " + group,
          .formula = std::to_string(bytes) + " B x ceil(" + count(master_elements) + " / " +
                     count(group_shards) + ") = " + std::to_string(bytes) + " B x " + count(shard) +
                     " (" + sharding + ")",
          .scaling = state_scaling,
          .family = Family::resident,
          .tag = Tag::derived,
          .allocated_at = AllocationPoint::optimizer_init,
          .bytes = bytes * shard,
      });
    }
    for (const bool muon_group : {true, false}) {
      if (muon_group && !muon) continue;
      const auto [elements, roles] = select(counts, [&](TensorRole r) {
        return in_group(r) && muon_covers(optimizer, r) == muon_group;
      });
      if (elements == 0) continue;
      const std::int64_t shard = ceil_div(elements, group_shards);
      const std::int64_t per_element = moments_per_element(muon_group) * moment;
      std::string name;
      if (muon_group) {
        name = "Muon momentum (" + moment_name + "): " + group + " (" + roles + ")";
      } else {
        name = std::string(muon ? "AdamW" : "Adam") + " exp_avg + exp_avg_sq (" + moment_name +
               "): " + group + (muon ? " not updated by Muon (" + roles + ")" : "");
      }
      const std::string per_text =
          muon_group ? std::to_string(moment) + " B"
                     : "(" + std::to_string(moment) + " + " + std::to_string(moment) + ") B";
      terms.push_back(Term{
          .name = name,
          .formula = per_text + " x ceil(" + count(elements) + " / " + count(group_shards) +
                     ") = " + std::to_string(per_element) + " B x " + count(shard) + " (" +
                     sharding + "); created lazily in the first step()",
          .scaling = state_scaling,
          .family = Family::resident,
          .tag = Tag::derived,
          .allocated_at = AllocationPoint::first_step,
          .bytes = per_element * shard,
      });
    }
  }

  if (optimizer.cast_copy != CastCopy::none) {
    const bool muon_only = optimizer.cast_copy == CastCopy::muon_group;
    const auto [elements, roles] =
        select(counts, [&](TensorRole r) { return !muon_only || muon_covers(optimizer, r); });
    if (elements > 0) {
      terms.push_back(Term{
          .name = std::string("bf16 cast copy kept by the optimizer: ") +
                  (muon_only ? "Muon-group tensors" : "every parameter") + " (" + roles + ")",
          .formula = "2 B x " + count(elements) + " parameters on this rank (not sharded)",
          .scaling = parameters_scaling,
          .family = Family::resident,
          .tag = Tag::derived,
          .allocated_at = AllocationPoint::first_step,
          .bytes = 2 * elements,
      });
    }
  }
  return terms;
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
