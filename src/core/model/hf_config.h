// hf_config.h — reads a Hugging Face `config.json` into a stagemem Model.
//
// Purpose: count a model's parameters exactly from the file its authors publish. The families
// and the modeling code each follows:
//   llama       LlamaForCausalLM (attention_bias, mlp_bias, head_dim, tied embeddings)
//   mixtral     MixtralForCausalLM (every layer MoE, router without bias)
//   qwen3_moe   Qwen3MoeForCausalLM (q/k RMSNorm per head; decoder_sparse_step, mlp_only_layers)
//   deepseek_v3, kimi_k2  DeepseekV3ForCausalLM (MLA, first_k_dense_replace, moe_layer_freq,
//               shared experts, noaux_tc score-correction bias, num_nextn_predict_layers MTP)
//   kimi_linear KimiLinearForCausalLM (KDA + MLA per linear_attn_config, 1-based layer ids;
//               plus the Kimi K3 extensions: latent MoE, full-rank KDA gate, MLA output gate,
//               Attention Residuals)
//   kimi_k3     the multimodal wrapper: the language model is `text_config` (kimi_linear); the
//               vision tower is not counted
//   gpt2        GPT2LMHeadModel (learned positions, LayerNorm with bias, biases everywhere, GeLU
//               MLP of n_inner or 4h, tied embeddings)
// Units: counts of elements. No I/O: the caller passes the file's text.
// Limitations: fields that do not change a parameter shape (rope, eps, dtypes, routing
// hyper-parameters, quantization) are ignored. Every problem is reported as an error naming the
// field as `hf.<key>` (`hf.text_config.<key>` inside the wrapper) with the allowed range.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>
#include <vector>

#include "base/diagnostics.h"
#include "model/model.h"

namespace stagemem {

// The most text import_hf_config reads (4 MiB: real configs are a few KB); front ends read files
// up to it.
inline constexpr std::size_t max_hf_config_bytes = std::size_t{4} << 20;

struct HfImport {
  std::optional<Model> model;  // present when diagnostics.ok()
  Diagnostics diagnostics;
};

// `file_name`: where the text came from (a file's name, "" for a paste), for the model's name
// when the config has no `_name_or_path`: the name is the last part of `_name_or_path`, else the
// file name without ".json" (not a bare "config.json"), else `model_type`.
HfImport import_hf_config(std::string_view json_text, std::string_view file_name = {});

std::vector<std::string_view> supported_hf_model_types();

}  // namespace stagemem
