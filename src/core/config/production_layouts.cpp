#include "config/production_layouts.h"

namespace stagemem {

std::optional<PresetLayout> preset_production_layout(std::string_view name) {
  if (name == "kimi-k3") {
    // The users' production planning: TP 1, PP 8, EP 28 on 28 nodes of 8 GPUs (world 224, so
    // DP 28 and an expert-data-parallel group of 1); whole AttnRes blocks per stage, the
    // 9-layer remainder on the last stage.
    ParallelLayout layout;
    layout.tensor_parallel = 1;
    layout.pipeline_parallel = 8;
    layout.expert_parallel = 28;
    layout.world_size = 224;
    layout.assignment = StageAssignment::explicit_list;
    layout.layers_per_stage = {12, 12, 12, 12, 12, 12, 12, 9};
    // Their production optimizer is Megatron's distributed Muon (layer-wise distributed
    // optimizer); the parameter-gather implementation stays Megatron's current one (in place).
    const OptimizerConfig optimizer{.kind = OptimizerKind::distributed_muon};
    return PresetLayout{
        layout, optimizer,
        "TP 1, PP 8, EP 28 on 224 GPUs (DP 28), stages [12 x 7, 9]; distributed Muon"};
  }
  return std::nullopt;
}

}  // namespace stagemem
