// layout.h — how a model is cut into pipeline stages and split over the ranks of one stage.
//
// Purpose: which decoder layers (and which non-layer tensors) each pipeline stage holds, and how
// many parameter elements one rank of that stage keeps under tensor and expert parallelism.
// Convention (Megatron-core): the embedding lives on the first stage; final norm, LM head and MTP
// on the last. With tied embeddings and more than one stage, the last stage keeps its own copy of
// the embedding matrix as the LM head (its gradient is all-reduced with the first stage's).
// Units: elements (int64).
// Limitations: even split only for now; the vocabulary is padded to a multiple of
// 128 x TP (Megatron's default `make-vocab-size-divisible-by` of 128).
#pragma once

#include <cstdint>
#include <vector>

#include "diagnostics.h"
#include "model.h"
#include "parameters.h"

namespace stagemem {

struct ParallelLayout {
  std::int64_t tensor_parallel = 1;
  std::int64_t pipeline_parallel = 1;
  std::int64_t expert_parallel = 1;
  std::int64_t expert_tensor_parallel = 1;
  std::int64_t vocab_multiple = 128;  // vocab padded to a multiple of vocab_multiple x TP
  friend bool operator==(const ParallelLayout&, const ParallelLayout&) = default;
};

// Layers per stage for an even split; earlier stages take the remainder, one layer each.
std::vector<std::int64_t> even_split(std::int64_t layers, std::int64_t stages);

std::int64_t padded_vocab(std::int64_t vocab, const ParallelLayout& layout);

// Checks that the layout fits the model; every error names the field and the allowed range.
void validate_layout(const Model& model, const ParallelLayout& layout, Diagnostics& diagnostics);

struct StageParameters {
  std::int64_t first_layer = 0;  // 0-based index of the first decoder layer on the stage
  std::int64_t layer_count = 0;
  ParameterCounts logical;   // whole-stage, unpadded, unsharded
  ParameterCounts per_rank;  // one rank: TP/EP/ETP shards, padded vocabulary, replicas counted
};

// Requires a layout that passed validate_layout.
std::vector<StageParameters> stage_parameters(const Model& model, const ParallelLayout& layout,
                                              const std::vector<std::int64_t>& layers_per_stage);

}  // namespace stagemem
