#include "model/hf_config.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "base/json_reader.h"
#include "model/parameters.h"

namespace stagemem {
namespace {

using json = nlohmann::json;

// Bounds keep every tensor's element count well inside int64 (the largest product, routed
// experts x 3 x hidden x intermediate, stays below 2^53); the whole model is checked at the end.
constexpr std::int64_t max_hidden = 131'072;
constexpr std::int64_t max_vocab = 8'388'608;
constexpr std::int64_t max_layers = 4'096;
constexpr std::int64_t max_heads = 4'096;
constexpr std::int64_t max_head_dim = 4'096;
constexpr std::int64_t max_intermediate = 1'048'576;
constexpr std::int64_t max_experts = 16'384;
constexpr std::int64_t max_rank = 131'072;
constexpr std::int64_t max_positions = 4'194'304;
constexpr std::int64_t max_mtp_layers = 16;
constexpr double max_total_parameters = 4.0e18;  // below 2^62: sums of shards cannot overflow

std::string text(std::int64_t value) {
  return std::to_string(value);
}

// A short, printable rendering of a user-supplied string for error messages.
std::string printable(const std::string& value) {
  std::string out;
  for (char c : value.substr(0, 48)) out += (c >= 0x20 && c <= 0x7e) ? c : '?';
  if (value.size() > 48) out += "...";
  return out;
}

// Typed, checked access to one JSON object; every failure is an error naming `prefix + key`.
// A key that failed is remembered (shared with nested objects' Fields): a check that depends on
// its value is skipped or widened, so no error speaks of a fallback the user never wrote.
class Fields {
 public:
  Fields(const json& object, std::string prefix, Diagnostics& d)
      : object_(object),
        prefix_(std::move(prefix)),
        d_(d),
        failed_(std::make_shared<std::set<std::string>>()) {}
  Fields(const json& object, std::string prefix, const Fields& parent)
      : object_(object), prefix_(std::move(prefix)), d_(parent.d_), failed_(parent.failed_) {}

  std::string field(std::string_view key) const { return prefix_ + std::string(key); }
  Diagnostics& diagnostics() const { return d_; }

  // Absent and null are the same: the modeling code treats a null as "not set".
  const json* find(std::string_view key) const {
    const auto it = object_.find(std::string(key));
    if (it == object_.end() || it->is_null()) return nullptr;
    return &*it;
  }
  bool present(std::string_view key) const { return find(key) != nullptr; }
  // False once reading `key` failed: its value is a fallback.
  bool ok(std::string_view key) const { return failed_->count(field(key)) == 0; }
  // `value` (derived from `key`) as a bound, or `otherwise` (the field's own limit) when `key`
  // failed: a range from a fallback would reject what the user wrote for no reason they gave.
  std::int64_t bound(std::string_view key, std::int64_t value, std::int64_t otherwise) const {
    return ok(key) ? value : otherwise;
  }

  std::int64_t required(std::string_view key, std::int64_t low, std::int64_t high) const {
    const json* value = find(key);
    if (!value) {
      fail(key, "is missing; expected an integer in " + range(low, high));
      return low;
    }
    return convert(key, *value, low, high);
  }

  std::int64_t optional(std::string_view key, std::int64_t fallback, std::int64_t low,
                        std::int64_t high) const {
    const json* value = find(key);
    return value ? convert(key, *value, low, high) : fallback;
  }

  bool flag(std::string_view key, bool fallback) const {
    const json* value = find(key);
    if (!value) return fallback;
    if (!value->is_boolean()) {
      fail(key, "must be true or false");
      return fallback;
    }
    return value->get<bool>();
  }

  std::string string(std::string_view key, std::string fallback) const {
    const json* value = find(key);
    if (!value) return fallback;
    if (!value->is_string()) {
      fail(key, "must be a string");
      return fallback;
    }
    return value->get<std::string>();
  }

  // Integers in [low, high]; an absent list is empty.
  std::vector<std::int64_t> integer_list(std::string_view key, std::int64_t low,
                                         std::int64_t high) const {
    std::vector<std::int64_t> out;
    const json* value = find(key);
    if (!value) return out;
    if (!value->is_array()) {
      fail(key, "must be a list of integers in " + range(low, high));
      return out;
    }
    for (std::size_t i = 0; i < value->size(); ++i) {
      const std::string item_key = std::string(key) + "[" + std::to_string(i) + "]";
      out.push_back(convert(item_key, (*value)[i], low, high));
      if (!ok(item_key)) failed_->insert(field(key));
    }
    return out;
  }

 private:
  static std::string range(std::int64_t low, std::int64_t high) {
    return "[" + text(low) + ", " + text(high) + "]";
  }

  std::int64_t convert(std::string_view key, const json& value, std::int64_t low,
                       std::int64_t high) const {
    std::int64_t out = 0;
    bool integral = false;
    if (value.is_number_unsigned()) {
      const auto u = value.get<std::uint64_t>();
      const bool fits = u <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
      out = fits ? static_cast<std::int64_t>(u) : std::numeric_limits<std::int64_t>::max();
      integral = true;
    } else if (value.is_number_integer()) {
      out = value.get<std::int64_t>();
      integral = true;
    } else if (value.is_number_float()) {
      // Some exporters write 4096.0; accept a float only when it is exactly an integer in range.
      const double f = value.get<double>();
      if (std::isfinite(f) && std::floor(f) == f && f >= static_cast<double>(low) &&
          f <= static_cast<double>(high)) {
        out = static_cast<std::int64_t>(f);
        integral = true;
      }
    }
    if (!integral) {
      fail(key, "must be an integer in " + range(low, high));
      return low;
    }
    if (out < low || out > high) {
      fail(key, text(out) + " is out of range: expected an integer in " + range(low, high));
      return low;
    }
    return out;
  }

  void fail(std::string_view key, std::string message) const {
    failed_->insert(field(key));
    d_.error(field(key), std::move(message));
  }

  const json& object_;
  std::string prefix_;
  Diagnostics& d_;
  std::shared_ptr<std::set<std::string>> failed_;
};

// head_dim as Llama/Qwen3 derive it when absent: hidden_size // num_attention_heads.
std::int64_t head_dim_of(const Fields& f, std::int64_t hidden, std::int64_t heads) {
  if (f.present("head_dim")) return f.required("head_dim", 1, max_head_dim);
  if (!f.ok("hidden_size") || !f.ok("num_attention_heads")) return 1;  // already reported
  if (hidden / heads < 1) {
    f.diagnostics().error(
        f.field("num_attention_heads"),
        "must not exceed hidden_size (" + text(hidden) + ") unless head_dim is given");
    return 1;
  }
  return hidden / heads;
}

void read_common(const Fields& f, Model& m, std::int64_t& layers) {
  m.hidden = f.required("hidden_size", 1, max_hidden);
  m.vocab = f.required("vocab_size", 1, max_vocab);
  layers = f.required("num_hidden_layers", 1, max_layers);
  m.tied_embeddings = f.flag("tie_word_embeddings", false);
}

void read_gqa(const Fields& f, Model& m) {
  const std::int64_t heads = f.required("num_attention_heads", 1, max_heads);
  const std::int64_t kv_heads =
      f.optional("num_key_value_heads", heads, 1, f.bound("num_attention_heads", heads, max_heads));
  if (f.ok("num_attention_heads") && f.ok("num_key_value_heads") && heads % kv_heads != 0) {
    f.diagnostics().error(
        f.field("num_key_value_heads"),
        text(kv_heads) + " must divide num_attention_heads (" + text(heads) + ")");
  }
  m.gqa.heads = heads;
  m.gqa.kv_heads = kv_heads;
  m.gqa.head_dim = head_dim_of(f, m.hidden, heads);
}

std::optional<Model> import_llama(const Fields& f) {
  Model m;
  std::int64_t layers = 0;
  read_common(f, m, layers);
  read_gqa(f, m);
  // LlamaAttention applies attention_bias to q, k, v and o alike; mlp_bias to all three MLP
  // linears.
  const bool attention_bias = f.flag("attention_bias", false);
  m.gqa.qkv_bias = attention_bias;
  m.gqa.output_bias = attention_bias;
  m.dense_mlp = {.intermediate = f.required("intermediate_size", 1, max_intermediate),
                 .activation = MlpActivation::swiglu,
                 .bias = f.flag("mlp_bias", false)};
  m.layers.assign(static_cast<std::size_t>(layers), LayerKind{AttentionKind::gqa, MlpKind::dense});
  return m;
}

std::optional<Model> import_mixtral(const Fields& f) {
  Model m;
  std::int64_t layers = 0;
  read_common(f, m, layers);
  read_gqa(f, m);
  // MixtralSparseMoeBlock: gate Linear(h, E, bias=False); experts w1/w3 (h -> I), w2 (I -> h).
  m.moe.routed_experts = f.required("num_local_experts", 1, max_experts);
  m.moe.top_k = f.required("num_experts_per_tok", 1,
                           f.bound("num_local_experts", m.moe.routed_experts, max_experts));
  m.moe.expert_intermediate = f.required("intermediate_size", 1, max_intermediate);
  m.layers.assign(static_cast<std::size_t>(layers), LayerKind{AttentionKind::gqa, MlpKind::moe});
  return m;
}

std::optional<Model> import_qwen3_moe(const Fields& f) {
  Model m;
  std::int64_t layers = 0;
  read_common(f, m, layers);
  read_gqa(f, m);
  m.gqa.qk_norm = true;
  const bool attention_bias = f.flag("attention_bias", false);
  m.gqa.qkv_bias = attention_bias;
  m.gqa.output_bias = attention_bias;
  const std::int64_t experts = f.required("num_experts", 0, max_experts);
  const std::int64_t step =
      f.optional("decoder_sparse_step", 1, 1, f.bound("num_hidden_layers", layers, max_layers));
  const std::vector<std::int64_t> mlp_only = f.integer_list(
      "mlp_only_layers", 0, f.bound("num_hidden_layers", layers - 1, max_layers - 1));
  const std::set<std::int64_t> mlp_only_set(mlp_only.begin(), mlp_only.end());
  bool any_dense = false, any_moe = false;
  for (std::int64_t i = 0; i < layers; ++i) {
    // Qwen3MoeDecoderLayer: sparse when not in mlp_only_layers and (i + 1) % step == 0.
    const bool sparse = mlp_only_set.count(i) == 0 && experts > 0 && (i + 1) % step == 0;
    m.layers.push_back({AttentionKind::gqa, sparse ? MlpKind::moe : MlpKind::dense});
    any_dense |= !sparse;
    any_moe |= sparse;
  }
  if (any_moe) {
    m.moe.routed_experts = experts;
    m.moe.top_k =
        f.required("num_experts_per_tok", 1, f.bound("num_experts", experts, max_experts));
    m.moe.expert_intermediate = f.required("moe_intermediate_size", 1, max_intermediate);
  }
  if (any_dense) {
    m.dense_mlp.intermediate = f.required("intermediate_size", 1, max_intermediate);
  }
  return m;
}

void read_mla(const Fields& f, Model& m) {
  m.mla.heads = f.required("num_attention_heads", 1, max_heads);
  m.mla.q_lora_rank = f.optional("q_lora_rank", 0, 1, max_rank);  // null: q projected from h
  m.mla.kv_lora_rank = f.required("kv_lora_rank", 1, max_rank);
  m.mla.qk_nope_head_dim = f.required("qk_nope_head_dim", 0, max_head_dim);
  m.mla.qk_rope_head_dim = f.required("qk_rope_head_dim", 0, max_head_dim);
  m.mla.v_head_dim = f.required("v_head_dim", 1, max_head_dim);
  if (f.ok("qk_nope_head_dim") && f.ok("qk_rope_head_dim") &&
      m.mla.qk_nope_head_dim + m.mla.qk_rope_head_dim < 1) {
    f.diagnostics().error(f.field("qk_nope_head_dim"),
                          "qk_nope_head_dim + qk_rope_head_dim must be at least 1");
  }
}

std::optional<Model> import_deepseek(const Fields& f) {
  Model m;
  std::int64_t layers = 0;
  read_common(f, m, layers);
  read_mla(f, m);
  if (f.flag("attention_bias", false)) {
    f.diagnostics().error(
        f.field("attention_bias"),
        "only false is supported for MLA models (DeepSeek-V3 and Kimi K2 have none)");
  }
  const bool has_moe = f.present("n_routed_experts");
  const std::int64_t first_dense =
      f.optional("first_k_dense_replace", 0, 0, f.bound("num_hidden_layers", layers, max_layers));
  const std::int64_t frequency =
      f.optional("moe_layer_freq", 1, 1, f.bound("num_hidden_layers", layers, max_layers));
  // DeepseekV3DecoderLayer: MoE when n_routed_experts is set, i >= first_k_dense_replace and
  // i % moe_layer_freq == 0. The MTP layers continue the numbering after the last layer.
  auto is_moe = [&](std::int64_t i) { return has_moe && i >= first_dense && i % frequency == 0; };
  bool any_dense = false;
  for (std::int64_t i = 0; i < layers; ++i) {
    m.layers.push_back({AttentionKind::mla, is_moe(i) ? MlpKind::moe : MlpKind::dense});
    any_dense |= !is_moe(i);
  }
  m.mtp_layers = f.optional("num_nextn_predict_layers", 0, 0, max_mtp_layers);
  m.mtp_layer = {AttentionKind::mla, is_moe(layers) ? MlpKind::moe : MlpKind::dense};
  if (m.mtp_layers > 0) any_dense |= !is_moe(layers);
  if (has_moe) {
    m.moe.routed_experts = f.required("n_routed_experts", 1, max_experts);
    m.moe.top_k = f.required("num_experts_per_tok", 1,
                             f.bound("n_routed_experts", m.moe.routed_experts, max_experts));
    m.moe.expert_intermediate = f.required("moe_intermediate_size", 1, max_intermediate);
    m.moe.shared_experts = f.optional("n_shared_experts", 0, 0, 64);
    // No shared experts: no shared intermediate size either (the model text requires both or
    // neither; found by fuzzing a config without the key).
    m.moe.shared_intermediate = m.moe.shared_experts > 0 ? m.moe.expert_intermediate : 0;
    // MoEGate creates e_score_correction_bias [n_routed_experts] only for topk_method noaux_tc,
    // the default of DeepSeek-V3's configuration.
    m.moe.router_correction_bias = f.string("topk_method", "noaux_tc") == "noaux_tc";
  }
  if (any_dense) m.dense_mlp.intermediate = f.required("intermediate_size", 1, max_intermediate);
  return m;
}

std::optional<Model> import_kimi_linear(const Fields& f) {
  Diagnostics& d = f.diagnostics();
  Model m;
  std::int64_t layers = 0;
  read_common(f, m, layers);
  read_mla(f, m);
  m.mla.output_gate = f.flag("mla_use_output_gate", false);
  // `mla_use_nope` only skips the rotary embedding; the rope dimensions keep their shapes.

  std::vector<bool> kda(static_cast<std::size_t>(layers), false);
  if (const json* config = f.find("linear_attn_config")) {
    if (!config->is_object()) {
      d.error(f.field("linear_attn_config"), "must be an object");
      return std::nullopt;
    }
    // The layer lists index a vector of `layers` entries: without a layer count there is
    // nothing to check them against.
    if (!f.ok("num_hidden_layers")) return std::nullopt;
    const Fields linear(*config, f.field("linear_attn_config."), f);
    // Layer ids are 1-based (KimiLinearConfig.is_kda_layer tests layer_idx + 1).
    const auto kda_ids = linear.integer_list("kda_layers", 1, layers);
    const auto full_ids = linear.integer_list("full_attn_layers", 1, layers);
    for (std::int64_t id : kda_ids) {
      if (kda[static_cast<std::size_t>(id - 1)]) {
        d.error(linear.field("kda_layers"), "lists layer " + text(id) + " twice");
      }
      kda[static_cast<std::size_t>(id - 1)] = true;
    }
    if (linear.present("full_attn_layers")) {
      std::vector<bool> full(static_cast<std::size_t>(layers), false);
      for (std::int64_t id : full_ids) {
        if (kda[static_cast<std::size_t>(id - 1)] || full[static_cast<std::size_t>(id - 1)]) {
          d.error(linear.field("full_attn_layers"),
                  "layer " + text(id) + " is listed twice (or also in kda_layers)");
        }
        full[static_cast<std::size_t>(id - 1)] = true;
      }
      for (std::int64_t i = 0; i < layers; ++i) {
        if (!kda[static_cast<std::size_t>(i)] && !full[static_cast<std::size_t>(i)]) {
          d.error(linear.field("full_attn_layers"),
                  "layer " + text(i + 1) +
                      " is in neither full_attn_layers nor kda_layers; "
                      "together they must list every layer id in [1, " +
                      text(layers) + "] once");
          break;
        }
      }
    }
    if (!kda_ids.empty()) {
      m.kda.heads = linear.required("num_heads", 1, max_heads);
      m.kda.head_dim = linear.required("head_dim", 1, max_head_dim);
      m.kda.short_conv_kernel = linear.required("short_conv_kernel_size", 1, 64);
      // Kimi K3: the decay gate is one h -> heads*head_dim projection, not f_a/f_b.
      m.kda.full_rank_gate = linear.flag("use_full_rank_gate", false);
    }
  }

  const bool has_moe = f.present("num_experts");
  const std::int64_t first_dense =
      f.optional("first_k_dense_replace", 0, 0, f.bound("num_hidden_layers", layers, max_layers));
  const std::int64_t frequency =
      f.optional("moe_layer_freq", 1, 1, f.bound("num_hidden_layers", layers, max_layers));
  bool any_dense = false;
  for (std::int64_t i = 0; i < layers; ++i) {
    // KimiDecoderLayer: MoE when num_experts is set, i >= first_k_dense_replace and
    // i % moe_layer_freq == 0.
    const bool moe = has_moe && i >= first_dense && i % frequency == 0;
    m.layers.push_back({kda[static_cast<std::size_t>(i)] ? AttentionKind::kda : AttentionKind::mla,
                        moe ? MlpKind::moe : MlpKind::dense});
    any_dense |= !moe;
  }
  if (has_moe) {
    m.moe.routed_experts = f.required("num_experts", 1, max_experts);
    m.moe.top_k = f.required("num_experts_per_token", 1,
                             f.bound("num_experts", m.moe.routed_experts, max_experts));
    m.moe.expert_intermediate = f.required("moe_intermediate_size", 1, max_intermediate);
    m.moe.shared_experts = f.optional("num_shared_experts", 0, 0, 64);
    // No shared experts: no shared intermediate size either (the model text requires both or
    // neither; found by fuzzing a config without the key).
    m.moe.shared_intermediate = m.moe.shared_experts > 0 ? m.moe.expert_intermediate : 0;
    m.moe.router_correction_bias = true;  // KimiMoEGate always creates e_score_correction_bias
    // Latent MoE (Kimi K3): routed experts in a narrower width than the hidden size.
    const std::int64_t expert_width = f.optional("routed_expert_hidden_size", m.hidden, 1,
                                                 f.bound("hidden_size", m.hidden, max_hidden));
    if (expert_width != m.hidden) {
      m.moe.latent_hidden = expert_width;
      m.moe.latent_norm = f.flag("latent_moe_use_norm", false);
    }
  }
  if (any_dense) m.dense_mlp.intermediate = f.required("intermediate_size", 1, max_intermediate);
  m.attn_res.block_size =
      f.optional("attn_res_block_size", 0, 0, f.bound("num_hidden_layers", layers, max_layers));
  f.optional("num_nextn_predict_layers", 0, 0, 0);  // KimiLinearForCausalLM has no MTP module
  return m;
}

std::optional<Model> import_gpt2(const Fields& f) {
  Diagnostics& d = f.diagnostics();
  Model m;
  m.hidden = f.required("n_embd", 1, max_hidden);
  m.vocab = f.required("vocab_size", 1, max_vocab);
  const std::int64_t layers = f.required("n_layer", 1, max_layers);
  const std::int64_t heads = f.required("n_head", 1, max_heads);
  if (f.ok("n_embd") && f.ok("n_head") && m.hidden % heads != 0) {
    d.error(f.field("n_head"), text(heads) + " must divide n_embd (" + text(m.hidden) + ")");
  }
  m.learned_positions = f.required("n_positions", 1, max_positions);
  // GPT2MLP: n_inner null means 4 x n_embd.
  const std::int64_t inner = f.optional("n_inner", 4 * m.hidden, 1, max_intermediate);
  m.tied_embeddings = f.flag("tie_word_embeddings", true);
  m.norm = NormKind::layernorm;
  m.gqa = {.heads = heads,
           .kv_heads = heads,
           .head_dim = heads > 0 ? m.hidden / heads : 1,
           .qk_norm = false,
           .qkv_bias = true,
           .output_bias = true,
           .fused_qkv = true};
  m.dense_mlp = {.intermediate = inner, .activation = MlpActivation::gelu, .bias = true};
  m.layers.assign(static_cast<std::size_t>(layers), LayerKind{AttentionKind::gqa, MlpKind::dense});
  return m;
}

// The parameter total in floating point, to refuse models whose int64 sums could overflow.
double approximate_total(const Model& m) {
  double total = static_cast<double>(m.vocab) * static_cast<double>(m.hidden) * 2.0 +
                 static_cast<double>(m.learned_positions) * static_cast<double>(m.hidden);
  const LayerKind kinds[] = {
      {AttentionKind::gqa, MlpKind::dense}, {AttentionKind::gqa, MlpKind::moe},
      {AttentionKind::mla, MlpKind::dense}, {AttentionKind::mla, MlpKind::moe},
      {AttentionKind::kda, MlpKind::dense}, {AttentionKind::kda, MlpKind::moe}};
  for (const LayerKind& kind : kinds) {
    double count = 0;
    for (const LayerKind& k : m.layers) count += (k == kind) ? 1.0 : 0.0;
    if (m.mtp_layers > 0 && m.mtp_layer == kind) count += static_cast<double>(m.mtp_layers);
    if (count == 0) continue;
    for (const Tensor& t : layer_tensors(m, kind)) total += count * static_cast<double>(t.elements);
  }
  return total;
}

using Importer = std::optional<Model> (*)(const Fields&);

Importer importer_for(const std::string& model_type) {
  if (model_type == "llama") return import_llama;
  if (model_type == "mixtral") return import_mixtral;
  if (model_type == "qwen3_moe") return import_qwen3_moe;
  if (model_type == "deepseek_v3" || model_type == "kimi_k2") return import_deepseek;
  if (model_type == "kimi_linear") return import_kimi_linear;
  if (model_type == "gpt2") return import_gpt2;
  return nullptr;
}

std::string supported_list() {
  std::string out;
  for (std::string_view t : supported_hf_model_types())
    out += (out.empty() ? "" : ", ") + std::string(t);
  return out;
}

}  // namespace

std::vector<std::string_view> supported_hf_model_types() {
  return {"llama",   "mixtral",     "qwen3_moe", "deepseek_v3",
          "kimi_k2", "kimi_linear", "kimi_k3",   "gpt2"};
}

namespace {

// A model name model_text.h accepts (1 to 64 of [A-Za-z0-9._-]): other characters become '-'.
std::string model_name(std::string_view text) {
  std::string out;
  for (char c : text.substr(0, 64)) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '-' || c == '.' || c == '_';
    out += ok ? c : '-';
  }
  return out;
}

// The last part of a path or repository id ("Qwen/Qwen3-30B-A3B" -> "Qwen3-30B-A3B", a file name
// without its ".json"); "" for a bare "config.json", which names no model.
std::string name_from_path(std::string_view path) {
  while (!path.empty() && (path.back() == '/' || path.back() == '\\')) path.remove_suffix(1);
  if (const auto slash = path.find_last_of("/\\"); slash != std::string_view::npos) {
    path.remove_prefix(slash + 1);
  }
  if (path.size() > 5 && path.ends_with(".json")) path.remove_suffix(5);
  if (path == "config" || path == "config.json") return "";
  return model_name(path);
}

}  // namespace

HfImport import_hf_config(std::string_view json_text, std::string_view file_name) {
  HfImport result;
  Diagnostics& d = result.diagnostics;
  if (json_text.size() > max_hf_config_bytes) {
    d.error("hf", "the config is larger than " +
                      text(static_cast<std::int64_t>(max_hf_config_bytes)) + " bytes");
    return result;
  }
  // Real configs nest 3 or 4 levels (text_config.rope_scaling, quantization_config...).
  const std::optional<json> parsed =
      parse_json_bounded(json_text, {.max_bytes = max_hf_config_bytes, .max_depth = 32}, "hf", d);
  if (!parsed) return result;
  const json& root = *parsed;
  if (!root.is_object()) {
    d.error("hf", "must be a JSON object");
    return result;
  }
  const Fields top(root, "hf.", d);
  std::string model_type = top.string("model_type", "");
  if (!d.ok()) return result;
  const json* language = &root;
  std::string prefix = "hf.";
  if (model_type == "kimi_k3") {
    // Multimodal wrapper: the language model is text_config; the vision tower is not counted.
    const json* text_config = top.find("text_config");
    if (!text_config || !text_config->is_object()) {
      d.error("hf.text_config", "kimi_k3 needs its language model as an object in text_config");
      return result;
    }
    language = text_config;
    prefix = "hf.text_config.";
    model_type = Fields(*language, prefix, d).string("model_type", "kimi_linear");
    if (!d.ok()) return result;
    if (model_type != "kimi_linear") {
      d.error(
          "hf.text_config.model_type",
          "'" + printable(model_type) + "' is not supported inside kimi_k3; expected kimi_linear");
      return result;
    }
  }
  const Importer importer = importer_for(model_type);
  if (model_type.empty()) {
    d.error("hf.model_type", "is missing; expected one of: " + supported_list());
    return result;
  }
  if (!importer) {
    d.error(prefix + "model_type", "'" + printable(model_type) +
                                       "' is not supported; expected one of: " + supported_list());
    return result;
  }
  const Fields fields(*language, prefix, d);
  std::optional<Model> model = importer(fields);
  if (!model || !d.ok()) return result;
  // Named as its authors publish it (`_name_or_path`, e.g. "Qwen/Qwen3-30B-A3B"), else by the
  // file it came in, else by its family: two Qwen3 variants must not look the same.
  // (A `_name_or_path` that is not a string only names nothing: it is not a shape.)
  const json* name_or_path = top.find("_name_or_path");
  model->name = name_or_path != nullptr && name_or_path->is_string()
                    ? name_from_path(name_or_path->get<std::string>())
                    : std::string();
  if (model->name.empty()) model->name = name_from_path(file_name);
  if (model->name.empty()) model->name = model_name(top.string("model_type", model_type));
  const double total = approximate_total(*model);
  if (!(total < max_total_parameters)) {
    d.error("hf", "the described model has about " + std::to_string(total) +
                      " parameters, above stagemem's limit of 4e18");
    return result;
  }
  result.model = std::move(model);
  return result;
}

}  // namespace stagemem
