// model.h — the description of a decoder-only language model, as stagemem needs it.
//
// Purpose: enough of a model's shapes to count every parameter tensor by tensor and, later,
// every activation. A model is a sequence of decoder layers, each an attention kind (GQA/MHA,
// MLA, KDA linear attention) times an MLP kind (dense or MoE), plus embedding, optional learned
// positions, final norm, LM head, DeepSeek-style MTP layers and Block Attention Residuals.
//
// Units: every count is a number of elements (int64). No bytes here: precision is a training
// choice, not a property of the model.
//
// Limitations:
//  - One shape per attention kind and per MLP kind per model (all MLA layers of a model share a
//    shape, and so on). Every model we target (Llama, Mixtral, Qwen3-MoE, DeepSeek-V3, Kimi K2,
//    Kimi Linear, Kimi K3, GPT-2/3) satisfies this.
//  - Encoder-decoder models, vision towers and sliding-window variants are out of scope.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace stagemem {

enum class AttentionKind : std::uint8_t { gqa, mla, kda };
enum class MlpKind : std::uint8_t { dense, moe };
enum class MlpActivation : std::uint8_t { swiglu, gelu };
enum class NormKind : std::uint8_t { rmsnorm, layernorm };  // layernorm has a bias vector too

// Multi-head / grouped-query attention (MHA when kv_heads == heads).
struct GqaShape {
  std::int64_t heads = 0;
  std::int64_t kv_heads = 0;
  std::int64_t head_dim = 0;
  bool qk_norm = false;      // Qwen3: RMSNorm over head_dim on q and on k (head_dim weights each)
  bool qkv_bias = false;     // bias on the q, k, v projections
  bool output_bias = false;  // bias on the output projection
  bool fused_qkv = false;    // GPT-2 style c_attn; the same count, kept for naming only
  friend bool operator==(const GqaShape&, const GqaShape&) = default;
};

// Multi-head latent attention (DeepSeek-V2/V3, Kimi K2, Kimi Linear's full-attention layers).
struct MlaShape {
  std::int64_t heads = 0;
  std::int64_t q_lora_rank = 0;  // 0: q is projected directly from h (Kimi Linear)
  std::int64_t kv_lora_rank = 0;
  std::int64_t qk_nope_head_dim = 0;
  std::int64_t qk_rope_head_dim = 0;
  std::int64_t v_head_dim = 0;
  bool output_gate = false;  // Kimi K3 `mla_use_output_gate`: a sigmoid gate h -> heads*v_head_dim
  friend bool operator==(const MlaShape&, const MlaShape&) = default;
};

// Kimi Delta Attention, the linear-attention layer of Kimi Linear (fla's KimiDeltaAttention).
struct KdaShape {
  std::int64_t heads = 0;
  std::int64_t head_dim = 0;
  std::int64_t short_conv_kernel = 0;  // depthwise conv on q, k and v, no bias
  bool full_rank_gate = false;         // decay gate h -> heads*head_dim instead of f_a/f_b low rank
  friend bool operator==(const KdaShape&, const KdaShape&) = default;
};

struct DenseMlpShape {
  std::int64_t intermediate = 0;
  MlpActivation activation = MlpActivation::swiglu;
  bool bias = false;
  friend bool operator==(const DenseMlpShape&, const DenseMlpShape&) = default;
};

struct MoeShape {
  std::int64_t routed_experts = 0;
  std::int64_t top_k = 0;
  std::int64_t expert_intermediate = 0;  // per routed expert
  std::int64_t shared_experts = 0;       // number of shared experts (fused into one wide MLP)
  std::int64_t shared_intermediate = 0;  // per shared expert
  bool router_correction_bias = false;   // DeepSeek-V3 e_score_correction_bias: one fp32 per expert
  // Latent MoE (Kimi K3): routed experts work in a narrower latent; tokens are projected
  // h -> latent before dispatch and latent -> h after combine. 0 disables.
  std::int64_t latent_hidden = 0;
  bool latent_norm = false;  // RMSNorm over the latent (`latent_moe_use_norm`)
  friend bool operator==(const MoeShape&, const MoeShape&) = default;
};

struct LayerKind {
  AttentionKind attention = AttentionKind::gqa;
  MlpKind mlp = MlpKind::dense;
  friend bool operator==(const LayerKind&, const LayerKind&) = default;
};

// Block Attention Residuals (arXiv 2603.15031). Assumptions, stated once here:
//  - every decoder layer mixes the completed block representations at `sites_per_layer` points
//    (2: before attention and before the MLP, as in the paper's pseudocode);
//  - each mixing site owns a pseudo-query vector (h) and an RMSNorm weight over the keys (h);
//  - one more mixing site produces the model output after the last layer.
struct AttnResShape {
  std::int64_t block_size = 0;  // layers per block; 0 disables Attention Residuals
  std::int64_t sites_per_layer = 2;
  friend bool operator==(const AttnResShape&, const AttnResShape&) = default;
};

struct Model {
  std::string name;
  std::int64_t hidden = 0;
  std::int64_t vocab = 0;
  NormKind norm = NormKind::rmsnorm;
  GqaShape gqa;
  MlaShape mla;
  KdaShape kda;
  DenseMlpShape dense_mlp;
  MoeShape moe;
  std::vector<LayerKind> layers;  // decoder layers in order
  bool tied_embeddings = false;
  std::int64_t learned_positions = 0;  // rows of a learned position table (GPT-2); 0: none
  bool final_norm = true;
  // DeepSeek-style multi-token prediction: each MTP layer owns enorm, hnorm, eh_proj (2h -> h),
  // one decoder layer of `mtp_layer` kind and a final norm; embedding and LM head are shared.
  std::int64_t mtp_layers = 0;
  LayerKind mtp_layer{AttentionKind::mla, MlpKind::moe};
  AttnResShape attn_res;
  friend bool operator==(const Model&, const Model&) = default;
};

}  // namespace stagemem
