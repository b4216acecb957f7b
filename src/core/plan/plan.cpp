#include "plan/plan.h"

#include "config/sharding_rules.h"

#include "config/low_precision_rules.h"

#include <algorithm>
#include <array>
#include <limits>
#include <map>

#include "base/checked_math.h"
#include "base/units.h"
#include "config/devices.h"
#include "config/measurement_text.h"
#include "estimate/estimate.h"
#include "model/parameters.h"
#include "parallel/layout.h"
#include "plan/layout_advisor.h"
#include "report/report.h"

namespace stagemem {
namespace {

std::string text(std::int64_t n) {
  return std::to_string(n);
}

// a x b, or -1 when it would pass 2^62 (no real GPU count or token count comes near).
std::int64_t checked_product(std::int64_t a, std::int64_t b) {
  std::int64_t out = 0;
  if (__builtin_mul_overflow(a, b, &out) || out > (std::int64_t{1} << 62)) return -1;
  return out;
}

std::vector<std::int64_t> divisors(std::int64_t n) {
  std::vector<std::int64_t> low, high;
  for (std::int64_t d = 1; d * d <= n; ++d) {
    if (n % d != 0) continue;
    low.push_back(d);
    if (d != n / d) high.push_back(n / d);
  }
  low.insert(low.end(), high.rbegin(), high.rend());
  return low;
}

bool uses_moe(const Model& model) {
  for (const LayerKind& k : model.layers) {
    if (k.mlp == MlpKind::moe) return true;
  }
  return false;
}

// Forward FLOPs per token of one decoder layer of a kind, split the way recompute choices split
// it (selective recompute names Megatron modules).
struct LayerFlops {
  double projections = 0.0;  // attention projections other than MLA's up-projections, convs
  double mla_up = 0.0;       // q_b_proj, kv_b_proj
  double core = 0.0;         // attention core (QK^T, PV or the KDA chunk kernel)
  double dense_mlp = 0.0;
  double routed = 0.0;  // top-k routed experts and latent projections
  double shared = 0.0;
  double router = 0.0;
  double total() const {
    return projections + mla_up + core + dense_mlp + routed + shared + router;
  }
};

double attention_core_flops(const Model& model, AttentionKind kind, double seq, double kda_chunk) {
  switch (kind) {
    case AttentionKind::gqa:
      // QK^T: 2 x heads x head_dim x S/2, PV: the same (causal: S/2 keys on average).
      return 2.0 * static_cast<double>(model.gqa.heads * model.gqa.head_dim) * seq;
    case AttentionKind::mla: {
      const MlaShape& a = model.mla;
      const double qk = static_cast<double>(a.qk_nope_head_dim + a.qk_rope_head_dim);
      return static_cast<double>(a.heads) * (qk + static_cast<double>(a.v_head_dim)) * seq;
    }
    case AttentionKind::kda: {
      const double d = static_cast<double>(model.kda.head_dim);
      const double chunk = std::min(kda_chunk, seq);
      return static_cast<double>(model.kda.heads) * (2.0 * d * chunk + 4.0 * d * d);
    }
  }
  return 0.0;
}

// 2 x elements of each 2-D weight (expert stacks at top-k / experts), into its bucket.
void add_matrix_flops(const Model& model, const std::vector<Tensor>& tensors, LayerFlops& f) {
  const double active =
      model.moe.routed_experts > 0
          ? static_cast<double>(model.moe.top_k) / static_cast<double>(model.moe.routed_experts)
          : 0.0;
  for (const Tensor& t : tensors) {
    const TensorRole role = tensor_role(t);
    if (role == TensorRole::vector || role == TensorRole::embedding_or_head) continue;
    double flops = 2.0 * static_cast<double>(t.elements);
    if (role == TensorRole::expert_matrix) flops *= active;
    switch (t.component) {
      case Component::attention_mla:
        if (t.name.find("q_b_proj") != std::string_view::npos ||
            t.name.find("kv_b_proj") != std::string_view::npos) {
          f.mla_up += flops;
        } else {
          f.projections += flops;
        }
        break;
      case Component::dense_mlp:
        f.dense_mlp += flops;
        break;
      case Component::routed_experts:
        f.routed += flops;
        break;
      case Component::shared_experts:
        f.shared += flops;
        break;
      case Component::router:
        f.router += flops;
        break;
      default:
        f.projections += flops;  // attention projections, convolutions, MTP eh_proj
        break;
    }
  }
}

LayerFlops layer_flops(const Model& model, LayerKind kind, const TrainingConfig& training) {
  LayerFlops f;
  add_matrix_flops(model, layer_tensors(model, kind), f);
  f.core =
      attention_core_flops(model, kind.attention, static_cast<double>(training.sequence_length),
                           static_cast<double>(training.kernels.kda_chunk));
  return f;
}

double selective_flops(const LayerFlops& f, LayerKind kind, std::uint32_t modules) {
  const auto has = [modules](RecomputeModule m) { return (modules & module_bit(m)) != 0; };
  double r = 0.0;
  if (has(RecomputeModule::core_attn)) r += f.core;
  if (has(RecomputeModule::mla_up_proj) && kind.attention == AttentionKind::mla) r += f.mla_up;
  if (has(RecomputeModule::mlp) && kind.mlp == MlpKind::dense) r += f.dense_mlp;
  if (kind.mlp == MlpKind::moe) {
    if (has(RecomputeModule::moe)) {
      r += f.routed + f.shared + f.router;
    } else if (has(RecomputeModule::shared_experts)) {
      r += f.shared;
    }
  }
  // moe_act and layernorm recompute elementwise work only: no matmul FLOPs.
  return r;
}

}  // namespace

double bubble_fraction(std::int64_t pipeline, std::int64_t virtual_stages,
                       std::int64_t micro_batches) {
  if (pipeline <= 1 || micro_batches <= 0) return 0.0;
  return static_cast<double>(pipeline - 1) /
         static_cast<double>(std::max<std::int64_t>(1, virtual_stages) * micro_batches);
}

StepFlops step_flops(const Config& config, const Model& model) {
  StepFlops out;
  const TrainingConfig& t = config.training;
  // Six kinds at most: compute each kind's split once.
  std::array<LayerFlops, 6> per_kind{};
  std::array<bool, 6> known{};
  const auto flops_of = [&](LayerKind kind) -> const LayerFlops& {
    const auto i =
        static_cast<std::size_t>(static_cast<int>(kind.attention) * 2 + static_cast<int>(kind.mlp));
    if (!known[i]) {
      per_kind[i] = layer_flops(model, kind, t);
      known[i] = true;
    }
    return per_kind[i];
  };
  double decoder = 0.0;
  for (const LayerKind& kind : model.layers) decoder += flops_of(kind).total();
  const double head = 2.0 * static_cast<double>(model.hidden) * static_cast<double>(model.vocab);
  double mtp = 0.0;
  if (model.mtp_layers > 0) {
    LayerFlops m;
    add_matrix_flops(model, mtp_tensors(model), m);
    mtp = m.total() + static_cast<double>(model.mtp_layers) *
                          (head + attention_core_flops(model, model.mtp_layer.attention,
                                                       static_cast<double>(t.sequence_length),
                                                       static_cast<double>(t.kernels.kda_chunk)));
  }
  out.forward_per_token = decoder + head + mtp;

  const RecomputeConfig& rc = t.recompute;
  if (rc.policy == RecomputePolicy::selective) {
    for (const LayerKind& kind : model.layers)
      out.recomputed_per_token += selective_flops(flops_of(kind), kind, rc.modules);
  } else if (rc.policy == RecomputePolicy::full && rc.method == FullRecomputeMethod::uniform) {
    // Uniform: every layer is recomputed, rc.layers at a time.
    out.recomputed_per_token = decoder;
  } else if (rc.policy == RecomputePolicy::full) {
    // Block: the first rc.layers layers of every virtual chunk are recomputed.
    Diagnostics ignored;
    if (const auto plan = plan_stages(model, config.parallel, ignored)) {
      for (const VirtualStage& v : plan->virtual_stages) {
        const std::int64_t n = std::min(rc.layers, v.layer_count);
        for (std::int64_t i = 0; i < n; ++i)
          out.recomputed_per_token +=
              flops_of(model.layers[static_cast<std::size_t>(v.first_layer + i)]).total();
      }
    }
  }
  return out;
}

Config candidate_config(const Config& base, const PlanCandidate& c) {
  Config config = base;
  ParallelLayout& p = config.parallel;
  p.tensor_parallel = c.tp;
  p.pipeline_parallel = c.pp;
  p.virtual_stages = c.vpp;
  p.context_parallel = c.cp;
  p.expert_parallel = c.ep;
  p.expert_tensor_parallel = c.etp;
  p.data_parallel = c.dp;
  p.world_size = 0;
  p.sequence_parallel = c.sp;
  p.assignment = StageAssignment::even;
  p.layers_per_stage.clear();
  p.first_stage_layers = -1;
  p.last_stage_layers = -1;
  p.layout_string.clear();
  config.training.micro_batch = c.mbs;
  config.training.recompute.policy = c.recompute;
  config.optimizer.kind = c.optimizer;
  config = with_recipe(config, c.recipe);
  config = with_sharding(config, c.sharding);
  config.measurements.clear();
  std::erase_if(config.gaps, [](const GapEntry& g) { return g.stage != -1; });
  return config;
}

Config with_sharding(const Config& config, ShardingStrategy strategy) {
  Config out = config;
  DataParallelSharding& s = out.training.sharding;
  s.strategy = strategy;
  if (out.training.framework == Framework::megatron_core &&
      strategy != ShardingStrategy::automatic) {
    s.implementation = strategy >= ShardingStrategy::optim_grads ? DataParallelImpl::megatron_fsdp
                                                                 : DataParallelImpl::automatic;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// The search.

namespace {

// Outer dimensions, in enumeration order (the last varies fastest). The inner loops are DP, then
// micro-batch, then recompute: the resident set does not depend on the last two, so one estimate
// whose resident set alone exceeds the device rules out the rest of its DP (see PlanBounds).
enum Dim { d_tp, d_pp, d_vpp, d_cp, d_ep, d_etp, d_sp, d_opt, d_recipe, d_sharding, dim_count };

// The bounds, the global batch, the model and the schedule a plan can search; errors name the
// field.
void check_plan_bounds(const PlanBounds& b, const Config& base, std::int64_t layers,
                       Diagnostics& d) {
  const auto range = [&d](const char* field, std::int64_t v, std::int64_t low, std::int64_t high) {
    if (v < low || v > high) {
      d.error(field,
              "must be an integer in [" + text(low) + ", " + text(high) + "], got " + text(v));
      return false;
    }
    return true;
  };
  range("plan.gpus_per_node", b.gpus_per_node, 1, 1024);
  range("plan.min_gpus", b.min_gpus, 1, std::int64_t{1} << 32);
  if (b.max_gpus != 0 && range("plan.max_gpus", b.max_gpus, 1, std::int64_t{1} << 32) &&
      b.max_gpus < b.min_gpus) {
    d.error("plan.max_gpus",
            "must be at least plan.min_gpus (" + text(b.min_gpus) + "), got " + text(b.max_gpus));
  }
  range("plan.top", b.top, 1, 100);
  if (b.margin.bytes != 0 && b.margin.percent_hundredths != 0) {
    d.error("plan.margin", "give the margin as an amount or as a percentage, not both");
  }
  range("plan.margin", b.margin.bytes, 0, max_config_bytes);
  if (b.margin.percent_hundredths < 0 || b.margin.percent_hundredths > 9999) {
    d.error("plan.margin", "a percentage of the capacity must be in [0, 99.99] %");
  }
  const auto list_range = [&](const char* field, const std::vector<std::int64_t>& list,
                              std::int64_t low, std::int64_t high) {
    for (std::int64_t v : list) {
      if (!range(field, v, low, high)) return;
    }
  };
  list_range("parallel.tp", b.tp, 1, 1024);
  list_range("parallel.pp", b.pp, 1, std::max<std::int64_t>(1, layers));
  list_range("parallel.vpp", b.vpp, 1, 1024);
  list_range("parallel.cp", b.cp, 1, 1024);
  list_range("parallel.ep", b.ep, 1, 65536);
  list_range("parallel.etp", b.etp, 1, 1024);
  list_range("parallel.dp", b.dp, 1, 1 << 24);
  list_range("training.micro_batch", b.mbs, 1, 65536);
  range("training.global_batch", base.training.global_batch, 1, std::int64_t{1} << 30);
  if (layers < 1) d.error("model.layers", "the model has no decoder layers");
  // The search covers Megatron-core's schedules (1F1B, interleaved over the VPP list); DualPipeV
  // is not one of them and its V placement has no VPP dimension to search.
  if (base.parallel.schedule != PipelineSchedule::one_f_one_b) {
    d.error("parallel.schedule",
            "plan searches schedule 1f1b only (1F1B and interleaved over the VPP list); estimate "
            "a DualPipeV layout with report --schedule dualpipev");
  }
}

// The device's bytes every layout is fitted against; 0 (with an error) when there is none.
std::int64_t plan_device_bytes(const Config& base, Diagnostics& d) {
  if (base.device.bytes > 0) return base.device.bytes;
  if (const auto device = find_device(base.device.preset)) return device->bytes;
  d.error("device", "plan needs a device to fit against: --device NAME or --device-bytes N");
  return 0;
}

// Defaults of the lists the bounds leave empty. SP stays empty: one entry "auto" (on exactly
// when TP > 1) unless the bounds list values.
void fill_default_lists(PlanBounds& b, const Config& base, const Model& model,
                        std::int64_t layers) {
  if (b.tp.empty()) {
    for (std::int64_t t = 1; t <= b.gpus_per_node; t *= 2) b.tp.push_back(t);
  }
  if (b.pp.empty()) {
    for (std::int64_t p = 1; p <= std::min<std::int64_t>(layers, 32); ++p) b.pp.push_back(p);
  }
  if (b.vpp.empty()) b.vpp = {1, 2, 3, 4};
  if (b.cp.empty()) b.cp = {1};
  if (b.ep.empty()) {
    b.ep = uses_moe(model) ? divisors(model.moe.routed_experts) : std::vector<std::int64_t>{1};
  }
  if (b.etp.empty()) b.etp = {1};
  if (b.mbs.empty()) b.mbs = {1, 2, 3, 4};
  if (b.recompute.empty())
    b.recompute = {RecomputePolicy::none, RecomputePolicy::selective, RecomputePolicy::full};
  if (b.optimizer.empty()) b.optimizer = {base.optimizer.kind};
  if (b.recipe.empty()) b.recipe = {base.training.low_precision.recipe};
  if (b.sharding.empty()) b.sharding = {base.training.sharding.strategy};
}

// Drops the TP, EP and ETP values the model does not allow at all, by the layout's own
// validation (a layout that varies only that value): they are skipped before any estimate.
void drop_values_the_model_refuses(PlanBounds& b, const Model& model) {
  const auto model_allows = [&](ParallelLayout layout, const char* field) {
    Diagnostics check;
    validate_layout(model, layout, check);
    for (const FieldMessage& e : check.errors) {
      if (e.field == field) return false;
    }
    return true;
  };
  const auto filter = [&](std::vector<std::int64_t>& list, auto set, const char* field) {
    std::erase_if(list, [&](std::int64_t v) {
      ParallelLayout layout;
      set(layout, v);
      // DP large enough that EP x ETP always divides the stage's ranks here.
      layout.data_parallel = 1 << 20;
      return !model_allows(layout, field);
    });
  };
  filter(
      b.tp, [](ParallelLayout& l, std::int64_t v) { l.tensor_parallel = v; }, "parallel.tp");
  filter(
      b.ep, [](ParallelLayout& l, std::int64_t v) { l.expert_parallel = v; }, "parallel.ep");
  filter(
      b.etp, [](ParallelLayout& l, std::int64_t v) { l.expert_tensor_parallel = v; },
      "parallel.etp");
}

}  // namespace

PlanSearch::PlanSearch(const Config& base, const Model& model, const PlanBounds& bounds,
                       std::int64_t shard, std::int64_t shards)
    : model_(&model),
      base_(base),
      bounds_(bounds),
      shard_(shard),
      shards_(std::max<std::int64_t>(1, shards)) {
  layers_ = static_cast<std::int64_t>(model.layers.size());
  moe_ = uses_moe(model);
  PlanBounds& b = bounds_;
  check_plan_bounds(b, base, layers_, diagnostics_);
  device_bytes_ = plan_device_bytes(base, diagnostics_);
  margin_bytes_ = plan_margin_bytes(b.margin, device_bytes_);
  if (diagnostics_.ok() && margin_bytes_ >= device_bytes_) {
    diagnostics_.error("plan.margin", "the margin " + plan_margin_text(b.margin) + " (" +
                                          format_gib(margin_bytes_) +
                                          ") leaves nothing of the device's " +
                                          format_gib(device_bytes_) + ": it must be smaller");
  }
  if (!diagnostics_.ok()) {
    done_ = true;
    return;
  }
  fill_default_lists(b, base, model, layers_);
  drop_values_the_model_refuses(b, model);

  work_ = candidate_config(base, {});
  index_.assign(dim_count, 0);
  outer_total_ =
      static_cast<std::int64_t>(b.tp.size() * b.pp.size() * b.vpp.size() * b.cp.size() *
                                b.ep.size() * b.etp.size() * std::max<std::size_t>(1, b.sp.size()) *
                                b.optimizer.size() * b.recipe.size() * b.sharding.size());
  gbs_divisors_ = divisors(base.training.global_batch);
  dp_values_ = gbs_divisors_;
  if (!b.dp.empty()) {
    std::erase_if(dp_values_, [&](std::int64_t v) {
      return std::find(b.dp.begin(), b.dp.end(), v) == b.dp.end();
    });
  }
  inner_stride_ =
      static_cast<std::int64_t>(gbs_divisors_.size() * b.mbs.size() * b.recompute.size());
  // Recompute overhead of uniform and selective recompute does not depend on the layout.
  for (RecomputePolicy policy : b.recompute) {
    Config c = work_;
    c.training.recompute.policy = policy;
    recompute_overhead_.push_back(step_flops(c, model).overhead());
  }
  failed_mbs_.assign(b.recompute.size(), 0);
  if (outer_total_ == 0) done_ = true;
}

double PlanSearch::progress() const {
  if (done_ || outer_total_ == 0) return 1.0;
  return std::clamp(static_cast<double>(std::max<std::int64_t>(0, outer_ordinal_)) /
                        static_cast<double>(outer_total_),
                    0.0, 1.0);
}

// Advances the odometer to the next outer point of this shard and lists its inner points (DP,
// micro-batch, recompute) that pass the cheap checks. False when the space is exhausted.
bool PlanSearch::next_outer() {
  const PlanBounds& b = bounds_;
  const std::array<std::size_t, dim_count> sizes = {b.tp.size(),
                                                    b.pp.size(),
                                                    b.vpp.size(),
                                                    b.cp.size(),
                                                    b.ep.size(),
                                                    b.etp.size(),
                                                    std::max<std::size_t>(1, b.sp.size()),
                                                    b.optimizer.size(),
                                                    b.recipe.size(),
                                                    b.sharding.size()};
  do {
    if (!started_) {
      started_ = true;
      outer_ordinal_ = 0;
    } else {
      std::size_t a = dim_count;
      while (a-- > 0) {
        if (++index_[a] < sizes[a]) break;
        index_[a] = 0;
        if (a == 0) return false;
      }
      ++outer_ordinal_;
    }
  } while (outer_ordinal_ % shards_ != shard_);
  if (outer_ordinal_ >= outer_total_) return false;

  const std::int64_t tp = b.tp[index_[d_tp]];
  const std::int64_t pp = b.pp[index_[d_pp]];
  const std::int64_t vpp = b.vpp[index_[d_vpp]];
  const std::int64_t cp = b.cp[index_[d_cp]];
  const std::int64_t ep = b.ep[index_[d_ep]];
  const std::int64_t etp = b.etp[index_[d_etp]];
  const bool sp = b.sp.empty() ? tp > 1 : b.sp[index_[d_sp]];

  inner_.clear();
  inner_index_ = 0;
  skip_dp_ = 0;
  const std::int64_t gbs = work_.training.global_batch;
  const std::int64_t seq = work_.training.sequence_length;
  const auto rcs = static_cast<std::int64_t>(b.recompute.size());
  // Every point with a whole number of micro-batches per step is a configuration searched.
  std::int64_t points = 0;
  for (std::int64_t dp : dp_values_) {
    for (std::int64_t mbs : b.mbs) points += gbs % (mbs * dp) == 0 ? rcs : 0;
  }
  searched_ += points;

  // Whole-point checks (validate() would reject every inner point).
  const bool tp_ok = b.tp_across_nodes || b.gpus_per_node % tp == 0;
  const bool stages_ok = pp * vpp <= layers_ && (vpp == 1 || pp > 1);
  const bool seq_ok = seq % (cp * (sp ? tp : 1)) == 0;
  const bool sp_ok = !(moe_ && tp > 1 && !sp);
  if (!(tp_ok && stages_ok && seq_ok && sp_ok)) return true;

  const std::int64_t inner = checked_product(tp, cp);
  const std::int64_t fixed = checked_product(inner, pp);
  const std::int64_t experts = ep * etp;
  // Largest DP first: the resident set never grows with DP, so once it exceeds the device at
  // one DP it does at every smaller one, and the rest of the point is skipped (visit()).
  for (auto it = dp_values_.rbegin(); it != dp_values_.rend(); ++it) {
    const std::int64_t dp = *it;
    const std::int64_t ranks = checked_product(inner, dp);
    const std::int64_t gpus = checked_product(fixed, dp);
    if (ranks < 0 || gpus < 0) continue;
    if (moe_ && ranks % experts != 0) continue;  // EP x ETP within TP x CP x DP
    if (gpus < b.min_gpus || (b.max_gpus > 0 && gpus > b.max_gpus)) continue;
    // Whole nodes, or one node (partly) used.
    if (gpus % b.gpus_per_node != 0 && b.gpus_per_node % gpus != 0) continue;
    const std::int64_t dp_index =
        std::lower_bound(gbs_divisors_.begin(), gbs_divisors_.end(), dp) - gbs_divisors_.begin();
    for (std::size_t mi = 0; mi < b.mbs.size(); ++mi) {
      const std::int64_t mbs = b.mbs[mi];
      if (gbs % (mbs * dp) != 0) continue;
      // Megatron's interleaved schedule runs micro-batches in groups of PP.
      if (vpp > 1 && (gbs / (mbs * dp)) % pp != 0) continue;
      for (std::size_t ri = 0; ri < b.recompute.size(); ++ri) {
        const RecomputePolicy rc = b.recompute[ri];
        if (rc == RecomputePolicy::full && work_.training.recompute.layers > layers_) continue;
        const std::int64_t local =
            (dp_index * static_cast<std::int64_t>(b.mbs.size()) + static_cast<std::int64_t>(mi)) *
                rcs +
            static_cast<std::int64_t>(ri);
        inner_.push_back({dp, static_cast<std::uint32_t>(mi), static_cast<std::uint32_t>(ri),
                          outer_ordinal_ * inner_stride_ + local});
      }
    }
  }

  ParallelLayout& p = work_.parallel;
  p.tensor_parallel = tp;
  p.pipeline_parallel = pp;
  p.virtual_stages = vpp;
  p.context_parallel = cp;
  p.expert_parallel = ep;
  p.expert_tensor_parallel = etp;
  p.sequence_parallel = sp;
  work_.optimizer.kind = b.optimizer[index_[d_opt]];
  const Fp8Recipe recipe = b.recipe[index_[d_recipe]];
  if (recipe != work_.training.low_precision.recipe) {
    const Config quantised = with_recipe(base_, recipe);
    work_.training.low_precision = quantised.training.low_precision;
    work_.precision = quantised.precision;
  }
  const Config sharded = with_sharding(work_, b.sharding[index_[d_sharding]]);
  work_.training.sharding = sharded.training.sharding;
  return true;
}

void PlanSearch::visit(const InnerPoint& point) {
  if (point.dp <= skip_dp_) {
    ++pruned_;
    return;
  }
  ParallelLayout& p = work_.parallel;
  if (point.dp != current_dp_) {
    current_dp_ = point.dp;
    std::fill(failed_mbs_.begin(), failed_mbs_.end(), 0);
  }
  const std::int64_t mbs = bounds_.mbs[point.mbs_index];
  // Micro-batches per step; with M >= 2 x PP every schedule holds the same number of micro-batches
  // in flight on each rank (1F1B: min(P - p, M) = P - p; interleaved: its warm-up count, below
  // 2 x PP x v forwards), so a larger micro-batch only adds tokens to every term.
  const std::int64_t m = work_.training.global_batch / (mbs * point.dp);
  const bool in_flight_fixed = m >= 2 * p.pipeline_parallel;
  std::int64_t& failed = failed_mbs_[point.recompute_index];
  if (!bounds_.exhaustive && failed > 0 && mbs > failed && in_flight_fixed) {
    ++pruned_;
    return;
  }
  p.data_parallel = point.dp;
  work_.training.micro_batch = mbs;
  work_.training.recompute.policy = bounds_.recompute[point.recompute_index];
  ++estimated_;
  // Peaks only (no term lists), with the layout's validation, stage plan and per-rank
  // parameters reused across the micro-batch sizes and policies of one DP: the same numbers as
  // a full estimate (report.h), at a fraction of the cost.
  estimate_into(work_, *model_, cache_, report_, EstimateDetail::peaks);
  const Report& report = report_;
  if (!report.diagnostics.ok() || report.stages.empty()) return;
  PlanEntry e;
  e.candidate = {.tp = p.tensor_parallel,
                 .pp = p.pipeline_parallel,
                 .vpp = p.virtual_stages,
                 .cp = p.context_parallel,
                 .ep = p.expert_parallel,
                 .etp = p.expert_tensor_parallel,
                 .dp = point.dp,
                 .mbs = work_.training.micro_batch,
                 .recompute = work_.training.recompute.policy,
                 .sp = p.sequence_parallel,
                 .optimizer = work_.optimizer.kind,
                 .recipe = work_.training.low_precision.recipe,
                 .sharding = work_.training.sharding.strategy};
  e.ordinal = point.ordinal;
  e.gpus = p.tensor_parallel * p.pipeline_parallel * p.context_parallel * point.dp;
  e.micro_batches = report.micro_batches;
  e.headroom_bytes = report.stages.front().headroom_bytes;
  e.binding_stage = 0;
  e.margin_bytes = margin_bytes_;
  bool resident_exceeds = false;
  for (const StageReport& s : report.stages) {
    if (s.headroom_bytes < e.headroom_bytes) {
      e.headroom_bytes = s.headroom_bytes;
      e.binding_stage = s.index;
    }
    // Peak >= resident + gaps on every stage; neither depends on the micro-batch size or the
    // recompute policy, nor grows with DP (state shards over DP, weights do not depend on it):
    // no later point of this outer point (this DP or a smaller one) can fit either.
    // With a margin, the bytes a configuration may use are the device's minus the margin.
    resident_exceeds |= s.resident_bytes > device_bytes_ - margin_bytes_ - s.gap_bytes;
  }
  if (resident_exceeds && !bounds_.exhaustive) skip_dp_ = point.dp;
  // A micro-batch size that does not fit rules out the larger ones at this DP and recompute
  // policy while the in-flight counts stay fixed (peaks never fall as mbs grows then; tested).
  if (!e.fits() && in_flight_fixed && (failed == 0 || mbs < failed)) failed = mbs;
  e.peak_bytes = report.stages[static_cast<std::size_t>(e.binding_stage)].peak_bytes;
  e.fit_basis = report.stages[static_cast<std::size_t>(e.binding_stage)].fit_basis;
  e.fit_bytes = report.stages[static_cast<std::size_t>(e.binding_stage)].fit_bytes;
  e.bubble_fraction = bubble_fraction(p.pipeline_parallel, p.virtual_stages, e.micro_batches);
  const RecomputeConfig& rc = work_.training.recompute;
  e.recompute_overhead =
      rc.policy == RecomputePolicy::full && rc.method == FullRecomputeMethod::block
          ? step_flops(work_, *model_).overhead()
          : recompute_overhead_[point.recompute_index];
  entries_.push_back(e);
}

bool PlanSearch::step(std::int64_t points) {
  while (!done_ && points > 0) {
    if (inner_index_ < inner_.size()) {
      visit(inner_[inner_index_++]);
      --points;
      continue;
    }
    if (!next_outer()) {
      done_ = true;
      break;
    }
    --points;  // a rejected or empty point costs one unit of the slice too
  }
  return !done_;
}

// ---------------------------------------------------------------------------------------------
// Selection.

namespace {

bool by_bubble(const PlanEntry& a, const PlanEntry& b) {
  if (a.bubble_fraction != b.bubble_fraction) return a.bubble_fraction < b.bubble_fraction;
  if (a.recompute_overhead != b.recompute_overhead)
    return a.recompute_overhead < b.recompute_overhead;
  if (a.headroom_bytes != b.headroom_bytes) return a.headroom_bytes > b.headroom_bytes;
  return a.ordinal < b.ordinal;
}
bool by_recompute(const PlanEntry& a, const PlanEntry& b) {
  if (a.recompute_overhead != b.recompute_overhead)
    return a.recompute_overhead < b.recompute_overhead;
  if (a.bubble_fraction != b.bubble_fraction) return a.bubble_fraction < b.bubble_fraction;
  if (a.headroom_bytes != b.headroom_bytes) return a.headroom_bytes > b.headroom_bytes;
  return a.ordinal < b.ordinal;
}
bool by_headroom(const PlanEntry& a, const PlanEntry& b) {
  if (a.headroom_bytes != b.headroom_bytes) return a.headroom_bytes > b.headroom_bytes;
  if (a.bubble_fraction != b.bubble_fraction) return a.bubble_fraction < b.bubble_fraction;
  if (a.recompute_overhead != b.recompute_overhead)
    return a.recompute_overhead < b.recompute_overhead;
  return a.ordinal < b.ordinal;
}

}  // namespace

PlanResult select_plan(std::vector<PlanEntry> entries, std::int64_t top) {
  PlanResult out;
  out.configurations_valid = static_cast<std::int64_t>(entries.size());
  std::erase_if(entries, [](const PlanEntry& e) { return !e.fits(); });
  out.configurations_fitting = static_cast<std::int64_t>(entries.size());
  std::map<std::int64_t, std::vector<PlanEntry>> by_gpus;
  for (PlanEntry& e : entries) by_gpus[e.gpus].push_back(e);
  const auto k = static_cast<std::size_t>(std::max<std::int64_t>(1, top));
  for (auto& item : by_gpus) {
    std::vector<PlanEntry>& group = item.second;  // (clang 14: lambdas cannot capture bindings)
    std::vector<PlanEntry> chosen;
    const auto take = [&](auto less, std::uint8_t bit) {
      const std::size_t n = std::min(k, group.size());
      std::partial_sort(group.begin(), group.begin() + static_cast<std::ptrdiff_t>(n), group.end(),
                        less);
      for (std::size_t i = 0; i < n; ++i) {
        auto found = std::find_if(chosen.begin(), chosen.end(), [&](const PlanEntry& c) {
          return c.ordinal == group[i].ordinal;
        });
        if (found == chosen.end()) {
          chosen.push_back(group[i]);
          chosen.back().ranks = bit;
        } else {
          found->ranks |= bit;
        }
      }
    };
    take(by_bubble, rank_bubble);
    if (!out.has_minimum) {
      out.has_minimum = true;
      out.minimum = chosen.front();
      out.minimum.ranks = 0;
    }
    take(by_recompute, rank_recompute);
    take(by_headroom, rank_headroom);
    out.frontier.insert(out.frontier.end(), chosen.begin(), chosen.end());
  }
  return out;
}

PlanConfirmation::PlanConfirmation(std::vector<PlanEntry> entries, std::int64_t top,
                                   const Config& base, const Model& model,
                                   std::int64_t max_confirmations)
    : entries_(std::move(entries)),
      top_(top),
      base_(base),
      model_(&model),
      budget_(max_confirmations),
      confirmed_(entries_.size(), false) {
  for (std::size_t i = 0; i < entries_.size(); ++i) index_of_[entries_[i].ordinal] = i;
  cache_.keep_activations = false;
}

void PlanConfirmation::start(std::size_t index) {
  confirmed_[index] = true;
  ++confirmed_count_;
  --budget_;
}

void PlanConfirmation::record(std::size_t index) {
  if (!report_.diagnostics.ok() || report_.stages.empty()) return;
  PlanEntry& entry = entries_[index];
  const StageReport* binding = &report_.stages.front();
  for (const StageReport& s : report_.stages) {
    if (s.headroom_bytes < binding->headroom_bytes) binding = &s;
  }
  entry.headroom_bytes = binding->headroom_bytes;
  entry.binding_stage = binding->index;
  entry.peak_bytes = binding->peak_bytes;
  entry.fit_basis = binding->fit_basis;
  entry.fit_bytes = binding->fit_bytes;
}

bool PlanConfirmation::next_entry(std::size_t& index) {
  if (done_) return false;
  if (next_pending_ == pending_.size()) {
    // Every entry of the last selection is confirmed: select again (a confirmed entry that no
    // longer fits drops out, and the ranks by headroom may move) until nothing new is shown.
    pending_.clear();
    next_pending_ = 0;
    const PlanResult shown = select_plan(entries_, top_);
    std::vector<const PlanEntry*> listed;
    if (shown.has_minimum) listed.push_back(&shown.minimum);
    for (const PlanEntry& e : shown.frontier) listed.push_back(&e);
    for (const PlanEntry* e : listed) {
      const auto at = index_of_.find(e->ordinal);
      if (at == index_of_.end() || confirmed_[at->second]) continue;
      if (std::find(pending_.begin(), pending_.end(), at->second) != pending_.end()) continue;
      pending_.push_back(at->second);
    }
    if (pending_.empty()) done_ = true;
  }
  if (budget_ <= 0) done_ = true;
  if (done_) return false;
  index = pending_[next_pending_++];
  return true;
}

bool PlanConfirmation::step(std::int64_t estimates) {
  estimates = std::max<std::int64_t>(1, estimates);
  std::size_t index = 0;
  while (estimates > 0 && next_entry(index)) {
    start(index);
    estimate_into(candidate_config(base_, entries_[index].candidate), *model_, cache_, report_);
    record(index);
    --estimates;
  }
  return !done_;
}

bool PlanConfirmation::advance(std::int64_t allocations) {
  if (!running_) {
    if (!next_entry(running_entry_)) return false;
    start(running_entry_);
    running_ = std::make_unique<SteppedEstimate>(
        candidate_config(base_, entries_[running_entry_].candidate), *model_, cache_, report_);
  }
  if (running_->step(allocations)) return true;
  running_.reset();
  record(running_entry_);
  return true;  // the next call selects again, or finds the confirmation done
}

PlanResult select_confirmed_plan(std::vector<PlanEntry> entries, std::int64_t top,
                                 const Config& base, const Model& model,
                                 std::int64_t max_confirmations) {
  PlanConfirmation confirmation(std::move(entries), top, base, model, max_confirmations);
  while (confirmation.step(std::numeric_limits<std::int64_t>::max())) {
  }
  return confirmation.result();
}

PlanResult plan(const Config& base, const Model& model, const PlanBounds& bounds) {
  PlanSearch search(base, model, bounds);
  while (search.step(1 << 20)) {
  }
  if (!search.diagnostics().ok()) {
    PlanResult out;
    out.diagnostics = search.diagnostics();
    return out;
  }
  PlanResult out = select_confirmed_plan(search.entries(), bounds.top, base, model);
  out.diagnostics = search.diagnostics();
  out.device_bytes = search.device_bytes();
  out.margin_bytes = search.margin_bytes();
  out.configurations_searched = search.searched();
  out.configurations_estimated = search.estimated();
  out.configurations_pruned = search.pruned();
  return out;
}

// ---------------------------------------------------------------------------------------------
// The safety margin.

std::optional<PlanMargin> parse_plan_margin(std::string_view text, const std::string& field,
                                            Diagnostics& d) {
  const std::string_view typed = text;
  const auto refuse = [&] {
    d.error(field, "'" + std::string(typed.substr(0, 32)) +
                       "' is not a margin: expected an amount (" + allowed_amounts() +
                       ") or a percentage of the capacity in [0, 99.99] (e.g. 20% for the 80 % "
                       "rule)");
    return std::nullopt;
  };
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
  if (text.empty()) return PlanMargin{};
  if (text.back() == '%') {
    text.remove_suffix(1);
    while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
    // Digits, then at most two decimals: hundredths of a percent, exactly.
    std::int64_t whole = 0, hundredths = 0;
    std::size_t i = 0;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9' && whole < 1000)
      whole = whole * 10 + (text[i++] - '0');
    if (i == 0) return refuse();
    if (i < text.size() && text[i] == '.') {
      ++i;
      std::int64_t scale = 10;
      const std::size_t first = i;
      while (i < text.size() && text[i] >= '0' && text[i] <= '9' && scale > 0) {
        hundredths += (text[i++] - '0') * scale;
        scale /= 10;
      }
      if (i == first) return refuse();
    }
    if (i != text.size()) return refuse();
    const std::int64_t value = whole * 100 + hundredths;
    if (value > 9999) return refuse();
    return PlanMargin{.bytes = 0, .percent_hundredths = value};
  }
  const auto bytes = parse_byte_amount(text);
  if (!bytes) return refuse();
  return PlanMargin{.bytes = *bytes, .percent_hundredths = 0};
}

std::string plan_margin_text(const PlanMargin& margin) {
  if (margin.percent_hundredths > 0) {
    std::string out = text(margin.percent_hundredths / 100);
    const std::int64_t rest = margin.percent_hundredths % 100;
    if (rest != 0) {
      out += '.';
      out += static_cast<char>('0' + rest / 10);
      if (rest % 10 != 0) out += static_cast<char>('0' + rest % 10);
    }
    return out + "%";
  }
  return margin.bytes > 0 ? byte_amount_text(margin.bytes) : "0";
}

std::int64_t plan_margin_bytes(const PlanMargin& margin, std::int64_t device_bytes) {
  if (margin.percent_hundredths <= 0) return margin.bytes;
  // ceil(device x p / 10000), split so that no product passes 2^63 (device bytes <= 2^50 and
  // p < 10^4 would): device = 10000 q + r.
  const std::int64_t p = margin.percent_hundredths;
  const std::int64_t q = device_bytes / 10000, r = device_bytes % 10000;
  return q * p + ceil_div(r * p, 10000);
}

// ---------------------------------------------------------------------------------------------
// Megatron arguments.

std::string megatron_arguments(const Config& config, const Model& model) {
  const ParallelLayout& p = config.parallel;
  const TrainingConfig& t = config.training;
  std::string out = "--tensor-model-parallel-size " + text(p.tensor_parallel) +
                    " --pipeline-model-parallel-size " + text(p.pipeline_parallel);
  const auto layers = static_cast<std::int64_t>(model.layers.size());
  const std::int64_t stages = p.pipeline_parallel * p.virtual_stages;
  const bool even_divides = p.assignment == StageAssignment::even && layers % stages == 0;
  if (!even_divides && p.pipeline_parallel * p.virtual_stages > 1) {
    Diagnostics ignored;
    if (const auto plan = plan_stages(model, p, ignored)) {
      out += " --pipeline-model-parallel-layout \"" + pipeline_layout_text(layout_entries(*plan)) +
             "\"";
    }
  } else if (p.virtual_stages > 1) {
    out += " --num-layers-per-virtual-pipeline-stage " + text(layers / stages);
  }
  if (p.context_parallel > 1) out += " --context-parallel-size " + text(p.context_parallel);
  if (uses_moe(model)) {
    out += " --expert-model-parallel-size " + text(p.expert_parallel);
    out += " --expert-tensor-parallel-size " + text(p.expert_tensor_parallel);
  }
  if (p.sequence_parallel && p.tensor_parallel > 1) out += " --sequence-parallel";
  out += " --seq-length " + text(t.sequence_length) + " --micro-batch-size " + text(t.micro_batch) +
         " --global-batch-size " + text(t.global_batch);
  const RecomputeConfig& rc = t.recompute;
  if (rc.policy == RecomputePolicy::full) {
    out += std::string(" --recompute-granularity full --recompute-method ") +
           (rc.method == FullRecomputeMethod::uniform ? "uniform" : "block") +
           " --recompute-num-layers " + text(rc.layers);
  } else if (rc.policy == RecomputePolicy::selective) {
    out += " --recompute-granularity selective --recompute-modules";
    for (int i = 0; i < recompute_module_count; ++i) {
      if (rc.modules & (std::uint32_t{1} << i))
        out += " " + std::string(enum_names<RecomputeModule>[static_cast<std::size_t>(i)]);
    }
  }
  const OptimizerKind kind = config.optimizer.kind;
  if (kind == OptimizerKind::muon || kind == OptimizerKind::distributed_muon)
    out += " --optimizer muon";
  const ResolvedSharding sharding =
      resolve_sharding(config.training, config.optimizer, config.parallel);
  if (kind == OptimizerKind::distributed_adam || kind == OptimizerKind::distributed_muon ||
      (sharding.implementation == DataParallelImpl::megatron_ddp && sharding.shards_state()) ||
      sharding.implementation == DataParallelImpl::megatron_fsdp)
    out += " --use-distributed-optimizer";
  if (sharding.implementation == DataParallelImpl::megatron_fsdp) {
    out += " --use-megatron-fsdp --data-parallel-sharding-strategy " +
           std::string(enum_name(sharding.strategy));
  }
  if (sharding.replicate > 1 && sharding.shards_state())
    out += " --num-distributed-optimizer-instances " + text(sharding.replicate);
  switch (config.training.low_precision.recipe) {
    case Fp8Recipe::none:
      break;
    case Fp8Recipe::nvfp4:
      out += " --fp4-format e2m1 --fp4-recipe nvfp4";
      break;
    case Fp8Recipe::tensor:
      out += " --fp8-format e4m3 --fp8-recipe tensorwise";
      break;
    case Fp8Recipe::block:
      out += " --fp8-format e4m3 --fp8-recipe blockwise";
      break;
    case Fp8Recipe::mxfp8:
      out += " --fp8-format e4m3 --fp8-recipe mxfp8";
      break;
    case Fp8Recipe::delayed:
      out += " --fp8-format hybrid --fp8-recipe delayed";
      break;
  }
  return out;
}

}  // namespace stagemem
