#include "layout.h"

#include <string>

namespace stagemem {
namespace {

std::int64_t shard_elements(const Tensor& t, const ParallelLayout& layout) {
  switch (t.split) {
    case Split::replicated: return t.elements;
    case Split::tensor_parallel: return t.elements / layout.tensor_parallel;
    case Split::expert_parallel:
      return t.elements / (layout.expert_parallel * layout.expert_tensor_parallel);
  }
  return t.elements;
}

void add_tensors(StageParameters& stage, const std::vector<Tensor>& tensors,
                 const ParallelLayout& layout) {
  for (const Tensor& t : tensors) {
    stage.logical.add(t.component, t.elements);
    stage.per_rank.add(t.component, shard_elements(t, layout));
  }
}

// The vocabulary-parallel matrices are padded; the padding rows are real memory on every rank.
void add_vocab_padding(StageParameters& stage, Component component, const Model& model,
                       const ParallelLayout& layout) {
  const std::int64_t padding_rows = padded_vocab(model.vocab, layout) - model.vocab;
  stage.per_rank.add(component, padding_rows * model.hidden / layout.tensor_parallel);
}

bool divides(std::int64_t divisor, std::int64_t value) {
  return divisor > 0 && value % divisor == 0;
}

}  // namespace

std::vector<std::int64_t> even_split(std::int64_t layers, std::int64_t stages) {
  std::vector<std::int64_t> out;
  if (stages <= 0) return out;
  out.assign(static_cast<std::size_t>(stages), layers / stages);
  for (std::int64_t i = 0; i < layers % stages; ++i) out[static_cast<std::size_t>(i)] += 1;
  return out;
}

std::int64_t padded_vocab(std::int64_t vocab, const ParallelLayout& layout) {
  const std::int64_t multiple = layout.vocab_multiple * layout.tensor_parallel;
  if (multiple <= 0) return vocab;
  return (vocab + multiple - 1) / multiple * multiple;
}

void validate_layout(const Model& model, const ParallelLayout& layout, Diagnostics& d) {
  const auto layer_count = static_cast<std::int64_t>(model.layers.size());
  const std::int64_t tp = layout.tensor_parallel;
  if (tp < 1 || tp > 1024) {
    d.error("parallel.tp", "tensor parallel size must be an integer in [1, 1024], got " +
                               std::to_string(tp));
    return;
  }
  if (layout.pipeline_parallel < 1 || layout.pipeline_parallel > layer_count) {
    d.error("parallel.pp", "pipeline parallel size must be an integer in [1, " +
                               std::to_string(layer_count) + "] (the model's layer count), got " +
                               std::to_string(layout.pipeline_parallel));
  }
  if (layout.expert_parallel < 1 || layout.expert_tensor_parallel < 1) {
    d.error("parallel.ep", "expert parallel sizes must be integers >= 1");
    return;
  }
  bool uses_gqa = false, uses_mla = false, uses_kda = false, uses_moe = false;
  for (const LayerKind& k : model.layers) {
    uses_gqa |= k.attention == AttentionKind::gqa;
    uses_mla |= k.attention == AttentionKind::mla;
    uses_kda |= k.attention == AttentionKind::kda;
    uses_moe |= k.mlp == MlpKind::moe;
  }
  const std::string tp_text = std::to_string(tp);
  if (uses_gqa && !(divides(tp, model.gqa.heads) && divides(tp, model.gqa.kv_heads))) {
    d.error("parallel.tp", "tensor parallel size " + tp_text + " must divide the attention heads (" +
                               std::to_string(model.gqa.heads) + ") and KV heads (" +
                               std::to_string(model.gqa.kv_heads) + ")");
  }
  if (uses_mla && !divides(tp, model.mla.heads)) {
    d.error("parallel.tp", "tensor parallel size " + tp_text + " must divide the MLA heads (" +
                               std::to_string(model.mla.heads) + ")");
  }
  if (uses_kda && !divides(tp, model.kda.heads)) {
    d.error("parallel.tp", "tensor parallel size " + tp_text + " must divide the KDA heads (" +
                               std::to_string(model.kda.heads) + ")");
  }
  if (model.dense_mlp.intermediate > 0 && !divides(tp, model.dense_mlp.intermediate)) {
    d.error("parallel.tp", "tensor parallel size " + tp_text +
                               " must divide the dense MLP intermediate size (" +
                               std::to_string(model.dense_mlp.intermediate) + ")");
  }
  if (uses_moe && !divides(layout.expert_parallel, model.moe.routed_experts)) {
    d.error("parallel.ep", "expert parallel size " + std::to_string(layout.expert_parallel) +
                               " must divide the routed experts (" +
                               std::to_string(model.moe.routed_experts) + ")");
  }
}

std::vector<StageParameters> stage_parameters(const Model& model, const ParallelLayout& layout,
                                              const std::vector<std::int64_t>& layers_per_stage) {
  std::vector<StageParameters> stages(layers_per_stage.size());
  if (stages.empty()) return stages;
  std::int64_t next_layer = 0;
  for (std::size_t s = 0; s < stages.size(); ++s) {
    StageParameters& stage = stages[s];
    stage.first_layer = next_layer;
    stage.layer_count = layers_per_stage[s];
    for (std::int64_t i = 0; i < stage.layer_count; ++i) {
      add_tensors(stage, layer_tensors(model, model.layers[static_cast<std::size_t>(next_layer + i)]),
                  layout);
    }
    next_layer += stage.layer_count;
  }
  StageParameters& first = stages.front();
  StageParameters& last = stages.back();
  add_tensors(first, embedding_tensors(model), layout);
  add_vocab_padding(first, Component::embedding, model, layout);
  add_tensors(last, head_tensors(model), layout);
  if (!model.tied_embeddings) {
    add_vocab_padding(last, Component::lm_head, model, layout);
  } else if (stages.size() > 1) {
    // The last stage's replica of the tied embedding: real memory, not a unique parameter, so it
    // is counted per rank only.
    const std::int64_t rows = padded_vocab(model.vocab, layout);
    last.per_rank.add(Component::lm_head, rows * model.hidden / layout.tensor_parallel);
  }
  add_tensors(last, mtp_tensors(model), layout);
  return stages;
}

}  // namespace stagemem
