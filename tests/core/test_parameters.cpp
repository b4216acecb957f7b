// Tests of parameters.h: exact counts, tensor by tensor.
#include "catch.h"
#include "model/parameters.h"
#include "model/presets.h"

using namespace stagemem;

TEST_CASE("Llama-3.1-8B has exactly 8,030,261,248 parameters (HF safetensors total)") {
  const Model m = *find_preset("llama-3.1-8b");
  // Per layer: q 4096*4096 + k,v 2*4096*1024 + o 4096*4096 = 41,943,040 attention;
  // 3*4096*14336 = 176,160,768 SwiGLU; 2*4096 = 8,192 norms -> 218,112,000.
  // 32 layers = 6,979,584,000; embedding + LM head 2*128,256*4,096 = 1,050,673,152; final norm
  // 4,096.
  const ParameterCounts counts = model_parameters(m);
  CHECK(counts[Component::attention_gqa] == 32 * 41'943'040LL);
  CHECK(counts[Component::dense_mlp] == 32 * 176'160'768LL);
  CHECK(counts[Component::norms] == 32 * 8'192LL + 4'096);
  CHECK(counts[Component::embedding] == 525'336'576LL);
  CHECK(counts[Component::lm_head] == 525'336'576LL);
  CHECK(counts.total() == 8'030'261'248LL);
  CHECK(total_parameters_without_mtp(m) == 8'030'261'248LL);
}

TEST_CASE("Tied embeddings drop the LM head tensor") {
  Model m = *find_preset("llama-3.1-8b");
  m.tied_embeddings = true;
  CHECK(total_parameters(m) == 8'030'261'248LL - 525'336'576LL);
}

TEST_CASE("Biases and LayerNorm add exactly their vectors") {
  Model m = *find_preset("llama-3.1-8b");
  const std::int64_t base = count_tensors(layer_tensors(m, m.layers[0])).total();
  m.gqa.qkv_bias = true;  // q 4096 + k 1024 + v 1024
  CHECK(count_tensors(layer_tensors(m, m.layers[0])).total() == base + 6'144);
  m.norm = NormKind::layernorm;  // two norms gain a bias of h each
  CHECK(count_tensors(layer_tensors(m, m.layers[0])).total() == base + 6'144 + 2 * 4'096);
}

TEST_CASE("Every component has a distinct name") {
  for (int i = 0; i < component_count; ++i) {
    for (int j = i + 1; j < component_count; ++j) {
      CHECK(component_name(static_cast<Component>(i)) != component_name(static_cast<Component>(j)));
    }
  }
}

TEST_CASE("Tensor roles: what Muon and low-precision storage key on") {
  CHECK(tensor_role({"self_attn.q_proj.weight", Component::attention_gqa, Split::tensor_parallel,
                     1}) == TensorRole::hidden_matrix);
  CHECK(tensor_role({"embed_tokens.weight", Component::embedding, Split::tensor_parallel, 1}) ==
        TensorRole::embedding_or_head);
  CHECK(tensor_role({"lm_head.weight", Component::lm_head, Split::tensor_parallel, 1}) ==
        TensorRole::embedding_or_head);
  CHECK(tensor_role({"mlp.gate.weight", Component::router, Split::replicated, 1}) ==
        TensorRole::router_matrix);
  CHECK(tensor_role({"mlp.gate.e_score_correction_bias", Component::router, Split::replicated,
                     1}) == TensorRole::vector);
  CHECK(tensor_role({"self_attn.A_log", Component::attention_kda, Split::tensor_parallel, 1}) ==
        TensorRole::vector);
  CHECK(tensor_role({"self_attn.q_conv1d.weight", Component::attention_kda, Split::tensor_parallel,
                     1}) == TensorRole::convolution);
  // MTP keeps its layers' names; norms inside it are vectors, expert stacks stay expert matrices.
  CHECK(tensor_role({"input_layernorm.weight", Component::mtp, Split::replicated, 1}) ==
        TensorRole::vector);
  CHECK(tensor_role({"mlp.experts.*.{gate,up,down}_proj.weight", Component::mtp,
                     Split::expert_parallel, 1}) == TensorRole::expert_matrix);
}
