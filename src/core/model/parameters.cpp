#include "model/parameters.h"

namespace stagemem {
namespace {

using Tensors = std::vector<Tensor>;

void add_norm(Tensors& out, const Model& model, std::string_view weight_name,
              std::string_view bias_name, std::int64_t width, Component component) {
  out.push_back({weight_name, component, Split::replicated, width});
  if (model.norm == NormKind::layernorm) {
    out.push_back({bias_name, component, Split::replicated, width});
  }
}

void add_gqa(Tensors& out, const Model& model) {
  const GqaShape& a = model.gqa;
  const std::int64_t h = model.hidden;
  const std::int64_t q_width = a.heads * a.head_dim;
  const std::int64_t kv_width = a.kv_heads * a.head_dim;
  const Component c = Component::attention_gqa;
  out.push_back({"self_attn.q_proj.weight", c, Split::tensor_parallel, h * q_width});
  out.push_back({"self_attn.k_proj.weight", c, Split::tensor_parallel, h * kv_width});
  out.push_back({"self_attn.v_proj.weight", c, Split::tensor_parallel, h * kv_width});
  if (a.qkv_bias) {
    out.push_back({"self_attn.q_proj.bias", c, Split::tensor_parallel, q_width});
    out.push_back({"self_attn.k_proj.bias", c, Split::tensor_parallel, kv_width});
    out.push_back({"self_attn.v_proj.bias", c, Split::tensor_parallel, kv_width});
  }
  if (a.qk_norm) {
    out.push_back({"self_attn.q_norm.weight", Component::norms, Split::replicated, a.head_dim});
    out.push_back({"self_attn.k_norm.weight", Component::norms, Split::replicated, a.head_dim});
  }
  out.push_back({"self_attn.o_proj.weight", c, Split::tensor_parallel, q_width * h});
  // A row-parallel layer's bias is added after the reduction, so every TP rank keeps all of it.
  if (a.output_bias) out.push_back({"self_attn.o_proj.bias", c, Split::replicated, h});
}

void add_mla(Tensors& out, const Model& model) {
  const MlaShape& a = model.mla;
  const std::int64_t h = model.hidden;
  const std::int64_t q_head = a.qk_nope_head_dim + a.qk_rope_head_dim;
  const Component c = Component::attention_mla;
  // Megatron-core duplicates the low-rank down-projections on every TP rank.
  if (a.q_lora_rank > 0) {
    out.push_back({"self_attn.q_a_proj.weight", c, Split::replicated, h * a.q_lora_rank});
    out.push_back(
        {"self_attn.q_a_layernorm.weight", Component::norms, Split::replicated, a.q_lora_rank});
    out.push_back(
        {"self_attn.q_b_proj.weight", c, Split::tensor_parallel, a.q_lora_rank * a.heads * q_head});
  } else {
    out.push_back({"self_attn.q_proj.weight", c, Split::tensor_parallel, h * a.heads * q_head});
  }
  out.push_back({"self_attn.kv_a_proj_with_mqa.weight", c, Split::replicated,
                 h * (a.kv_lora_rank + a.qk_rope_head_dim)});
  out.push_back(
      {"self_attn.kv_a_layernorm.weight", Component::norms, Split::replicated, a.kv_lora_rank});
  out.push_back({"self_attn.kv_b_proj.weight", c, Split::tensor_parallel,
                 a.kv_lora_rank * a.heads * (a.qk_nope_head_dim + a.v_head_dim)});
  if (a.output_gate) {
    // Assumption (Kimi K3 `mla_use_output_gate`): one gate projection h -> heads*v_head_dim.
    out.push_back(
        {"self_attn.g_proj.weight", c, Split::tensor_parallel, h * a.heads * a.v_head_dim});
  }
  out.push_back({"self_attn.o_proj.weight", c, Split::tensor_parallel, a.heads * a.v_head_dim * h});
}

void add_kda(Tensors& out, const Model& model) {
  const KdaShape& a = model.kda;
  const std::int64_t h = model.hidden;
  const std::int64_t width = a.heads * a.head_dim;
  const Component c = Component::attention_kda;
  const Split tp = Split::tensor_parallel;
  out.push_back({"self_attn.q_proj.weight", c, tp, h * width});
  out.push_back({"self_attn.k_proj.weight", c, tp, h * width});
  out.push_back({"self_attn.v_proj.weight", c, tp, h * width});
  // Depthwise short convolutions: weight [width, 1, kernel], no bias.
  out.push_back({"self_attn.q_conv1d.weight", c, tp, width * a.short_conv_kernel});
  out.push_back({"self_attn.k_conv1d.weight", c, tp, width * a.short_conv_kernel});
  out.push_back({"self_attn.v_conv1d.weight", c, tp, width * a.short_conv_kernel});
  out.push_back({"self_attn.A_log", c, tp, a.heads});
  if (a.full_rank_gate) {
    out.push_back({"self_attn.f_proj.weight", c, tp, h * width});
  } else {
    out.push_back({"self_attn.f_a_proj.weight", c, Split::replicated, h * a.head_dim});
    out.push_back({"self_attn.f_b_proj.weight", c, tp, a.head_dim * width});
  }
  out.push_back({"self_attn.dt_bias", c, tp, width});
  out.push_back({"self_attn.b_proj.weight", c, tp, h * a.heads});
  out.push_back({"self_attn.g_a_proj.weight", c, Split::replicated, h * a.head_dim});
  out.push_back({"self_attn.g_b_proj.weight", c, tp, a.head_dim * width});
  out.push_back({"self_attn.o_norm.weight", Component::norms, Split::replicated, a.head_dim});
  out.push_back({"self_attn.o_proj.weight", c, tp, width * h});
}

void add_dense_mlp(Tensors& out, const Model& model) {
  const DenseMlpShape& m = model.dense_mlp;
  const std::int64_t h = model.hidden;
  const Component c = Component::dense_mlp;
  const Split tp = Split::tensor_parallel;
  if (m.activation == MlpActivation::swiglu) {
    out.push_back({"mlp.gate_proj.weight", c, tp, h * m.intermediate});
    out.push_back({"mlp.up_proj.weight", c, tp, h * m.intermediate});
    if (m.bias) {
      out.push_back({"mlp.gate_proj.bias", c, tp, m.intermediate});
      out.push_back({"mlp.up_proj.bias", c, tp, m.intermediate});
    }
    out.push_back({"mlp.down_proj.weight", c, tp, m.intermediate * h});
  } else {
    out.push_back({"mlp.fc1.weight", c, tp, h * m.intermediate});
    if (m.bias) out.push_back({"mlp.fc1.bias", c, tp, m.intermediate});
    out.push_back({"mlp.fc2.weight", c, tp, m.intermediate * h});
  }
  if (m.bias) {
    out.push_back({m.activation == MlpActivation::swiglu ? "mlp.down_proj.bias" : "mlp.fc2.bias", c,
                   Split::replicated, h});
  }
}

void add_moe(Tensors& out, const Model& model) {
  const MoeShape& m = model.moe;
  const std::int64_t h = model.hidden;
  const std::int64_t expert_width = m.latent_hidden > 0 ? m.latent_hidden : h;
  // Assumption: the router scores tokens at the full hidden size, before the latent projection.
  out.push_back({"mlp.gate.weight", Component::router, Split::replicated, m.routed_experts * h});
  if (m.router_correction_bias) {
    out.push_back({"mlp.gate.e_score_correction_bias", Component::router, Split::replicated,
                   m.routed_experts});
  }
  if (m.latent_hidden > 0) {
    // Assumption: the latent projections are ordinary (bias-free) linears, duplicated on TP ranks.
    out.push_back({"mlp.latent_down_proj.weight", Component::routed_experts, Split::replicated,
                   h * m.latent_hidden});
    if (m.latent_norm) {
      out.push_back(
          {"mlp.latent_norm.weight", Component::norms, Split::replicated, m.latent_hidden});
    }
    out.push_back({"mlp.latent_up_proj.weight", Component::routed_experts, Split::replicated,
                   m.latent_hidden * h});
  }
  // Routed experts are SwiGLU: gate and up (width -> I) and down (I -> width).
  out.push_back({"mlp.experts.*.{gate,up,down}_proj.weight", Component::routed_experts,
                 Split::expert_parallel,
                 m.routed_experts * 3 * expert_width * m.expert_intermediate});
  if (m.shared_experts > 0) {
    out.push_back({"mlp.shared_experts.{gate,up,down}_proj.weight", Component::shared_experts,
                   Split::tensor_parallel, 3 * h * m.shared_experts * m.shared_intermediate});
  }
}

void add_attn_res_sites(Tensors& out, const Model& model, std::int64_t sites) {
  if (model.attn_res.block_size <= 0 || sites <= 0) return;
  // Per mixing site: a pseudo-query vector (h) and an RMSNorm weight over the keys (h).
  out.push_back(
      {"attn_res.pseudo_query", Component::attn_res, Split::replicated, sites * model.hidden});
  out.push_back(
      {"attn_res.key_norm.weight", Component::attn_res, Split::replicated, sites * model.hidden});
}

}  // namespace

std::string_view component_name(Component component) {
  switch (component) {
    case Component::embedding:
      return "embedding";
    case Component::position_embedding:
      return "position_embedding";
    case Component::attention_gqa:
      return "attention_gqa";
    case Component::attention_mla:
      return "attention_mla";
    case Component::attention_kda:
      return "attention_kda";
    case Component::norms:
      return "norms";
    case Component::dense_mlp:
      return "dense_mlp";
    case Component::routed_experts:
      return "routed_experts";
    case Component::shared_experts:
      return "shared_experts";
    case Component::router:
      return "router";
    case Component::lm_head:
      return "lm_head";
    case Component::mtp:
      return "mtp";
    case Component::attn_res:
      return "attn_res";
  }
  return "unknown";
}

std::vector<Tensor> layer_tensors(const Model& model, LayerKind kind) {
  Tensors out;
  out.reserve(24);
  add_norm(out, model, "input_layernorm.weight", "input_layernorm.bias", model.hidden,
           Component::norms);
  switch (kind.attention) {
    case AttentionKind::gqa:
      add_gqa(out, model);
      break;
    case AttentionKind::mla:
      add_mla(out, model);
      break;
    case AttentionKind::kda:
      add_kda(out, model);
      break;
  }
  add_norm(out, model, "post_attention_layernorm.weight", "post_attention_layernorm.bias",
           model.hidden, Component::norms);
  if (kind.mlp == MlpKind::dense) {
    add_dense_mlp(out, model);
  } else {
    add_moe(out, model);
  }
  add_attn_res_sites(out, model, model.attn_res.sites_per_layer);
  return out;
}

std::vector<Tensor> embedding_tensors(const Model& model) {
  Tensors out;
  out.push_back({"embed_tokens.weight", Component::embedding, Split::tensor_parallel,
                 model.vocab * model.hidden});
  if (model.learned_positions > 0) {
    out.push_back({"embed_positions.weight", Component::position_embedding, Split::replicated,
                   model.learned_positions * model.hidden});
  }
  return out;
}

std::vector<Tensor> head_tensors(const Model& model) {
  Tensors out;
  if (model.final_norm) {
    add_norm(out, model, "norm.weight", "norm.bias", model.hidden, Component::norms);
  }
  add_attn_res_sites(out, model, 1);  // the output mix after the last layer
  if (!model.tied_embeddings) {
    out.push_back(
        {"lm_head.weight", Component::lm_head, Split::tensor_parallel, model.vocab * model.hidden});
  }
  return out;
}

std::vector<Tensor> mtp_tensors(const Model& model) {
  return mtp_tensors(model, model.mtp_layers);
}

std::vector<Tensor> mtp_tensors(const Model& model, std::int64_t mtp_layers) {
  Tensors out;
  const std::int64_t h = model.hidden;
  for (std::int64_t i = 0; i < mtp_layers; ++i) {
    out.push_back({"mtp.enorm.weight", Component::mtp, Split::replicated, h});
    out.push_back({"mtp.hnorm.weight", Component::mtp, Split::replicated, h});
    out.push_back({"mtp.eh_proj.weight", Component::mtp, Split::tensor_parallel, 2 * h * h});
    for (Tensor t : layer_tensors(model, model.mtp_layer)) {
      t.component = Component::mtp;
      out.push_back(t);
    }
    out.push_back({"mtp.shared_head.norm.weight", Component::mtp, Split::replicated, h});
  }
  return out;
}

std::string_view tensor_role_name(TensorRole role) {
  switch (role) {
    case TensorRole::hidden_matrix:
      return "hidden matrices";
    case TensorRole::expert_matrix:
      return "routed-expert matrices";
    case TensorRole::router_matrix:
      return "router matrices";
    case TensorRole::embedding_or_head:
      return "embedding and head";
    case TensorRole::vector:
      return "norms, biases and vectors";
    case TensorRole::convolution:
      return "convolution kernels";
  }
  return "unknown";
}

TensorRole tensor_role(const Tensor& tensor) {
  switch (tensor.component) {
    case Component::embedding:
    case Component::position_embedding:
    case Component::lm_head:
      return TensorRole::embedding_or_head;
    case Component::norms:
    case Component::attn_res:
      return TensorRole::vector;
    default:
      break;
  }
  const std::string_view name = tensor.name;
  // Norms inside MTP layers keep their layer names; every norm weight name contains "norm".
  if (name.find("norm") != std::string_view::npos || name.ends_with(".bias") ||
      name.ends_with("A_log") || name.ends_with("dt_bias") ||
      name.ends_with("e_score_correction_bias") || name.starts_with("attn_res.")) {
    return TensorRole::vector;
  }
  if (name.find("conv1d") != std::string_view::npos) return TensorRole::convolution;
  if (name == "mlp.gate.weight") return TensorRole::router_matrix;
  if (tensor.split == Split::expert_parallel) return TensorRole::expert_matrix;
  return TensorRole::hidden_matrix;
}

std::int64_t weight_tensor_count(const Tensor& tensor, const Model& model) {
  if (tensor.split == Split::expert_parallel) return 3 * model.moe.routed_experts;
  return 1;
}

std::int64_t ParameterCounts::total() const {
  std::int64_t sum = 0;
  for (std::int64_t n : by_component) sum += n;
  return sum;
}

ParameterCounts& ParameterCounts::operator+=(const ParameterCounts& other) {
  for (int i = 0; i < component_count; ++i) by_component[i] += other.by_component[i];
  return *this;
}

ParameterCounts count_tensors(const std::vector<Tensor>& tensors) {
  ParameterCounts counts;
  for (const Tensor& t : tensors) counts.add(t.component, t.elements);
  return counts;
}

ParameterCounts model_parameters(const Model& model) {
  ParameterCounts counts = count_tensors(embedding_tensors(model));
  // A layer's tensors depend on its kind only: count each kind once, times its layers.
  std::array<std::int64_t, 6> layers_of_kind{};
  for (const LayerKind& kind : model.layers) {
    ++layers_of_kind[static_cast<std::size_t>(static_cast<int>(kind.attention) * 2 +
                                              static_cast<int>(kind.mlp))];
  }
  for (std::size_t slot = 0; slot < layers_of_kind.size(); ++slot) {
    if (layers_of_kind[slot] == 0) continue;
    const LayerKind kind{static_cast<AttentionKind>(slot / 2), static_cast<MlpKind>(slot % 2)};
    const ParameterCounts one = count_tensors(layer_tensors(model, kind));
    for (int c = 0; c < component_count; ++c) {
      counts.by_component[static_cast<std::size_t>(c)] +=
          one.by_component[static_cast<std::size_t>(c)] * layers_of_kind[slot];
    }
  }
  counts += count_tensors(head_tensors(model));
  counts += count_tensors(mtp_tensors(model));
  return counts;
}

std::int64_t total_parameters(const Model& model) {
  return model_parameters(model).total();
}

std::int64_t total_parameters_without_mtp(const Model& model) {
  return total_parameters(model) - count_tensors(mtp_tensors(model)).total();
}

}  // namespace stagemem
