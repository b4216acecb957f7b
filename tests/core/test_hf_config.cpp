// Tests of hf_config.h: families, field rules, and a corpus of bad configs that must each produce
// an error naming the field (never a crash, never a silent default).
#include <string>

#include "catch.h"
#include "model/hf_config.h"
#include "model/model_text.h"
#include "model/parameters.h"
#include "model/presets.h"

using namespace stagemem;

namespace {

constexpr std::string_view tiny_llama = R"({"model_type": "llama", "hidden_size": 64,
  "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
  "num_key_value_heads": 2, "vocab_size": 1000})";

bool has_error(const Diagnostics& d, std::string_view field) {
  for (const auto& e : d.errors) {
    if (e.field == field) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("A minimal llama config imports with HF defaults") {
  const HfImport r = import_hf_config(tiny_llama);
  REQUIRE(r.diagnostics.ok());
  REQUIRE(r.model.has_value());
  CHECK(r.model->gqa.head_dim == 16);  // hidden_size // num_attention_heads
  CHECK(!r.model->tied_embeddings);
  // Per layer: q,o 2 x 64 x 64 + k,v 2 x 64 x 32 + MLP 3 x 64 x 128 + norms 128 = 36,992;
  // embedding + head 2 x 1000 x 64; final norm 64.
  CHECK(total_parameters(*r.model) == 2 * 36'992 + 128'000 + 64);
}

TEST_CASE("Llama attention_bias adds q, k, v and o biases - mlp_bias three more") {
  const std::string with_bias =
      std::string(tiny_llama).replace(1, 0, R"("attention_bias": true, "mlp_bias": true, )");
  const HfImport r = import_hf_config(with_bias);
  REQUIRE(r.model.has_value());
  // Per layer: q 64 + k,v 2 x 32 + o 64 + gate,up 2 x 128 + down 64.
  CHECK(total_parameters(*r.model) == 2 * (36'992 + 64 + 64 + 64 + 256 + 64) + 128'000 + 64);
}

TEST_CASE("Qwen3 MoE: mlp_only_layers and decoder_sparse_step pick dense layers") {
  const HfImport r = import_hf_config(R"({"model_type": "qwen3_moe", "hidden_size": 64,
    "intermediate_size": 256, "moe_intermediate_size": 32, "num_hidden_layers": 4,
    "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "num_experts": 8,
    "num_experts_per_tok": 2, "decoder_sparse_step": 2, "mlp_only_layers": [3],
    "vocab_size": 100})");
  REQUIRE(r.diagnostics.ok());
  const Model& m = *r.model;
  // Sparse when (i + 1) % 2 == 0 and i not in mlp_only_layers: only layer 1.
  CHECK(m.layers[0].mlp == MlpKind::dense);
  CHECK(m.layers[1].mlp == MlpKind::moe);
  CHECK(m.layers[2].mlp == MlpKind::dense);
  CHECK(m.layers[3].mlp == MlpKind::dense);
  CHECK(m.gqa.qk_norm);
}

TEST_CASE("DeepSeek-V3: first_k_dense_replace, moe_layer_freq, MTP and the correction bias") {
  const Model m = *find_preset("deepseek-v3");
  for (std::size_t i = 0; i < m.layers.size(); ++i) {
    CHECK(m.layers[i].mlp == (i < 3 ? MlpKind::dense : MlpKind::moe));
    CHECK(m.layers[i].attention == AttentionKind::mla);
  }
  CHECK(m.moe.router_correction_bias);
  CHECK(m.mtp_layer == LayerKind{AttentionKind::mla, MlpKind::moe});
  // topk_method other than noaux_tc: no bias.
  std::string greedy(*preset_hf_config("deepseek-v3"));
  greedy.replace(greedy.find("\"noaux_tc\""), 10, "\"greedy\"");
  const HfImport r = import_hf_config(greedy);
  REQUIRE(r.model.has_value());
  CHECK(!r.model->moe.router_correction_bias);
  CHECK(total_parameters_without_mtp(*r.model) == 671'026'419'200LL - 58 * 256);
}

TEST_CASE("Kimi Linear layer ids are 1-based") {
  const Model m = *find_preset("kimi-linear-48b-a3b");
  CHECK(m.layers[0].attention == AttentionKind::kda);   // id 1
  CHECK(m.layers[3].attention == AttentionKind::mla);   // id 4
  CHECK(m.layers[26].attention == AttentionKind::mla);  // id 27
  CHECK(m.mla.q_lora_rank == 0);
  CHECK(m.layers[0].mlp == MlpKind::dense);
  CHECK(m.layers[1].mlp == MlpKind::moe);
}

TEST_CASE("Kimi K3 wrapper reads text_config and ignores the vision tower") {
  const Model m = *find_preset("kimi-k3");
  std::int64_t mla = 0, kda = 0;
  for (const LayerKind& k : m.layers) (k.attention == AttentionKind::mla ? mla : kda) += 1;
  CHECK(mla == 24);
  CHECK(kda == 69);
  CHECK(m.layers[92].attention == AttentionKind::mla);  // ids 92 and 93 are both full attention
  CHECK(m.moe.latent_hidden == 3584);
  CHECK(m.moe.latent_norm);
  CHECK(m.kda.full_rank_gate);
  CHECK(m.mla.output_gate);
  CHECK(m.moe.shared_experts == 2);
  CHECK(m.moe.routed_experts == 896);
}

TEST_CASE("GPT-2: n_inner null is 4h, biases and LayerNorm everywhere, tied") {
  const HfImport r = import_hf_config(R"({"model_type": "gpt2", "n_embd": 8, "n_layer": 1,
    "n_head": 2, "n_positions": 16, "n_inner": null, "vocab_size": 10})");
  REQUIRE(r.diagnostics.ok());
  // Layer: ln_1 16, c_attn 8 x 24 + 24, c_proj 64 + 8, ln_2 16, c_fc 8 x 32 + 32, c_proj 256 + 8
  // = 12 x 64 + 13 x 8 + ... = 216 + 72 + 16 + 16 + 288 + 264 = 872. wte 80, wpe 128, ln_f 16.
  CHECK(total_parameters(*r.model) == 872 + 80 + 128 + 16);
  CHECK(r.model->tied_embeddings);
  CHECK(r.model->dense_mlp.intermediate == 32);
}

TEST_CASE("Bad configs: every one is an error naming the field") {
  struct Case {
    std::string_view json;
    std::string_view field;
  };
  const Case corpus[] = {
      {"", "hf"},
      {"not json", "hf"},
      {"[1, 2]", "hf"},
      {R"({"hidden_size": 64})", "hf.model_type"},
      {R"({"model_type": 7})", "hf.model_type"},
      {R"({"model_type": "bert"})", "hf.model_type"},
      {R"({"model_type": "llama", "hidden_size": 64, "intermediate_size": 128,
          "num_attention_heads": 4, "vocab_size": 1000})",
       "hf.num_hidden_layers"},
      {R"({"model_type": "llama", "hidden_size": -64, "intermediate_size": 128,
          "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 1000})",
       "hf.hidden_size"},
      {R"({"model_type": "llama", "hidden_size": "64", "intermediate_size": 128,
          "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 1000})",
       "hf.hidden_size"},
      {R"({"model_type": "llama", "hidden_size": 64.5, "intermediate_size": 128,
          "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 1000})",
       "hf.hidden_size"},
      {R"({"model_type": "llama", "hidden_size": 64, "intermediate_size": 128,
          "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 3,
          "vocab_size": 1000})",
       "hf.num_key_value_heads"},
      {R"({"model_type": "llama", "hidden_size": 64, "intermediate_size": 128,
          "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 18446744073709551615})",
       "hf.vocab_size"},
      {R"({"model_type": "llama", "hidden_size": 64, "intermediate_size": 128,
          "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 1000,
          "tie_word_embeddings": "yes"})",
       "hf.tie_word_embeddings"},
      {R"({"model_type": "mixtral", "hidden_size": 64, "intermediate_size": 128,
          "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 1000,
          "num_local_experts": 8, "num_experts_per_tok": 9})",
       "hf.num_experts_per_tok"},
      {R"({"model_type": "qwen3_moe", "hidden_size": 64, "moe_intermediate_size": 32,
          "num_hidden_layers": 2, "num_attention_heads": 4, "num_experts": 8,
          "num_experts_per_tok": 2, "mlp_only_layers": [5], "vocab_size": 100,
          "intermediate_size": 64})",
       "hf.mlp_only_layers[0]"},
      {R"({"model_type": "deepseek_v3", "hidden_size": 64, "intermediate_size": 128,
          "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 1000,
          "qk_nope_head_dim": 16, "qk_rope_head_dim": 8, "v_head_dim": 16})",
       "hf.kv_lora_rank"},
      {R"({"model_type": "deepseek_v3", "hidden_size": 64, "intermediate_size": 128,
          "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 1000, "kv_lora_rank": 8,
          "qk_nope_head_dim": 16, "qk_rope_head_dim": 8, "v_head_dim": 16,
          "n_routed_experts": 4})",
       "hf.num_experts_per_tok"},
      {R"({"model_type": "gpt2", "n_embd": 10, "n_layer": 1, "n_head": 3, "n_positions": 16,
          "vocab_size": 10})",
       "hf.n_head"},
      {R"({"model_type": "kimi_k3"})", "hf.text_config"},
      {R"({"model_type": "kimi_k3", "text_config": {"model_type": "llama"}})",
       "hf.text_config.model_type"},
  };
  for (const Case& c : corpus) {
    INFO(std::string(c.json));
    const HfImport r = import_hf_config(c.json);
    CHECK(!r.model.has_value());
    REQUIRE(!r.diagnostics.ok());
    CHECK(has_error(r.diagnostics, c.field));
    for (const auto& e : r.diagnostics.errors) CHECK(!e.message.empty());
  }
}

TEST_CASE("Kimi K3 text_config errors carry the text_config prefix and the range") {
  std::string config(*preset_hf_config("kimi-k3"));
  config.replace(config.find("\"num_hidden_layers\": 93"), 23, "\"num_hidden_layers\": 0");
  const HfImport r = import_hf_config(config);
  REQUIRE(!r.diagnostics.ok());
  CHECK(r.diagnostics.errors[0].field == "hf.text_config.num_hidden_layers");
  CHECK(r.diagnostics.errors[0].message.find("[1, 4096]") != std::string::npos);
}

TEST_CASE("Kimi Linear layer lists must cover every layer once") {
  std::string config(*preset_hf_config("kimi-linear-48b-a3b"));
  // Drop layer 27 from full_attn_layers: layer 27 is then in neither list.
  config.replace(config.find("24,\n      27"), 12, "24");
  const HfImport r = import_hf_config(config);
  REQUIRE(!r.diagnostics.ok());
  CHECK(has_error(r.diagnostics, "hf.linear_attn_config.full_attn_layers"));
  std::string out_of_range(*preset_hf_config("kimi-linear-48b-a3b"));
  const std::string first_id = "\"kda_layers\": [\n      1,";
  out_of_range.replace(out_of_range.find(first_id), first_id.size(), "\"kda_layers\": [\n      0,");
  const HfImport r2 = import_hf_config(out_of_range);
  REQUIRE(!r2.diagnostics.ok());
  CHECK(has_error(r2.diagnostics, "hf.linear_attn_config.kda_layers[0]"));
}

TEST_CASE("Absurd sizes are refused before any count can overflow") {
  const HfImport r = import_hf_config(R"({"model_type": "mixtral", "hidden_size": 131072,
    "intermediate_size": 1048576, "num_hidden_layers": 4096, "num_attention_heads": 4096,
    "vocab_size": 1000, "num_local_experts": 16384, "num_experts_per_tok": 1})");
  REQUIRE(!r.diagnostics.ok());
  CHECK(r.diagnostics.errors[0].field == "hf");
}

TEST_CASE("An MoE config without shared experts has no shared intermediate size") {
  // Found by fuzzing: the model text then failed to read the model back.
  std::string text(*preset_hf_config("kimi-linear-48b-a3b"));
  const auto key = text.find("\"num_shared_experts\"");
  REQUIRE(key != std::string::npos);
  text.replace(key, 20, "\"renamed_key_ignored\"");
  const HfImport imported = import_hf_config(text);
  REQUIRE(imported.model);
  CHECK(imported.model->moe.shared_experts == 0);
  CHECK(imported.model->moe.shared_intermediate == 0);
  CHECK(model_from_text(model_to_text(*imported.model), "model").model == imported.model);
}

TEST_CASE("A field that failed gets no follow-on errors about its fallback value") {
  // "hidden_size": "4096" is a string: one error for it, and none from the head_dim derivation
  // (hidden_size // num_attention_heads), which would speak of a hidden size of 1.
  const HfImport string_hidden = import_hf_config(R"({"model_type": "llama",
    "hidden_size": "4096", "intermediate_size": 14336, "num_hidden_layers": 32,
    "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 128256})");
  REQUIRE(string_hidden.diagnostics.errors.size() == 1);
  CHECK(string_hidden.diagnostics.errors[0].field == "hf.hidden_size");
  CHECK(string_hidden.diagnostics.errors[0].message.find("(1)") == std::string::npos);

  // A bad head count: kv heads (8) are checked against the field's own limit, not against 1.
  const HfImport bad_heads = import_hf_config(R"({"model_type": "llama", "hidden_size": 4096,
    "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 0,
    "num_key_value_heads": 8, "vocab_size": 128256})");
  REQUIRE(bad_heads.diagnostics.errors.size() == 1);
  CHECK(bad_heads.diagnostics.errors[0].field == "hf.num_attention_heads");

  // A bad expert count: top-k is not then "out of [1, 1]".
  const HfImport bad_experts = import_hf_config(R"({"model_type": "mixtral", "hidden_size": 64,
    "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
    "vocab_size": 1000, "num_local_experts": "8", "num_experts_per_tok": 2})");
  REQUIRE(bad_experts.diagnostics.errors.size() == 1);
  CHECK(bad_experts.diagnostics.errors[0].field == "hf.num_local_experts");

  // A bad layer count under Kimi Linear: the layer-id lists are not checked against it.
  const HfImport bad_layers = import_hf_config(R"({"model_type": "kimi_linear",
    "hidden_size": 64, "vocab_size": 1000, "num_hidden_layers": -1, "num_attention_heads": 4,
    "kv_lora_rank": 16, "qk_nope_head_dim": 8, "qk_rope_head_dim": 8, "v_head_dim": 8,
    "intermediate_size": 128, "linear_attn_config": {"kda_layers": [1, 2, 3],
    "full_attn_layers": [4], "num_heads": 4, "head_dim": 16, "short_conv_kernel_size": 4}})");
  REQUIRE(bad_layers.diagnostics.errors.size() == 1);
  CHECK(bad_layers.diagnostics.errors[0].field == "hf.num_hidden_layers");
}

TEST_CASE("HF configs go through the bounded JSON reader: depth and duplicate keys") {
  std::string deep = "1";
  for (int i = 0; i < 10000; ++i) deep = "[" + deep + "]";
  const HfImport nested = import_hf_config(R"({"model_type": "llama", "x": )" + deep + "}");
  REQUIRE(nested.diagnostics.errors.size() == 1);
  CHECK(nested.diagnostics.errors[0].field.starts_with("hf.x[0][0]"));
  const HfImport twice = import_hf_config(R"({"model_type": "llama", "hidden_size": 64,
    "hidden_size": 128})");
  REQUIRE(twice.diagnostics.errors.size() == 1);
  CHECK(twice.diagnostics.errors[0].field == "hf.hidden_size");
  CHECK(twice.diagnostics.errors[0].message.find("first 64, then 128") != std::string::npos);
}

TEST_CASE("An imported model is named by _name_or_path, else its file, else model_type") {
  // Two Qwen3 variants must not both read "qwen3_moe".
  const std::string with_path =
      R"({"_name_or_path": "Qwen/Qwen3-30B-A3B", )" + std::string(tiny_llama.substr(1));
  CHECK(import_hf_config(with_path).model->name == "Qwen3-30B-A3B");
  // _name_or_path wins over the file name; a local checkpoint path names its folder.
  const std::string local =
      R"({"_name_or_path": "/ckpt/my run/", )" + std::string(tiny_llama.substr(1));
  CHECK(import_hf_config(local, "qwen3-235b-a22b.json").model->name == "my-run");
  CHECK(import_hf_config(tiny_llama, "downloads/qwen3-235b-a22b.json").model->name ==
        "qwen3-235b-a22b");
  // A bare config.json names no model: the family then.
  CHECK(import_hf_config(tiny_llama, "config.json").model->name == "llama");
  CHECK(import_hf_config(tiny_llama).model->name == "llama");
  // The name goes into a link: it keeps to model_text's [A-Za-z0-9._-], 64 characters at most.
  const HfImport odd =
      import_hf_config(R"({"_name_or_path": "org/a b+c", )" + std::string(tiny_llama.substr(1)));
  CHECK(odd.model->name == "a-b-c");
  CHECK(model_from_text(model_to_text(*odd.model), "custom").model.has_value());
  // A _name_or_path that is not a string is not an error (it is no shape): the family names it.
  const HfImport number =
      import_hf_config(R"({"_name_or_path": 7, )" + std::string(tiny_llama.substr(1)));
  REQUIRE(number.model.has_value());
  CHECK(number.model->name == "llama");
}
