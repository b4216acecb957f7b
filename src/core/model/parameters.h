// parameters.h — the exact parameter oracle: every tensor a model creates, with its shape-derived
// element count, the component it belongs to and how it is split across ranks.
//
// Purpose: parameter totals that equal the published figures to the unit, a per-component
// breakdown, and per-rank shards under tensor and expert parallelism. The tensor list follows the
// official modeling code (Hugging Face / fla) and Megatron-core's sharding conventions.
//
// Units: elements (int64). Bytes are decided later by the precision of each parameter group.
//
// Limitations:
//  - Sharding is per tensor along one axis; a tensor split by TP is assumed evenly divisible
//    (the layout validation guarantees it: TP divides heads, KV heads and widths).
//  - Vocabulary padding applies to the embedding and LM head only (Megatron's rule).
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include "model/model.h"

namespace stagemem {

enum class Component : std::uint8_t {
  embedding,
  position_embedding,
  attention_gqa,
  attention_mla,
  attention_kda,
  norms,
  dense_mlp,
  routed_experts,
  shared_experts,
  router,
  lm_head,
  mtp,
  attn_res,
};
inline constexpr int component_count = 13;
std::string_view component_name(Component component);

// How a tensor is laid out across ranks of one pipeline stage.
enum class Split : std::uint8_t {
  replicated,       // every TP rank holds all of it (norm weights, routers, MLA down-projections)
  tensor_parallel,  // split evenly over TP (column/row-parallel linears, vocab-parallel embedding)
  expert_parallel,  // routed experts: experts over EP, each expert's matrices over ETP
};

struct Tensor {
  std::string_view name;  // as the modeling code names it, e.g. "self_attn.q_proj.weight"
  Component component;
  Split split;
  std::int64_t elements;  // logical (unpadded, unsharded) count
};

// Every parameter tensor of one decoder layer of the given kind.
std::vector<Tensor> layer_tensors(const Model& model, LayerKind kind);
// Tensors outside the decoder layers: embedding, positions, final norm, LM head, MTP, AttnRes
// output.
std::vector<Tensor> embedding_tensors(const Model& model);
std::vector<Tensor> head_tensors(const Model& model);  // final norm, LM head (untied), output mix
std::vector<Tensor> mtp_tensors(const Model& model);   // all MTP layers, charged to Component::mtp
std::vector<Tensor> mtp_tensors(const Model& model, std::int64_t mtp_layers);

// What kind of tensor a parameter is, as training choices key on it: Muon updates 2-D hidden
// matrices, low-precision (fp8, MX) storage applies to linear-layer matrices only, and everything
// else (embedding, head, norms, biases, vectors, convolution kernels) keeps the base precision.
enum class TensorRole : std::uint8_t {
  hidden_matrix,  // 2-D weight of a linear layer inside the network (attention, MLP, MTP eh_proj)
  expert_matrix,  // a stack of routed-expert 2-D weights (gate, up, down per expert)
  router_matrix,  // the MoE router's 2-D weight
  embedding_or_head,  // vocabulary matrices and learned position tables
  vector,             // norm weights and biases, linear biases, A_log, dt_bias, AttnRes vectors
  convolution,        // depthwise short-convolution kernels [width, 1, kernel] (3-D)
};
inline constexpr int tensor_role_count = 6;
std::string_view tensor_role_name(TensorRole role);
// Classified from the component and the name the modeling code gives the tensor.
TensorRole tensor_role(const Tensor& tensor);
// Separate 2-D weight tensors a Tensor entry stands for: 3 per routed expert for an expert stack
// (gate, up, down), 1 otherwise. Used for per-tensor fp8 scales.
std::int64_t weight_tensor_count(const Tensor& tensor, const Model& model);

struct ParameterCounts {
  std::array<std::int64_t, component_count> by_component{};
  std::int64_t total() const;
  std::int64_t operator[](Component component) const {
    return by_component[static_cast<int>(component)];
  }
  void add(Component component, std::int64_t elements) {
    by_component[static_cast<int>(component)] += elements;
  }
  ParameterCounts& operator+=(const ParameterCounts& other);
};

ParameterCounts count_tensors(const std::vector<Tensor>& tensors);
// Logical parameters of the whole model (MTP included; `without_mtp` for the main model only).
ParameterCounts model_parameters(const Model& model);
std::int64_t total_parameters(const Model& model);
std::int64_t total_parameters_without_mtp(const Model& model);

}  // namespace stagemem
