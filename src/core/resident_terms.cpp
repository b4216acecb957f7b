#include "resident_terms.h"

#include <array>

#include "term_info.h"

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

void add_weight_terms(std::vector<Term>& terms, const RoleCounts& counts,
                      const Precision& precision) {
  // One term per storage dtype, so the common all-bf16 case is a single "weights (bf16)" row.
  std::array<WeightDtype, tensor_role_count> dtypes{};
  std::size_t dtype_count = 0;
  for (TensorRole role : all_roles) {
    if (elements_of(counts, role) == 0) continue;
    const WeightDtype dtype = storage_dtype(precision, role);
    bool seen = false;
    for (std::size_t i = 0; i < dtype_count; ++i) seen = seen || dtypes[i] == dtype;
    if (!seen) dtypes[dtype_count++] = dtype;
  }
  for (std::size_t d = 0; d < dtype_count; ++d) {
    const WeightDtype dtype = dtypes[d];
    const auto [elements, roles] =
        select(counts, [&](TensorRole r) { return storage_dtype(precision, r) == dtype; });
    std::int64_t tensors = 0;
    for (TensorRole role : all_roles) {
      if (storage_dtype(precision, role) == dtype) tensors += counts.tensors(role);
    }
    const double value_bytes = weight_value_bytes(dtype);
    const std::int64_t named_roles = dtype_count == 1 ? 0 : roles;
    const auto dtype_id = static_cast<std::int64_t>(dtype);
    terms.push_back(resident_term(term_weights, AllocationPoint::model_init,
                                  dtype == WeightDtype::mxfp4
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
  append_resident_terms(counts, precision, optimizer, shards, terms);
  return terms;
}

void append_resident_terms(const RoleCounts& counts, const Precision& precision,
                           const OptimizerConfig& optimizer, const StateShards& shards,
                           std::vector<Term>& terms) {
  add_weight_terms(terms, counts, precision);

  const std::int64_t all = counts.total();
  const std::int64_t grad = grad_bytes(precision.grads);
  terms.push_back(
      resident_term(term_main_gradient, AllocationPoint::model_init, grad * all,
                    Formula().number(static_cast<std::int64_t>(precision.grads)).number(all)));

  const bool distributed = is_distributed(optimizer.kind);
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
    if (master_elements > 0) {
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
