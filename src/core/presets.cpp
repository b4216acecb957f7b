#include "presets.h"

namespace stagemem {
namespace {

Model llama_3_1_8b() {
  // meta-llama/Llama-3.1-8B config.json: h 4096, 32 layers, 32 heads, 8 KV heads, head_dim 128,
  // SwiGLU 14336, vocab 128256, untied embeddings, no biases.
  Model m;
  m.name = "llama-3.1-8b";
  m.hidden = 4096;
  m.vocab = 128256;
  m.gqa = {.heads = 32, .kv_heads = 8, .head_dim = 128};
  m.dense_mlp = {.intermediate = 14336, .activation = MlpActivation::swiglu, .bias = false};
  m.layers.assign(32, LayerKind{AttentionKind::gqa, MlpKind::dense});
  return m;
}

}  // namespace

std::vector<std::string_view> preset_names() { return {"llama-3.1-8b"}; }

std::optional<Model> find_preset(std::string_view name) {
  if (name == "llama-3.1-8b") return llama_3_1_8b();
  return std::nullopt;
}

}  // namespace stagemem
