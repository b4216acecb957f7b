// sharding.h — how data parallelism shards the model state, and which training framework runs it.
//
// Purpose: the inputs of the sharded resident terms and of the gather / reduce-scatter transients
// (memory/sharding_terms.h), spelled as Megatron-core and PyTorch spell them:
//  - framework: megatron-core (TransformerEngine modules, Megatron's DDP or Megatron-FSDP) or
//    torchtitan (PyTorch modules sharded by FSDP2's fully_shard);
//  - implementation: megatron-ddp (Megatron's DistributedDataParallel with, when the optimizer is
//    distributed, the distributed optimizer), megatron-fsdp (`--use-megatron-fsdp`, Megatron-core
//    megatron_fsdp/), fsdp2 (torch.distributed.fsdp fully_shard); auto: megatron-ddp under
//    megatron-core, fsdp2 under torchtitan;
//  - strategy: Megatron-FSDP's `--data-parallel-sharding-strategy` names, which are the ZeRO
//    stages: no_shard (DDP), optim (ZeRO-1), optim_grads (ZeRO-2), optim_grads_params (ZeRO-3,
//    FSDP's FULL_SHARD); auto: what the optimizer kind says under megatron-ddp (distributed-*:
//    optim), optim_grads_params under megatron-fsdp and fsdp2;
//  - shard_group: ranks one shard group spans (HSDP: shard group x replicate group = DP); 0: the
//    whole data-parallel group. Under megatron-ddp it is DP / Megatron's
//    --num-distributed-optimizer-instances;
//  - reshard_after_forward (FSDP2): default (PyTorch's: true for every unit but the root;
//    torchtitan's fsdp_reshard_after_forward "default": true without pipeline parallelism, false
//    with it), always, never; reshard_ranks k >= 2: FSDP2's int value (parameters stay sharded
//    over k ranks between forward and backward);
//  - reduce_dtype: FSDP2 MixedPrecisionPolicy.reduce_dtype (torchtitan's mixed_precision_reduce,
//    fp32 by default); the parameters are gathered in bf16 (param_dtype bf16, the policy every
//    recipe uses; fp32 compute is not modelled);
//  - forward_prefetch: units FSDP2 prefetches explicitly in forward (set_modules_to_forward_
//    prefetch), on top of the implicit one-unit-ahead all-gather;
//  - overlap_grad_reduce, ddp_bucket_size: Megatron DDP's --overlap-grad-reduce and
//    --ddp-bucket-size (elements; 0: Megatron's default max(40M, 1M x DP x CP)). They decide
//    where the gradient buckets, and so the distributed optimizer's shard boundaries, fall
//    (memory/parameter_tensors.h): buckets exist only with overlap_grad_reduce, and only in the
//    first model chunk of pipeline rank 0.
// Units: ranks and units are counts.
// Allowed ranges (validate() names the field): shard_group [0, 2^20], a divisor of DP;
// reshard_ranks 0 or [2, 2^20], a divisor of the shard group (fsdp2 only); forward_prefetch
// [0, 16]; ddp_bucket_size [0, 2^40].
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

#include "base/enum_names.h"

namespace stagemem {

enum class Framework : std::uint8_t { megatron_core, torchtitan };
template <>
struct EnumNames<Framework> {
  static constexpr std::array<std::string_view, 2> names = {"megatron-core", "torchtitan"};
};
static_assert(names_end_at<Framework::torchtitan>());

enum class DataParallelImpl : std::uint8_t { automatic, megatron_ddp, megatron_fsdp, fsdp2 };
template <>
struct EnumNames<DataParallelImpl> {
  static constexpr std::array<std::string_view, 4> names = {"auto", "megatron-ddp", "megatron-fsdp",
                                                            "fsdp2"};
};
static_assert(names_end_at<DataParallelImpl::fsdp2>());

enum class ShardingStrategy : std::uint8_t {
  automatic,
  no_shard,
  optim,
  optim_grads,
  optim_grads_params
};
template <>
struct EnumNames<ShardingStrategy> {
  static constexpr std::array<std::string_view, 5> names = {"auto", "no_shard", "optim",
                                                            "optim_grads", "optim_grads_params"};
};
static_assert(names_end_at<ShardingStrategy::optim_grads_params>());

enum class ReshardAfterForward : std::uint8_t { framework_default, always, never };
template <>
struct EnumNames<ReshardAfterForward> {
  static constexpr std::array<std::string_view, 3> names = {"default", "always", "never"};
};
static_assert(names_end_at<ReshardAfterForward::never>());

enum class ReduceDtype : std::uint8_t { fp32, bf16 };
template <>
struct EnumNames<ReduceDtype> {
  static constexpr std::array<std::string_view, 2> names = {"fp32", "bf16"};
};
static_assert(names_end_at<ReduceDtype::bf16>());

struct DataParallelSharding {
  DataParallelImpl implementation = DataParallelImpl::automatic;
  ShardingStrategy strategy = ShardingStrategy::automatic;
  std::int64_t shard_group = 0;
  ReshardAfterForward reshard_after_forward = ReshardAfterForward::framework_default;
  std::int64_t reshard_ranks = 0;
  ReduceDtype reduce_dtype = ReduceDtype::fp32;
  std::int64_t forward_prefetch = 0;
  bool overlap_grad_reduce = false;
  std::int64_t ddp_bucket_size = 0;
  friend bool operator==(const DataParallelSharding&, const DataParallelSharding&) = default;
};

}  // namespace stagemem
