// layout.h — how a model is cut into pipeline stages and split over the ranks of one stage.
//
// Purpose: which decoder layers (and which non-layer tensors) each pipeline stage holds, and how
// many parameter elements one rank of that stage keeps under tensor, expert and expert-tensor
// parallelism, for every way our users assign layers to stages (even split, an explicit list,
// Megatron's first/last-stage counts, AttnRes-aligned blocks, Megatron's layout string).
//
// Conventions (Megatron-core):
//  - the embedding lives on the first virtual stage; final norm, LM head (and the AttnRes output
//    mix) on the last; MTP layers on the last unless a layout string places them;
//  - with virtual pipeline stages (VPP) virtual stage i runs on pipeline rank i % PP as its
//    chunk i / PP; layers fill virtual stages in that order;
//  - with the DualPipeV schedule (schedule.h) there are 2 x PP virtual stages placed in a V:
//    virtual stage i < PP runs on rank i as its chunk 0, virtual stage i >= PP on rank 2PP - 1 - i
//    as its chunk 1 (DeepSeek's DualPipe, dualpipe/dualpipev.py: rank r's modules[0] is stage r,
//    modules[1] stage 2PP - 1 - r; the loss is computed on the first rank's chunk 1, and the last
//    rank's chunk 0 hands its output to its own chunk 1 without a send). So rank 0 holds the
//    embedding (chunk 0) and the final norm, LM head and loss (chunk 1);
//  - with tied embeddings the stage holding the LM head keeps its own copy of the embedding matrix
//    when it is not the embedding's chunk (gradients are all-reduced between the copies);
//  - a stage running MTP but not the embedding builds its own embedding copy (MTP embeds the
//    shifted tokens): GPTModel creates the embedding when `pre_process or mtp_process`;
//  - world = TP x PP x CP x DP; expert groups: EP x ETP x EDP = TP x CP x DP per stage.
// Units: elements (int64).
// Limitations: the vocabulary is padded to a multiple of vocab_multiple x TP (Megatron's
// `make-vocab-size-divisible-by`, default 128); sharded tensors must divide evenly (validated).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/diagnostics.h"
#include "base/enum_names.h"
#include "model/model.h"
#include "model/parameters.h"
#include "parallel/schedule.h"

namespace stagemem {

enum class StageAssignment : std::uint8_t {
  even,              // earlier virtual stages take the remainder, one layer each
  explicit_list,     // layers_per_stage, one entry per virtual stage in pipeline order
  first_last,        // Megatron --decoder-first/last-pipeline-num-layers, the rest even
  attn_res_aligned,  // whole AttnRes blocks per stage, earlier stages take extras
  layout_string,     // Megatron --pipeline-model-parallel-layout
};
template <>
struct EnumNames<StageAssignment> {
  static constexpr std::array<std::string_view, 5> names = {"even", "explicit", "first-last",
                                                            "attnres-aligned", "layout-string"};
};
static_assert(names_end_at<StageAssignment::layout_string>());
inline std::string_view stage_assignment_name(StageAssignment assignment) {
  return enum_name(assignment);
}

struct ParallelLayout {
  std::int64_t tensor_parallel = 1;
  std::int64_t pipeline_parallel = 1;
  std::int64_t virtual_stages = 1;  // model chunks per pipeline rank (Megatron's VPP size)
  std::int64_t context_parallel = 1;
  std::int64_t expert_parallel = 1;
  std::int64_t expert_tensor_parallel = 1;
  // 0 means "derive it": from world_size when given, else the smallest DP the expert groups
  // allow (EP x ETP must divide TP x CP x DP).
  std::int64_t data_parallel = 0;
  std::int64_t world_size = 0;  // 0: TP x PP x CP x DP
  bool sequence_parallel = false;
  std::int64_t vocab_multiple = 128;  // vocab padded to a multiple of vocab_multiple x TP
  StageAssignment assignment = StageAssignment::even;
  std::vector<std::int64_t> layers_per_stage{};  // explicit_list
  std::int64_t first_stage_layers = -1;          // first_last; -1: not set
  std::int64_t last_stage_layers = -1;           // first_last; -1: not set
  std::string layout_string{};                   // layout_string
  // dualpipev implies 2 chunks per rank: virtual_stages must then be 1 (unset) or 2.
  PipelineSchedule schedule = PipelineSchedule::one_f_one_b;
  friend bool operator==(const ParallelLayout&, const ParallelLayout&) = default;
};

// Layers per stage for an even split; earlier stages take the remainder, one layer each.
std::vector<std::int64_t> even_split(std::int64_t layers, std::int64_t stages);
// Whole AttnRes blocks per stage (earlier stages take extra blocks; the partial last block ends up
// on the last stage). Empty when there are fewer blocks than stages or the inputs are not positive.
std::vector<std::int64_t> attn_res_aligned_split(std::int64_t layers, std::int64_t block_size,
                                                 std::int64_t stages);

std::int64_t padded_vocab(std::int64_t vocab, const ParallelLayout& layout);

// DP as given, or derived from the world size, or the smallest one the expert groups allow.
std::int64_t data_parallel_size(const ParallelLayout& layout);
std::int64_t world_size(const ParallelLayout& layout);  // TP x PP x CP x DP
// Expert-data-parallel size: the group over which routed experts' gradients and optimizer
// state are reduced and sharded, TP x CP x DP / (EP x ETP). 0 when it does not divide.
std::int64_t expert_data_parallel_size(const ParallelLayout& layout);

// One virtual pipeline stage: a contiguous run of decoder layers plus the non-layer parts it holds.
struct VirtualStage {
  std::int64_t pipeline_rank = 0;
  std::int64_t chunk = 0;  // virtual chunk on that rank (0 without VPP)
  std::int64_t first_layer = 0;
  std::int64_t layer_count = 0;
  bool embedding = false;
  bool head = false;  // final norm, LM head (untied), AttnRes output mix
  std::int64_t first_mtp_layer = 0;
  std::int64_t mtp_layers = 0;
  friend bool operator==(const VirtualStage&, const VirtualStage&) = default;
};

struct StagePlan {
  std::int64_t pipeline_ranks = 1;
  std::int64_t chunks_per_rank = 1;
  PipelineSchedule schedule = PipelineSchedule::one_f_one_b;
  // Pipeline (model) order. 1F1B / interleaved: index = chunk x PP + rank; DualPipeV: index =
  // rank for chunk 0, 2PP - 1 - rank for chunk 1.
  std::vector<VirtualStage> virtual_stages;
  std::vector<std::int64_t> layers_per_virtual_stage() const;
  std::vector<std::int64_t> layers_per_rank() const;  // summed over each rank's chunks
};

// Assigns layers (and embedding, head, MTP) to virtual stages as the layout asks. Errors name the
// field; a warning is added for each stage boundary that splits an AttnRes block.
std::optional<StagePlan> plan_stages(const Model& model, const ParallelLayout& layout,
                                     Diagnostics& diagnostics);

// Checks that the layout fits the model (parallel sizes, divisibility, world size, layer
// assignment); every error names the field and the allowed range.
void validate_layout(const Model& model, const ParallelLayout& layout, Diagnostics& diagnostics);

// One rank's elements by how they are split; `dense()` is everything but routed experts.
struct SplitCounts {
  std::int64_t replicated = 0;  // whole on every TP rank (norms, routers, MLA down-projections)
  std::int64_t tensor_parallel = 0;     // this rank's 1/TP shard of split tensors (unpadded)
  std::int64_t expert_parallel = 0;     // this rank's 1/(EP x ETP) shard of the routed experts
  std::int64_t vocab_padding = 0;       // padding rows of vocabulary-parallel matrices
  std::int64_t embedding_replicas = 0;  // copies of an embedding held elsewhere (tied head, MTP)
  std::int64_t dense() const {
    return replicated + tensor_parallel + vocab_padding + embedding_replicas;
  }
  std::int64_t expert() const { return expert_parallel; }
  std::int64_t total() const { return dense() + expert(); }
};

// One rank's elements by tensor role (parameters.h), the key of precision and optimizer choices.
// Vocabulary padding and embedding replicas count as embedding_or_head. `weight_tensors` counts the
// separate 2-D weight tensors of each matrix role on this rank (a routed expert has 3).
struct RoleCounts {
  std::array<std::int64_t, tensor_role_count> elements{};
  std::array<std::int64_t, tensor_role_count> weight_tensors{};
  std::int64_t operator[](TensorRole role) const { return elements[static_cast<int>(role)]; }
  std::int64_t tensors(TensorRole role) const { return weight_tensors[static_cast<int>(role)]; }
  std::int64_t total() const;
};

// One pipeline rank (a "stage"): the sum of its virtual chunks.
struct StageParameters {
  std::int64_t pipeline_rank = 0;
  std::int64_t first_layer = 0;  // first decoder layer of its first chunk
  std::int64_t layer_count = 0;  // decoder layers over all its chunks
  std::vector<VirtualStage> chunks;
  ParameterCounts logical;   // unique parameters: unpadded, unsharded, no replicas
  ParameterCounts per_rank;  // one rank: TP/EP/ETP shards, padded vocabulary, replicas counted
  SplitCounts per_rank_split;
  RoleCounts per_rank_roles;
};

// One decoder layer's per-rank elements by role (its shards on one rank of its stage).
RoleCounts layer_role_counts(const Model& model, LayerKind kind, const ParallelLayout& layout);

// Requires a plan from plan_stages (or a layout that passed validate_layout).
std::vector<StageParameters> stage_parameters(const Model& model, const ParallelLayout& layout,
                                              const StagePlan& plan);
// One entry per pipeline rank, no VPP; embedding first, head and MTP last.
std::vector<StageParameters> stage_parameters(const Model& model, const ParallelLayout& layout,
                                              const std::vector<std::int64_t>& layers_per_stage);

}  // namespace stagemem
