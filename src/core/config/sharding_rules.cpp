#include "config/sharding_rules.h"

#include <algorithm>
#include <string>
#include <utility>

#include "config/version_rules.h"

namespace stagemem {
namespace {

DataParallelImpl implementation_of(const TrainingConfig& training) {
  if (training.sharding.implementation != DataParallelImpl::automatic) {
    return training.sharding.implementation;
  }
  return training.framework == Framework::torchtitan ? DataParallelImpl::fsdp2
                                                     : DataParallelImpl::megatron_ddp;
}

ShardingStrategy strategy_of(const TrainingConfig& training, const OptimizerConfig& optimizer,
                             DataParallelImpl implementation) {
  if (training.sharding.strategy != ShardingStrategy::automatic) return training.sharding.strategy;
  if (implementation != DataParallelImpl::megatron_ddp) return ShardingStrategy::optim_grads_params;
  const bool distributed = optimizer.kind == OptimizerKind::distributed_adam ||
                           optimizer.kind == OptimizerKind::distributed_muon;
  return distributed ? ShardingStrategy::optim : ShardingStrategy::no_shard;
}

std::int64_t shard_group_of(const DataParallelSharding& s, std::int64_t dp) {
  return s.shard_group > 0 ? s.shard_group : dp;
}

bool is_muon_kind(OptimizerKind kind) {
  return kind == OptimizerKind::muon || kind == OptimizerKind::distributed_muon;
}

std::string number(std::int64_t value) {
  return std::to_string(value);
}

}  // namespace

ResolvedSharding resolve_sharding(const TrainingConfig& training, const OptimizerConfig& optimizer,
                                  const ParallelLayout& layout) {
  ResolvedSharding r;
  r.framework = training.framework;
  r.implementation = implementation_of(training);
  r.strategy = strategy_of(training, optimizer, r.implementation);
  const std::int64_t dp = std::max<std::int64_t>(data_parallel_size(layout), 1);
  const std::int64_t group = shard_group_of(training.sharding, dp);
  r.replicate = group > 0 && dp % group == 0 ? dp / group : 1;
  if (r.shards_state()) {
    r.dense_shards = (dp / r.replicate) * std::max<std::int64_t>(layout.context_parallel, 1);
    const std::int64_t edp = std::max<std::int64_t>(expert_data_parallel_size(layout), 1);
    r.expert_shards = edp % r.replicate == 0 ? edp / r.replicate : edp;
  }
  r.keeps_non_unit_gathered =
      rule_holds(training.stack, VersionRule::megatron_fsdp_keeps_non_unit_buckets);
  if (r.implementation == DataParallelImpl::fsdp2) {
    switch (training.sharding.reshard_after_forward) {
      case ReshardAfterForward::always:
        r.reshard_after_forward = true;
        break;
      case ReshardAfterForward::never:
        r.reshard_after_forward = false;
        break;
      case ReshardAfterForward::framework_default:
        // torchtitan/distributed/fsdp.py: "default" reshards only without pipeline parallelism;
        // PyTorch's own default (None) reshards every unit but the root.
        r.reshard_after_forward =
            training.framework != Framework::torchtitan || layout.pipeline_parallel == 1;
        break;
    }
    r.reshard_head_after_forward =
        training.framework != Framework::torchtitan ||
        training.sharding.reshard_after_forward == ReshardAfterForward::always;
    r.post_forward_ranks = training.sharding.reshard_ranks;
    if (r.post_forward_ranks > 1) r.reshard_after_forward = true;
    r.reduce_bytes = training.sharding.reduce_dtype == ReduceDtype::fp32 ? 4 : 2;
    r.deferred_reduce = layout.pipeline_parallel > 1;
    r.forward_prefetch = training.sharding.forward_prefetch;
  }
  return r;
}

ShardingPieceInputs sharding_piece_inputs(const Config& config) {
  return {.sharding = resolve_sharding(config.training, config.optimizer, config.parallel),
          .weight_bytes = config.precision.dense_weights == WeightDtype::fp32 ? 4 : 2,
          .grad_bytes = config.precision.grads == GradDtype::fp32 ? 4 : 2};
}

void validate_sharding(const Config& config, Diagnostics& d) {
  const TrainingConfig& t = config.training;
  const DataParallelSharding& s = t.sharding;
  if (static_cast<std::size_t>(t.framework) >= enum_names<Framework>.size()) {
    d.error("framework", one_of(enum_names<Framework>));
    return;
  }
  if (static_cast<std::size_t>(s.implementation) >= enum_names<DataParallelImpl>.size()) {
    d.error("sharding.implementation", one_of(enum_names<DataParallelImpl>));
    return;
  }
  if (static_cast<std::size_t>(s.strategy) >= enum_names<ShardingStrategy>.size()) {
    d.error("sharding.strategy", one_of(enum_names<ShardingStrategy>));
    return;
  }
  const DataParallelImpl impl = implementation_of(t);
  const std::int64_t dp = data_parallel_size(config.parallel);
  if (t.framework == Framework::torchtitan && impl != DataParallelImpl::fsdp2) {
    d.error("sharding.implementation",
            "torchtitan shards data parallelism with FSDP2 (fully_shard): use fsdp2 or auto");
  }
  if (impl == DataParallelImpl::fsdp2 && t.framework != Framework::torchtitan) {
    d.error("sharding.implementation",
            "FSDP2 is modelled as torchtitan runs it (PyTorch modules): set framework torchtitan; "
            "Megatron-core shards parameters with megatron-fsdp");
  }
  const ShardingStrategy strategy = strategy_of(t, config.optimizer, impl);
  if (impl == DataParallelImpl::megatron_ddp && strategy > ShardingStrategy::optim) {
    d.error("sharding.strategy",
            "Megatron's DDP shards at most the optimizer state (the distributed optimizer); "
            "optim_grads and optim_grads_params need sharding.implementation megatron-fsdp "
            "(--use-megatron-fsdp) or fsdp2");
  }
  if (impl == DataParallelImpl::megatron_ddp && strategy == ShardingStrategy::no_shard &&
      (config.optimizer.kind == OptimizerKind::distributed_adam ||
       config.optimizer.kind == OptimizerKind::distributed_muon)) {
    d.error("sharding.strategy",
            "no_shard contradicts optimizer.kind " +
                std::string(optimizer_kind_name(config.optimizer.kind)) +
                ", which shards the optimizer state: use optim or a non-distributed optimizer");
  }
  if (impl == DataParallelImpl::fsdp2 && strategy != ShardingStrategy::optim_grads_params) {
    d.error("sharding.strategy",
            "FSDP2 (fully_shard) always shards parameters, gradients and optimizer state: use "
            "optim_grads_params (reshard_after_forward never keeps the parameters gathered "
            "between forward and backward, as ZeRO-2 does)");
  }
  if (impl != DataParallelImpl::megatron_ddp) {
    if (is_muon_kind(config.optimizer.kind)) {
      d.error("optimizer.kind",
              "Muon under Megatron-FSDP or FSDP2 is not modelled: use adam or distributed-adam");
    }
    for (const auto& [dtype, field] :
         {std::pair{config.precision.dense_weights, "precision.dense_weights"},
          std::pair{config.precision.expert_weights, "precision.expert_weights"}}) {
      if (dtype != WeightDtype::bf16 && dtype != WeightDtype::fp32) {
        d.error(field,
                "quantised primary weights under sharded data parallelism (fp8/fp4 parameter "
                "all-gather) are not modelled: use bf16 weights");
      }
    }
  }
  if (t.framework == Framework::torchtitan && t.low_precision.quantised()) {
    d.error("precision.fp8_recipe",
            "torchtitan's float8 training (torchao Float8Linear) is not modelled; the recipes are "
            "TransformerEngine's: use fp8_recipe none with framework torchtitan");
  }
  if (s.shard_group < 0 || s.shard_group > (std::int64_t{1} << 20)) {
    d.error("sharding.shard_group",
            "must be an integer in [0, 1048576] (0: the whole data-parallel group), got " +
                number(s.shard_group));
  } else if (s.shard_group > 0 && dp > 0 && dp % s.shard_group != 0) {
    d.error("sharding.shard_group",
            "must divide the data-parallel size " + number(dp) + ", got " + number(s.shard_group));
  } else if (s.shard_group > 0 && dp > 0 && s.shard_group < dp) {
    const std::int64_t replicate = dp / s.shard_group;
    const std::int64_t edp = expert_data_parallel_size(config.parallel);
    if (edp > 0 && edp % replicate != 0) {
      d.error("sharding.shard_group",
              "the replicate group DP / shard_group = " + number(replicate) +
                  " must divide the expert-data-parallel size " + number(edp));
    }
    if (strategy == ShardingStrategy::no_shard) {
      d.warn("sharding.shard_group", "a shard group has no effect without sharding");
    }
  }
  if (s.reshard_ranks != 0) {
    if (s.reshard_ranks < 2 || s.reshard_ranks > (std::int64_t{1} << 20)) {
      d.error("sharding.reshard_ranks",
              "must be 0 (off) or an integer in [2, 1048576], got " + number(s.reshard_ranks));
    } else if (impl != DataParallelImpl::fsdp2) {
      d.error("sharding.reshard_ranks", "reshard_after_forward=int is FSDP2's: needs fsdp2");
    } else {
      const std::int64_t group = shard_group_of(s, dp);
      if (group % s.reshard_ranks != 0 || s.reshard_ranks >= group) {
        d.error("sharding.reshard_ranks", "must divide the shard group " + number(group) +
                                              " and be smaller than it, got " +
                                              number(s.reshard_ranks));
      }
    }
  }
  if (s.forward_prefetch < 0 || s.forward_prefetch > 16) {
    d.error("sharding.forward_prefetch",
            "must be an integer in [0, 16], got " + number(s.forward_prefetch));
  }
  if (s.ddp_bucket_size < 0 || s.ddp_bucket_size > (std::int64_t{1} << 40)) {
    d.error("sharding.ddp_bucket_size",
            "must be an integer in [0, 1099511627776] elements (0: Megatron's default), got " +
                number(s.ddp_bucket_size));
  } else if (s.ddp_bucket_size > 0 && !s.overlap_grad_reduce) {
    d.warn("sharding.ddp_bucket_size",
           "Megatron uses buckets only with overlap_grad_reduce: the bucket size has no effect");
  }
  if (s.overlap_grad_reduce && impl != DataParallelImpl::megatron_ddp) {
    d.warn("sharding.overlap_grad_reduce",
           "the gradient buckets modelled are Megatron DDP's; no effect with " +
               std::string(enum_name(impl)));
  }
}

}  // namespace stagemem
