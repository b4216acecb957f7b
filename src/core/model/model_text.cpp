#include "model/model_text.h"

#include <array>
#include <charconv>
#include <vector>

#include "model/parameters.h"

namespace stagemem {
namespace {

constexpr std::int64_t max_dimension = std::int64_t{1} << 20;
constexpr std::int64_t max_vocab = std::int64_t{1} << 24;
constexpr std::int64_t max_heads = 4096;
constexpr std::int64_t max_experts = 65536;
constexpr std::int64_t max_layers = 10000;
constexpr double max_total_parameters = 4e18;  // keeps every int64 sum exact and far from overflow

std::vector<std::string_view> split(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  while (true) {
    const auto at = text.find(separator);
    parts.push_back(text.substr(0, at));
    if (at == std::string_view::npos) return parts;
    text.remove_prefix(at + 1);
  }
}

std::string range_text(std::int64_t low, std::int64_t high) {
  return "[" + std::to_string(low) + ", " + std::to_string(high) + "]";
}

// Reads the comma-separated values of one item; every failure names the item's field.
class ItemReader {
 public:
  ItemReader(std::string_view value, std::string field, Diagnostics& d)
      : parts_(split(value, ',')), field_(std::move(field)), d_(d) {}

  std::int64_t integer(std::size_t index, const char* what, std::int64_t low, std::int64_t high) {
    if (index >= parts_.size()) {
      fail(std::string("missing ") + what + ", an integer in " + range_text(low, high));
      return low;
    }
    const std::string_view text = parts_[index];
    std::int64_t value = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || error != std::errc() || end != text.data() + text.size() || value < low ||
        value > high) {
      fail(std::string(what) + " '" + std::string(text.substr(0, 24)) + "' is not an integer in " +
           range_text(low, high));
      return low;
    }
    return value;
  }

  // Flags after the positional values: each must be one of `allowed` (or `name=value` for the
  // ones listed in `with_value`).
  bool flag(std::size_t first_flag, std::string_view name) const {
    for (std::size_t i = first_flag; i < parts_.size(); ++i) {
      if (parts_[i] == name) return true;
    }
    return false;
  }
  std::string_view flag_value(std::size_t first_flag, std::string_view name) const {
    for (std::size_t i = first_flag; i < parts_.size(); ++i) {
      if (parts_[i].starts_with(name) && parts_[i].size() > name.size() &&
          parts_[i][name.size()] == '=') {
        return parts_[i].substr(name.size() + 1);
      }
    }
    return {};
  }
  void check_flags(std::size_t first_flag, std::initializer_list<std::string_view> allowed,
                   std::initializer_list<std::string_view> with_value = {}) {
    for (std::size_t i = first_flag; i < parts_.size(); ++i) {
      bool known = false;
      for (std::string_view a : allowed) known |= parts_[i] == a;
      for (std::string_view a : with_value) {
        known |=
            parts_[i].starts_with(a) && parts_[i].size() > a.size() && parts_[i][a.size()] == '=';
      }
      if (!known) {
        std::string names;
        for (std::string_view a : allowed) names += (names.empty() ? "" : ", ") + std::string(a);
        for (std::string_view a : with_value)
          names += (names.empty() ? "" : ", ") + std::string(a) + "=N";
        fail("unknown option '" + std::string(parts_[i].substr(0, 24)) + "'; allowed: " + names);
      }
    }
  }
  std::string_view part(std::size_t index) const {
    return index < parts_.size() ? parts_[index] : std::string_view{};
  }
  void fail(const std::string& message) { d_.error(field_, message); }

 private:
  std::vector<std::string_view> parts_;
  std::string field_;
  Diagnostics& d_;
};

std::optional<LayerKind> parse_kind(std::string_view text) {
  if (text.size() != 2) return std::nullopt;
  LayerKind kind;
  switch (text[0]) {
    case 'g':
      kind.attention = AttentionKind::gqa;
      break;
    case 'm':
      kind.attention = AttentionKind::mla;
      break;
    case 'k':
      kind.attention = AttentionKind::kda;
      break;
    default:
      return std::nullopt;
  }
  switch (text[1]) {
    case 'd':
      kind.mlp = MlpKind::dense;
      break;
    case 'e':
      kind.mlp = MlpKind::moe;
      break;
    default:
      return std::nullopt;
  }
  return kind;
}

std::string kind_text(LayerKind kind) {
  const char attention = kind.attention == AttentionKind::gqa   ? 'g'
                         : kind.attention == AttentionKind::mla ? 'm'
                                                                : 'k';
  return {attention, kind.mlp == MlpKind::dense ? 'd' : 'e'};
}

void parse_layers(std::string_view value, const std::string& field, Model& m, Diagnostics& d) {
  for (std::string_view token : split(value, ',')) {
    const auto star = token.find('*');
    const auto kind = parse_kind(token.substr(0, star));
    if (!kind) {
      d.error(field, "'" + std::string(token.substr(0, 24)) +
                         "' is not a layer kind: attention g|m|k then MLP d|e, e.g. ke*3");
      return;
    }
    std::int64_t count = 1;
    if (star != std::string_view::npos) {
      const std::string_view text = token.substr(star + 1);
      const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), count);
      if (text.empty() || error != std::errc() || end != text.data() + text.size() || count < 1 ||
          count > max_layers) {
        d.error(field, "repeat count '" + std::string(text.substr(0, 24)) +
                           "' is not an integer in " + range_text(1, max_layers));
        return;
      }
    }
    if (static_cast<std::int64_t>(m.layers.size()) + count > max_layers) {
      d.error(field, "more than " + std::to_string(max_layers) + " layers");
      return;
    }
    m.layers.insert(m.layers.end(), static_cast<std::size_t>(count), *kind);
  }
}

bool parse_bit(std::string_view value, const std::string& field, Diagnostics& d) {
  if (value == "1") return true;
  if (value != "0") d.error(field, "'" + std::string(value.substr(0, 24)) + "' is not 0 or 1");
  return false;
}

// A floating-point total so that models whose int64 sums could overflow are refused up front.
double approximate_total(const Model& m) {
  double total = static_cast<double>(m.vocab) * static_cast<double>(m.hidden) * 2.0 +
                 static_cast<double>(m.learned_positions) * static_cast<double>(m.hidden);
  std::vector<LayerKind> kinds = m.layers;
  for (std::int64_t i = 0; i < m.mtp_layers; ++i) kinds.push_back(m.mtp_layer);
  for (const LayerKind& kind : kinds) {
    for (const Tensor& t : layer_tensors(m, kind)) total += static_cast<double>(t.elements);
    if (total > max_total_parameters) break;
  }
  return total;
}

// What model_from_text has read so far: the model and which of its items were given.
struct ModelTextItems {
  Model m;
  bool have_hidden = false, have_vocab = false, have_layers = false, layers_failed = false;
  std::array<bool, 3> have_attention{};  // per AttentionKind: its shape item was given
  bool have_dense = false, have_moe = false;
};

void read_name(std::string_view value, const std::string& field, Model& m, Diagnostics& d) {
  bool valid = !value.empty() && value.size() <= 64;
  for (char c : value) {
    valid = valid && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '-' || c == '.' || c == '_');
  }
  if (valid) {
    m.name = std::string(value);
  } else {
    d.error(field, "a name of 1 to 64 characters from [A-Za-z0-9._-] is expected");
  }
}

void read_gqa(ItemReader& r, GqaShape& a) {
  a.heads = r.integer(0, "heads", 1, max_heads);
  a.kv_heads = r.integer(1, "KV heads", 1, max_heads);
  a.head_dim = r.integer(2, "head dim", 1, max_heads);
  r.check_flags(3, {"qknorm", "qkvbias", "obias", "fused"});
  a.qk_norm = r.flag(3, "qknorm");
  a.qkv_bias = r.flag(3, "qkvbias");
  a.output_bias = r.flag(3, "obias");
  a.fused_qkv = r.flag(3, "fused");
  if (a.kv_heads > a.heads || a.heads % a.kv_heads != 0) r.fail("KV heads must divide the heads");
}

void read_mla(ItemReader& r, MlaShape& a) {
  a.heads = r.integer(0, "heads", 1, max_heads);
  a.q_lora_rank = r.integer(1, "q LoRA rank", 0, max_dimension);
  a.kv_lora_rank = r.integer(2, "KV LoRA rank", 1, max_dimension);
  a.qk_nope_head_dim = r.integer(3, "q/k head dim without RoPE", 0, max_heads);
  a.qk_rope_head_dim = r.integer(4, "q/k RoPE head dim", 0, max_heads);
  a.v_head_dim = r.integer(5, "v head dim", 1, max_heads);
  r.check_flags(6, {"gate"});
  a.output_gate = r.flag(6, "gate");
}

void read_kda(ItemReader& r, KdaShape& a) {
  a.heads = r.integer(0, "heads", 1, max_heads);
  a.head_dim = r.integer(1, "head dim", 1, max_heads);
  a.short_conv_kernel = r.integer(2, "short convolution kernel", 1, 64);
  r.check_flags(3, {"fullgate"});
  a.full_rank_gate = r.flag(3, "fullgate");
}

void read_dense_mlp(ItemReader& r, DenseMlpShape& a) {
  a.intermediate = r.integer(0, "intermediate size", 1, max_dimension);
  if (r.part(1) == "swiglu") {
    a.activation = MlpActivation::swiglu;
  } else if (r.part(1) == "gelu") {
    a.activation = MlpActivation::gelu;
  } else {
    r.fail("the activation must be swiglu or gelu");
  }
  r.check_flags(2, {"bias"});
  a.bias = r.flag(2, "bias");
}

void read_moe(ItemReader& r, const std::string& field, Diagnostics& d, MoeShape& a) {
  a.routed_experts = r.integer(0, "routed experts", 1, max_experts);
  a.top_k = r.integer(1, "top-k", 1, max_experts);
  a.expert_intermediate = r.integer(2, "expert intermediate size", 1, max_dimension);
  a.shared_experts = r.integer(3, "shared experts", 0, 1024);
  a.shared_intermediate = r.integer(4, "shared expert intermediate size", 0, max_dimension);
  r.check_flags(5, {"bias", "lnorm"}, {"latent"});
  a.router_correction_bias = r.flag(5, "bias");
  a.latent_norm = r.flag(5, "lnorm");
  if (const std::string_view latent = r.flag_value(5, "latent"); !latent.empty()) {
    ItemReader latent_reader(latent, field, d);
    a.latent_hidden = latent_reader.integer(0, "latent size", 1, max_dimension);
  }
  if (a.top_k > a.routed_experts) r.fail("top-k must not exceed the routed experts");
  if ((a.shared_experts > 0) != (a.shared_intermediate > 0)) {
    r.fail("shared experts and their intermediate size must both be zero or both positive");
  }
}

void read_mtp(ItemReader& r, Model& m) {
  m.mtp_layers = r.integer(0, "MTP layers", 0, 64);
  if (const auto kind = parse_kind(r.part(1))) {
    m.mtp_layer = *kind;
  } else {
    r.fail("the MTP layer kind must be attention g|m|k then MLP d|e, e.g. me");
  }
}

// The model's scalar items (name, widths, norm, flags, positions, AttnRes); false when `key` is
// none of them.
bool read_scalar_item(std::string_view key, std::string_view value, const std::string& field,
                      ItemReader& r, ModelTextItems& items, Diagnostics& d) {
  Model& m = items.m;
  if (key == "name") {
    read_name(value, field, m, d);
  } else if (key == "h") {
    m.hidden = r.integer(0, "hidden size", 1, max_dimension);
    items.have_hidden = true;
  } else if (key == "v") {
    m.vocab = r.integer(0, "vocabulary size", 1, max_vocab);
    items.have_vocab = true;
  } else if (key == "norm") {
    if (value == "rms") {
      m.norm = NormKind::rmsnorm;
    } else if (value == "ln") {
      m.norm = NormKind::layernorm;
    } else {
      d.error(field, "expected rms or ln");
    }
  } else if (key == "tied") {
    m.tied_embeddings = parse_bit(value, field, d);
  } else if (key == "fnorm") {
    m.final_norm = parse_bit(value, field, d);
  } else if (key == "pos") {
    m.learned_positions = r.integer(0, "learned positions", 0, max_vocab);
  } else if (key == "ar") {
    m.attn_res.block_size = r.integer(0, "AttnRes block size", 0, max_layers);
    m.attn_res.sites_per_layer = r.integer(1, "AttnRes sites per layer", 1, 8);
  } else {
    return false;
  }
  return true;
}

// One key:value item of the model text.
void read_item(std::string_view key, std::string_view value, const std::string& field,
               ModelTextItems& items, Diagnostics& d) {
  ItemReader r(value, field, d);
  Model& m = items.m;
  if (read_scalar_item(key, value, field, r, items, d)) return;
  if (key == "gqa") {
    read_gqa(r, m.gqa);
    items.have_attention[static_cast<std::size_t>(AttentionKind::gqa)] = true;
  } else if (key == "mla") {
    read_mla(r, m.mla);
    items.have_attention[static_cast<std::size_t>(AttentionKind::mla)] = true;
  } else if (key == "kda") {
    read_kda(r, m.kda);
    items.have_attention[static_cast<std::size_t>(AttentionKind::kda)] = true;
  } else if (key == "mlp") {
    read_dense_mlp(r, m.dense_mlp);
    items.have_dense = true;
  } else if (key == "moe") {
    read_moe(r, field, d, m.moe);
    items.have_moe = true;
  } else if (key == "mtp") {
    read_mtp(r, m);
  } else if (key == "layers") {
    m.layers.clear();
    const std::size_t errors_before = d.errors.size();
    parse_layers(value, field, m, d);
    // A layers item that failed was reported; "missing" would be a second error for it.
    items.have_layers = true;
    items.layers_failed = d.errors.size() != errors_before;
  } else {
    d.error(field,
            "unknown item; known: name, h, v, norm, tied, pos, fnorm, gqa, mla, kda, mlp, "
            "moe, mtp, ar, layers");
  }
}

// The items every model needs: hidden size, vocabulary and at least one layer.
void check_required_items(const ModelTextItems& items, const std::string& prefix, Diagnostics& d) {
  if (!items.have_hidden)
    d.error(prefix + ".h",
            "is missing: the hidden size, an integer in " + range_text(1, max_dimension));
  if (!items.have_vocab)
    d.error(prefix + ".v",
            "is missing: the vocabulary size, an integer in " + range_text(1, max_vocab));
  if (!items.have_layers || (items.m.layers.empty() && !items.layers_failed))
    d.error(prefix + ".layers", "is missing: at least one layer, e.g. gd*32");
}

// Every layer kind used (the MTP layer's too) has its attention and MLP shape item; the first
// one missing is an error.
bool check_kinds_described(const ModelTextItems& items, const std::string& prefix, Diagnostics& d) {
  std::vector<LayerKind> used = items.m.layers;
  if (items.m.mtp_layers > 0) used.push_back(items.m.mtp_layer);
  for (const LayerKind& k : used) {
    const auto a = static_cast<std::size_t>(k.attention);
    if (!items.have_attention[a]) {
      const char* names[] = {"gqa", "mla", "kda"};
      d.error(prefix + ".layers", std::string("a layer uses ") + names[a] +
                                      " attention but there is no " + names[a] + ": item");
      return false;
    }
    if (k.mlp == MlpKind::dense && !items.have_dense) {
      d.error(prefix + ".layers", "a layer uses a dense MLP but there is no mlp: item");
      return false;
    }
    if (k.mlp == MlpKind::moe && !items.have_moe) {
      d.error(prefix + ".layers", "a layer uses MoE but there is no moe: item");
      return false;
    }
  }
  return true;
}

}  // namespace

std::string model_to_text(const Model& m) {
  const auto n = [](std::int64_t v) { return std::to_string(v); };
  std::string out = "name:" + m.name + ";h:" + n(m.hidden) + ";v:" + n(m.vocab);
  if (m.norm == NormKind::layernorm) out += ";norm:ln";
  if (m.tied_embeddings) out += ";tied:1";
  if (m.learned_positions > 0) out += ";pos:" + n(m.learned_positions);
  if (!m.final_norm) out += ";fnorm:0";
  bool uses[3] = {false, false, false};
  bool uses_dense = false, uses_moe = false;
  auto note = [&](LayerKind k) {
    uses[static_cast<int>(k.attention)] = true;
    (k.mlp == MlpKind::dense ? uses_dense : uses_moe) = true;
  };
  for (const LayerKind& k : m.layers) note(k);
  if (m.mtp_layers > 0) note(m.mtp_layer);
  if (uses[0]) {
    const GqaShape& a = m.gqa;
    out += ";gqa:" + n(a.heads) + "," + n(a.kv_heads) + "," + n(a.head_dim);
    if (a.qk_norm) out += ",qknorm";
    if (a.qkv_bias) out += ",qkvbias";
    if (a.output_bias) out += ",obias";
    if (a.fused_qkv) out += ",fused";
  }
  if (uses[1]) {
    const MlaShape& a = m.mla;
    out += ";mla:" + n(a.heads) + "," + n(a.q_lora_rank) + "," + n(a.kv_lora_rank) + "," +
           n(a.qk_nope_head_dim) + "," + n(a.qk_rope_head_dim) + "," + n(a.v_head_dim);
    if (a.output_gate) out += ",gate";
  }
  if (uses[2]) {
    const KdaShape& a = m.kda;
    out += ";kda:" + n(a.heads) + "," + n(a.head_dim) + "," + n(a.short_conv_kernel);
    if (a.full_rank_gate) out += ",fullgate";
  }
  if (uses_dense) {
    const DenseMlpShape& d = m.dense_mlp;
    out += ";mlp:" + n(d.intermediate) +
           (d.activation == MlpActivation::swiglu ? ",swiglu" : ",gelu") + (d.bias ? ",bias" : "");
  }
  if (uses_moe) {
    const MoeShape& e = m.moe;
    out += ";moe:" + n(e.routed_experts) + "," + n(e.top_k) + "," + n(e.expert_intermediate) + "," +
           n(e.shared_experts) + "," + n(e.shared_intermediate);
    if (e.router_correction_bias) out += ",bias";
    if (e.latent_hidden > 0) out += ",latent=" + n(e.latent_hidden);
    if (e.latent_norm) out += ",lnorm";
  }
  if (m.mtp_layers > 0) out += ";mtp:" + n(m.mtp_layers) + "," + kind_text(m.mtp_layer);
  if (m.attn_res.block_size > 0) {
    out += ";ar:" + n(m.attn_res.block_size) + "," + n(m.attn_res.sites_per_layer);
  }
  out += ";layers:";
  for (std::size_t i = 0; i < m.layers.size();) {
    std::size_t run = 1;
    while (i + run < m.layers.size() && m.layers[i + run] == m.layers[i]) ++run;
    if (i > 0) out += ',';
    out += kind_text(m.layers[i]);
    if (run > 1) out += "*" + n(static_cast<std::int64_t>(run));
    i += run;
  }
  return out;
}

DecodedModel model_from_text(std::string_view text, std::string_view field_prefix) {
  DecodedModel result;
  Diagnostics& d = result.diagnostics;
  const std::string prefix(field_prefix);
  if (text.size() > 8192) {
    d.error(prefix, "the model text is longer than 8192 characters");
    return result;
  }
  ModelTextItems items;
  items.m.name = "custom";
  for (std::string_view item : split(text, ';')) {
    if (item.empty()) continue;
    const auto colon = item.find(':');
    if (colon == std::string_view::npos) {
      d.error(prefix, "'" + std::string(item.substr(0, 24)) + "' is not a key:value item");
      continue;
    }
    const std::string_view key = item.substr(0, colon);
    read_item(key, item.substr(colon + 1), prefix + "." + std::string(key.substr(0, 24)), items, d);
  }
  check_required_items(items, prefix, d);
  if (!d.ok() || !check_kinds_described(items, prefix, d)) return result;
  if (!(approximate_total(items.m) < max_total_parameters)) {
    d.error(prefix, "the described model has more than 4e18 parameters");
    return result;
  }
  result.model = std::move(items.m);
  return result;
}

}  // namespace stagemem
