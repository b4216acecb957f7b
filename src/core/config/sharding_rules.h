// sharding_rules.h — the data-parallel sharding a configuration resolves to, and its checks.
//
// Purpose: turns the `auto` choices of sharding.h into what runs (Megatron's DDP with or without
// the distributed optimizer, Megatron-FSDP, FSDP2), with the group sizes each sharded tensor is
// divided over, and lists the combinations the stacks refuse or stagemem does not model, each
// as an error naming the field.
// Group sizes (ranks):
//  - dense state: the shard group x CP (Megatron's data-parallel group with context parallelism;
//    torchtitan folds CP into its FSDP mesh, dp_shard_cp);
//  - routed-expert state: the expert-data-parallel group (TP x CP x DP / (EP x ETP)) divided by
//    the replicate group (HSDP replicates expert shards the same way);
//  - megatron-ddp with a shard group below DP is Megatron's --num-distributed-optimizer-instances
//    = DP / shard group (each instance holds a whole copy of the optimizer state).
// Units: ranks (int64).
// Limitations: FSDP2 and Megatron-FSDP are modelled with bf16 (or fp32) weights and Adam; fp8
// primary weights, Muon and CPU offload under sharded parameters are refused, not approximated.
#pragma once

#include <cstdint>

#include "base/diagnostics.h"
#include "config/config.h"

namespace stagemem {

struct ResolvedSharding {
  Framework framework = Framework::megatron_core;
  DataParallelImpl implementation = DataParallelImpl::megatron_ddp;  // never automatic
  ShardingStrategy strategy = ShardingStrategy::no_shard;            // never automatic
  std::int64_t dense_shards = 1;   // ranks one dense shard group spans (x CP)
  std::int64_t expert_shards = 1;  // ranks one routed-expert shard group spans
  std::int64_t replicate = 1;      // HSDP replicate group (optimizer instances under megatron-ddp)
  // FSDP2 between a unit's forward and its backward: resharded (true) or kept gathered (false);
  // post_forward_ranks k > 1: kept sharded over k ranks (reshard_after_forward=k).
  bool reshard_after_forward = true;
  // torchtitan's norm + output unit: resharded after forward only under "always" (fsdp.py).
  bool reshard_head_after_forward = true;
  std::int64_t post_forward_ranks = 0;
  std::int64_t reduce_bytes = 4;  // FSDP2 reduce dtype
  // FSDP2 under pipeline parallelism: torch.distributed.pipelining defers the reduce-scatter to
  // the step's last backward (stage.py backward_maybe_with_nosync).
  bool deferred_reduce = false;
  std::int64_t forward_prefetch = 0;
  // Megatron-FSDP keeps the non-unit parameters gathered across steps (version rule
  // megatron-fsdp-keeps-non-unit-buckets); before, only from the forward to the backward's end.
  bool keeps_non_unit_gathered = true;
  bool shards_state() const { return strategy >= ShardingStrategy::optim; }
  bool shards_grads() const { return strategy >= ShardingStrategy::optim_grads; }
  bool shards_params() const { return strategy == ShardingStrategy::optim_grads_params; }
  bool fsdp() const { return implementation != DataParallelImpl::megatron_ddp; }
  friend bool operator==(const ResolvedSharding&, const ResolvedSharding&) = default;
};

// What the sharding transients read (memory/sharding_terms.h): the resolved sharding and the
// dtypes Megatron-FSDP gathers parameters (the weights') and queues gradients (main grads') in.
struct ShardingPieceInputs {
  ResolvedSharding sharding{};
  std::int64_t weight_bytes = 2;
  std::int64_t grad_bytes = 4;
  friend bool operator==(const ShardingPieceInputs&, const ShardingPieceInputs&) = default;
};
ShardingPieceInputs sharding_piece_inputs(const Config& config);

// Requires the layout's sizes to be valid (data_parallel_size > 0).
ResolvedSharding resolve_sharding(const TrainingConfig& training, const OptimizerConfig& optimizer,
                                  const ParallelLayout& layout);

// Errors (named sharding.* or framework) for combinations the stacks refuse or stagemem does not
// model; nothing for a valid one.
void validate_sharding(const Config& config, Diagnostics& d);

}  // namespace stagemem
