#include "model/presets.h"

#include <array>

#include "model/hf_config.h"

namespace stagemem {
namespace {

// Each config is the file from shared/reference/hf-configs, copied verbatim.
//
// Assumptions where the config does not fix a tensor's shape (applied by the importer, stated
// again here because they matter for kimi-k3, the users' own model):
//  - MLA output gate (`mla_use_output_gate`): one bias-free projection h -> heads x v_head_dim,
//    column-parallel under TP (a per-channel sigmoid gate on the attention output before o_proj).
//  - Latent MoE (`routed_expert_hidden_size` 3584 < hidden 7168): the router scores tokens at the
//    full hidden size before the down-projection; one bias-free h -> latent projection before
//    dispatch, one latent -> h after combine, an RMSNorm weight over the latent when
//    `latent_moe_use_norm`; the projections are duplicated on every TP rank. Routed experts are
//    gated (gate, up: latent -> I; down: I -> latent), matching the checkpoint's w1/w3/w2 shapes;
//    shared experts work at the full hidden size.
//  - KDA full-rank gate (`use_full_rank_gate`): f_proj h -> heads x head_dim replaces f_a/f_b; the
//    output gate keeps its low-rank g_a/g_b pair.
//  - `hidden_act` "situ" is a gated activation (gate and up projections, as with SwiGLU).
//  - Attention Residuals (`attn_res_block_size` 12): per decoder layer two mixing sites, each
//    with a pseudo-query (h) and a key RMSNorm weight (h), plus one output site (model.h).
//  - Kimi K3's vision tower (`vision_config`) is not counted: stagemem models the language model.
struct PresetSource {
  std::string_view name;
  std::string_view config;
};
constexpr std::string_view llama_3_1_8b_config = R"json({
  "architectures": [
    "LlamaForCausalLM"
  ],
  "model_type": "llama",
  "hidden_size": 4096,
  "intermediate_size": 14336,
  "num_hidden_layers": 32,
  "num_attention_heads": 32,
  "num_key_value_heads": 8,
  "hidden_act": "silu",
  "vocab_size": 128256,
  "tie_word_embeddings": false,
  "attention_bias": false,
  "mlp_bias": false,
  "max_position_embeddings": 131072,
  "rms_norm_eps": 1e-05,
  "rope_theta": 500000.0,
  "rope_scaling": {
    "factor": 8.0,
    "low_freq_factor": 1.0,
    "high_freq_factor": 4.0,
    "original_max_position_embeddings": 8192,
    "rope_type": "llama3"
  },
  "bos_token_id": 128000,
  "eos_token_id": 128001,
  "torch_dtype": "bfloat16"
})json";
constexpr std::string_view llama_3_1_70b_config = R"json({
  "architectures": [
    "LlamaForCausalLM"
  ],
  "model_type": "llama",
  "hidden_size": 8192,
  "intermediate_size": 28672,
  "num_hidden_layers": 80,
  "num_attention_heads": 64,
  "num_key_value_heads": 8,
  "hidden_act": "silu",
  "vocab_size": 128256,
  "tie_word_embeddings": false,
  "attention_bias": false,
  "mlp_bias": false,
  "max_position_embeddings": 131072,
  "rms_norm_eps": 1e-05,
  "rope_theta": 500000.0,
  "rope_scaling": {
    "factor": 8.0,
    "low_freq_factor": 1.0,
    "high_freq_factor": 4.0,
    "original_max_position_embeddings": 8192,
    "rope_type": "llama3"
  },
  "bos_token_id": 128000,
  "eos_token_id": 128001,
  "torch_dtype": "bfloat16"
})json";
constexpr std::string_view llama_3_1_405b_config = R"json({
  "architectures": [
    "LlamaForCausalLM"
  ],
  "model_type": "llama",
  "hidden_size": 16384,
  "intermediate_size": 53248,
  "num_hidden_layers": 126,
  "num_attention_heads": 128,
  "num_key_value_heads": 8,
  "hidden_act": "silu",
  "vocab_size": 128256,
  "tie_word_embeddings": false,
  "attention_bias": false,
  "mlp_bias": false,
  "max_position_embeddings": 131072,
  "rms_norm_eps": 1e-05,
  "rope_theta": 500000.0,
  "rope_scaling": {
    "factor": 8.0,
    "low_freq_factor": 1.0,
    "high_freq_factor": 4.0,
    "original_max_position_embeddings": 8192,
    "rope_type": "llama3"
  },
  "bos_token_id": 128000,
  "eos_token_id": 128001,
  "torch_dtype": "bfloat16"
})json";
constexpr std::string_view mixtral_8x7b_config = R"json({
  "architectures": [
    "MixtralForCausalLM"
  ],
  "model_type": "mixtral",
  "hidden_size": 4096,
  "intermediate_size": 14336,
  "num_hidden_layers": 32,
  "num_attention_heads": 32,
  "num_key_value_heads": 8,
  "num_local_experts": 8,
  "num_experts_per_tok": 2,
  "hidden_act": "silu",
  "vocab_size": 32000,
  "tie_word_embeddings": false,
  "max_position_embeddings": 32768,
  "rms_norm_eps": 1e-05,
  "rope_theta": 1000000.0,
  "sliding_window": null,
  "torch_dtype": "bfloat16"
})json";
constexpr std::string_view qwen3_30b_a3b_config = R"json({
  "architectures": [
    "Qwen3MoeForCausalLM"
  ],
  "model_type": "qwen3_moe",
  "hidden_size": 2048,
  "intermediate_size": 6144,
  "moe_intermediate_size": 768,
  "num_hidden_layers": 48,
  "num_attention_heads": 32,
  "num_key_value_heads": 4,
  "head_dim": 128,
  "num_experts": 128,
  "num_experts_per_tok": 8,
  "decoder_sparse_step": 1,
  "mlp_only_layers": [],
  "norm_topk_prob": true,
  "hidden_act": "silu",
  "vocab_size": 151936,
  "tie_word_embeddings": false,
  "attention_bias": false,
  "max_position_embeddings": 40960,
  "rms_norm_eps": 1e-06,
  "rope_theta": 1000000.0,
  "torch_dtype": "bfloat16"
})json";
constexpr std::string_view qwen3_235b_a22b_config = R"json({
  "architectures": [
    "Qwen3MoeForCausalLM"
  ],
  "model_type": "qwen3_moe",
  "hidden_size": 4096,
  "intermediate_size": 12288,
  "moe_intermediate_size": 1536,
  "num_hidden_layers": 94,
  "num_attention_heads": 64,
  "num_key_value_heads": 4,
  "head_dim": 128,
  "num_experts": 128,
  "num_experts_per_tok": 8,
  "decoder_sparse_step": 1,
  "mlp_only_layers": [],
  "norm_topk_prob": true,
  "hidden_act": "silu",
  "vocab_size": 151936,
  "tie_word_embeddings": false,
  "attention_bias": false,
  "max_position_embeddings": 40960,
  "rms_norm_eps": 1e-06,
  "rope_theta": 1000000.0,
  "torch_dtype": "bfloat16"
})json";
constexpr std::string_view deepseek_v3_config = R"json({
  "architectures": [
    "DeepseekV3ForCausalLM"
  ],
  "model_type": "deepseek_v3",
  "hidden_size": 7168,
  "intermediate_size": 18432,
  "moe_intermediate_size": 2048,
  "num_hidden_layers": 61,
  "num_attention_heads": 128,
  "num_key_value_heads": 128,
  "n_shared_experts": 1,
  "n_routed_experts": 256,
  "routed_scaling_factor": 2.5,
  "kv_lora_rank": 512,
  "q_lora_rank": 1536,
  "qk_rope_head_dim": 64,
  "v_head_dim": 128,
  "qk_nope_head_dim": 128,
  "topk_method": "noaux_tc",
  "n_group": 8,
  "topk_group": 4,
  "num_experts_per_tok": 8,
  "moe_layer_freq": 1,
  "first_k_dense_replace": 3,
  "norm_topk_prob": true,
  "scoring_func": "sigmoid",
  "hidden_act": "silu",
  "vocab_size": 129280,
  "num_nextn_predict_layers": 1,
  "tie_word_embeddings": false,
  "attention_bias": false,
  "max_position_embeddings": 163840,
  "rms_norm_eps": 1e-06,
  "rope_theta": 10000,
  "torch_dtype": "bfloat16"
})json";
constexpr std::string_view kimi_k2_config = R"json({
  "architectures": [
    "DeepseekV3ForCausalLM"
  ],
  "model_type": "kimi_k2",
  "hidden_size": 7168,
  "intermediate_size": 18432,
  "moe_intermediate_size": 2048,
  "num_hidden_layers": 61,
  "num_attention_heads": 64,
  "num_key_value_heads": 64,
  "n_shared_experts": 1,
  "n_routed_experts": 384,
  "routed_scaling_factor": 2.827,
  "kv_lora_rank": 512,
  "q_lora_rank": 1536,
  "qk_rope_head_dim": 64,
  "v_head_dim": 128,
  "qk_nope_head_dim": 128,
  "topk_method": "noaux_tc",
  "n_group": 1,
  "topk_group": 1,
  "num_experts_per_tok": 8,
  "moe_layer_freq": 1,
  "first_k_dense_replace": 1,
  "norm_topk_prob": true,
  "scoring_func": "sigmoid",
  "hidden_act": "silu",
  "vocab_size": 163840,
  "num_nextn_predict_layers": 0,
  "tie_word_embeddings": false,
  "attention_bias": false,
  "max_position_embeddings": 131072,
  "rms_norm_eps": 1e-06,
  "rope_theta": 50000.0,
  "torch_dtype": "bfloat16"
})json";
constexpr std::string_view kimi_linear_48b_a3b_config = R"json({
  "architectures": [
    "KimiLinearForCausalLM"
  ],
  "model_type": "kimi_linear",
  "hidden_size": 2304,
  "intermediate_size": 9216,
  "moe_intermediate_size": 1024,
  "num_hidden_layers": 27,
  "num_attention_heads": 32,
  "num_key_value_heads": 32,
  "kv_lora_rank": 512,
  "q_lora_rank": null,
  "qk_nope_head_dim": 128,
  "qk_rope_head_dim": 64,
  "v_head_dim": 128,
  "mla_use_nope": true,
  "num_experts": 256,
  "num_shared_experts": 1,
  "num_experts_per_token": 8,
  "first_k_dense_replace": 1,
  "moe_layer_freq": 1,
  "moe_router_activation_func": "sigmoid",
  "routed_scaling_factor": 2.446,
  "use_grouped_topk": true,
  "num_expert_group": 1,
  "topk_group": 1,
  "hidden_act": "silu",
  "vocab_size": 163840,
  "tie_word_embeddings": false,
  "rms_norm_eps": 1e-05,
  "max_position_embeddings": 1048576,
  "linear_attn_config": {
    "full_attn_layers": [
      4,
      8,
      12,
      16,
      20,
      24,
      27
    ],
    "kda_layers": [
      1,
      2,
      3,
      5,
      6,
      7,
      9,
      10,
      11,
      13,
      14,
      15,
      17,
      18,
      19,
      21,
      22,
      23,
      25,
      26
    ],
    "num_heads": 32,
    "head_dim": 128,
    "short_conv_kernel_size": 4
  },
  "torch_dtype": "bfloat16"
})json";
constexpr std::string_view kimi_k3_config = R"json({
  "architectures": [
    "KimiK3ForConditionalGeneration"
  ],
  "model_type": "kimi_k3",
  "bos_token_id": 163584,
  "eos_token_id": 163586,
  "pad_token_id": 163839,
  "media_placeholder_token_id": 163605,
  "tie_word_embeddings": false,
  "text_config": {
    "model_type": "kimi_linear",
    "hidden_size": 7168,
    "num_hidden_layers": 93,
    "vocab_size": 163840,
    "max_position_embeddings": 1048576,
    "rms_norm_eps": 1e-05,
    "tie_word_embeddings": false,
    "eos_token_id": 163586,
    "dtype": "bfloat16",
    "hidden_act": "situ",
    "activation_situ_beta": 4.0,
    "activation_situ_linear_beta": 25.0,
    "intermediate_size": 33792,
    "first_k_dense_replace": 1,
    "moe_layer_freq": 1,
    "num_attention_heads": 96,
    "num_key_value_heads": 96,
    "q_lora_rank": 1536,
    "kv_lora_rank": 512,
    "qk_nope_head_dim": 128,
    "qk_rope_head_dim": 64,
    "v_head_dim": 128,
    "mla_use_nope": true,
    "mla_use_output_gate": true,
    "linear_attn_config": {
      "full_attn_layers": [
        4,
        8,
        12,
        16,
        20,
        24,
        28,
        32,
        36,
        40,
        44,
        48,
        52,
        56,
        60,
        64,
        68,
        72,
        76,
        80,
        84,
        88,
        92,
        93
      ],
      "kda_layers": [
        1,
        2,
        3,
        5,
        6,
        7,
        9,
        10,
        11,
        13,
        14,
        15,
        17,
        18,
        19,
        21,
        22,
        23,
        25,
        26,
        27,
        29,
        30,
        31,
        33,
        34,
        35,
        37,
        38,
        39,
        41,
        42,
        43,
        45,
        46,
        47,
        49,
        50,
        51,
        53,
        54,
        55,
        57,
        58,
        59,
        61,
        62,
        63,
        65,
        66,
        67,
        69,
        70,
        71,
        73,
        74,
        75,
        77,
        78,
        79,
        81,
        82,
        83,
        85,
        86,
        87,
        89,
        90,
        91
      ],
      "num_heads": 96,
      "head_dim": 128,
      "short_conv_kernel_size": 4,
      "use_full_rank_gate": true,
      "gate_lower_bound": -5.0
    },
    "attn_res_block_size": 12,
    "num_experts": 896,
    "num_experts_per_token": 16,
    "num_shared_experts": 2,
    "moe_intermediate_size": 3072,
    "routed_expert_hidden_size": 3584,
    "latent_moe_use_norm": true,
    "moe_router_activation_func": "sigmoid",
    "topk_method": "noaux_tc",
    "use_grouped_topk": true,
    "num_expert_group": 1,
    "topk_group": 1,
    "moe_renormalize": true,
    "routed_scaling_factor": 1.0,
    "num_nextn_predict_layers": 0,
    "quantization_config": {
      "quant_method": "compressed-tensors",
      "format": "mxfp4-pack-quantized",
      "config_groups": {
        "group_0": {
          "format": "mxfp4-pack-quantized",
          "targets": [
            "Linear"
          ],
          "weights": {
            "num_bits": 4,
            "group_size": 32
          }
        }
      },
      "ignore": [
        "re:.*shared_experts.*"
      ]
    }
  },
  "vision_config": {
    "patch_size": 14,
    "vt_hidden_size": 1152
  }
})json";
constexpr std::string_view gpt3_175b_config = R"json({
  "architectures": [
    "GPT2LMHeadModel"
  ],
  "model_type": "gpt2",
  "n_embd": 12288,
  "n_layer": 96,
  "n_head": 96,
  "n_positions": 2048,
  "n_inner": null,
  "vocab_size": 50257,
  "activation_function": "gelu_new",
  "tie_word_embeddings": true,
  "layer_norm_epsilon": 1e-05
})json";
constexpr std::array<PresetSource, 11> presets = {{
    {"llama-3.1-8b", llama_3_1_8b_config},
    {"llama-3.1-70b", llama_3_1_70b_config},
    {"llama-3.1-405b", llama_3_1_405b_config},
    {"mixtral-8x7b", mixtral_8x7b_config},
    {"qwen3-30b-a3b", qwen3_30b_a3b_config},
    {"qwen3-235b-a22b", qwen3_235b_a22b_config},
    {"deepseek-v3", deepseek_v3_config},
    {"kimi-k2", kimi_k2_config},
    {"kimi-linear-48b-a3b", kimi_linear_48b_a3b_config},
    {"kimi-k3", kimi_k3_config},
    {"gpt3-175b", gpt3_175b_config},
}};

}  // namespace

std::vector<std::string_view> preset_names() {
  std::vector<std::string_view> out;
  for (const PresetSource& p : presets) out.push_back(p.name);
  return out;
}

std::optional<std::string_view> preset_hf_config(std::string_view name) {
  for (const PresetSource& p : presets) {
    if (p.name == name) return p.config;
  }
  return std::nullopt;
}

std::optional<Model> find_preset(std::string_view name) {
  const std::optional<std::string_view> config = preset_hf_config(name);
  if (!config) return std::nullopt;
  HfImport imported = import_hf_config(*config);
  if (!imported.model) return std::nullopt;  // cannot happen: tests import every preset
  imported.model->name = std::string(name);
  return imported.model;
}

}  // namespace stagemem
