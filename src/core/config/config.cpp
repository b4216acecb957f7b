#include "config/config.h"

#include <algorithm>
#include <array>

#include "config/config_fields.h"
#include "config/devices.h"
#include "config/low_precision_rules.h"
#include "config/sharding_rules.h"
#include "config/version_rules.h"
#include "model/model_text.h"
#include "model/presets.h"
#include "parallel/schedule.h"

namespace stagemem {
namespace {

bool in_range(std::int64_t value, std::int64_t low, std::int64_t high) {
  return value >= low && value <= high;
}

void check_source(Diagnostics& d, const std::string& field, const std::string& source) {
  if (source.empty() || source.size() > max_source_length) {
    d.error(field, "a measured value needs its source: text of 1 to " +
                       std::to_string(max_source_length) + " characters");
  }
}

// The recipe is in range, runs on the stack's architecture and TE release, and its options
// apply (Megatron's and TE's own checks: arguments.py, transformer_engine/pytorch/quantization.py).
void validate_low_precision(const Config& config, Diagnostics& d) {
  const LowPrecisionCompute& lp = config.training.low_precision;
  if (static_cast<std::size_t>(lp.recipe) >= enum_names<Fp8Recipe>.size()) {
    d.error("precision.fp8_recipe", one_of(enum_names<Fp8Recipe>));
    return;
  }
  if (!in_range(lp.amax_history_len, 1, std::int64_t{1} << 20)) {
    d.error("precision.fp8_amax_history_len",
            "must be an integer in [1, 1048576], got " + std::to_string(lp.amax_history_len));
  }
  for (const auto& [value, field] :
       {std::pair{lp.bf16_layers_at_start, "precision.bf16_layers_at_start"},
        std::pair{lp.bf16_layers_at_end, "precision.bf16_layers_at_end"}}) {
    if (!in_range(value, 0, std::int64_t{1} << 20)) {
      d.error(field, "must be an integer in [0, 1048576], got " + std::to_string(value));
    }
  }
  for (const std::string& problem : low_precision_problems(config.training)) {
    d.error("precision.fp8_recipe", problem);
  }
  if (!lp.quantised()) {
    if (lp.fp8_attention) {
      d.error("precision.fp8_attention", "fp8 attention needs a quantised recipe (fp8_recipe)");
    }
    if (lp.bf16_layers_at_start + lp.bf16_layers_at_end > 0) {
      d.warn("precision.bf16_layers_at_start",
             "bf16 first/last layers have no effect without a quantised recipe");
    }
  }
}

// The precision and optimizer enums are in range; muon-group casting needs a Muon optimizer.
void validate_precision_and_optimizer(const Config& config, Diagnostics& d) {
  const auto& p = config.precision;
  if (static_cast<std::size_t>(p.dense_weights) >= weight_dtype_count) {
    d.error("precision.dense_weights", one_of(enum_names<WeightDtype>));
  }
  if (static_cast<std::size_t>(p.expert_weights) >= weight_dtype_count) {
    d.error("precision.expert_weights", one_of(enum_names<WeightDtype>));
  }
  if (static_cast<std::size_t>(p.grads) >= enum_names<GradDtype>.size()) {
    d.error("precision.grads", one_of(enum_names<GradDtype>));
  }
  validate_low_precision(config, d);
  validate_sharding(config, d);
  const auto& o = config.optimizer;
  if (static_cast<std::size_t>(o.kind) >= enum_names<OptimizerKind>.size()) {
    d.error("optimizer.kind", one_of(enum_names<OptimizerKind>));
  }
  if (static_cast<std::size_t>(o.master_weights) >= enum_names<MasterDtype>.size()) {
    d.error("optimizer.master_weights", one_of(enum_names<MasterDtype>));
  }
  if (static_cast<std::size_t>(o.moments) >= enum_names<MomentDtype>.size()) {
    d.error("optimizer.moments", one_of(enum_names<MomentDtype>));
  }
  if (static_cast<std::size_t>(o.cast_copy) >= enum_names<CastCopy>.size()) {
    d.error("optimizer.cast_copy", one_of(enum_names<CastCopy>));
  }
  if (static_cast<std::size_t>(o.param_gather) >= enum_names<ParamGather>.size()) {
    d.error("optimizer.param_gather", one_of(enum_names<ParamGather>));
  }
  if (static_cast<std::size_t>(o.muon_tp_mode) >= enum_names<MuonTpMode>.size()) {
    d.error("optimizer.muon_tp_mode", one_of(enum_names<MuonTpMode>));
  }
  if (o.cast_copy == CastCopy::muon_group &&
      !(o.kind == OptimizerKind::muon || o.kind == OptimizerKind::distributed_muon)) {
    d.warn("optimizer.cast_copy", "muon-group has no effect with an Adam optimizer");
  }
}

// The allocator options PyTorch accepts, in the combinations the replay models.
void validate_allocator(const Config& config, Diagnostics& d) {
  const AllocatorSettings& a = config.training.allocator;
  if (a.max_split_size_mb != 0 && !in_range(a.max_split_size_mb, 21, std::int64_t{1} << 30)) {
    d.error("allocator.max_split_size_mb",
            "must be 0 (unlimited) or an integer in [21, 1073741824] MiB (PyTorch refuses 20 and "
            "below), got " +
                std::to_string(a.max_split_size_mb));
  }
  const std::int64_t div = a.roundup_power2_divisions;
  if (div < 0 || div > 64 || (div & (div - 1)) != 0) {
    d.error("allocator.roundup_power2_divisions",
            "must be 0 (off) or a power of two in [1, 64], got " + std::to_string(div));
  }
  if (a.expandable_segments && a.empty_unused_memory_level > 0) {
    d.error("allocator.empty_unused_memory_level",
            "emptying the cache of expandable segments (unmapping their free pages) is not "
            "modelled: use 0 with expandable_segments");
  }
  // The field's own range is [0, 1]; PyTorch refuses a threshold of 1 (parseGarbageCollection
  // Threshold: "garbage_collect_threshold too big").
  if (a.garbage_collection_threshold >= 1.0) {
    d.error("allocator.garbage_collection_threshold",
            "must be 0 (off) or a number in (0, 1) (PyTorch refuses 1 and above), got " +
                format_field_text(*find_field_by_path("allocator.garbage_collection_threshold"),
                                  config));
  }
  if (a.garbage_collection_threshold > 0.0 && a.per_process_memory_fraction <= 0.0) {
    d.warn("allocator.garbage_collection_threshold",
           "PyTorch collects cached blocks only under a per-process memory fraction "
           "(set_fraction): without allocator.per_process_memory_fraction it has no effect");
  }
  if (a.per_process_memory_fraction > 0.0 && config.device.preset.empty() &&
      config.device.bytes == 0) {
    d.warn("allocator.per_process_memory_fraction",
           "no device is chosen: the fraction of its memory (and garbage collection under it) is "
           "not applied");
  }
  if ((a.per_process_memory_fraction > 0.0 || a.garbage_collection_threshold > 0.0) &&
      a.expandable_segments) {
    d.warn("allocator.per_process_memory_fraction",
           "with expandable segments the memory fraction's limit and garbage collection are not "
           "replayed (freeing unmaps pages inside the segment, which the replay does not hold)");
  }
}

// A known device preset, or bytes in range.
void validate_device(const Config& config, Diagnostics& d) {
  if (!config.device.preset.empty() && !find_device(config.device.preset)) {
    std::string names;
    for (const DevicePreset& dev : device_presets()) {
      names += (names.empty() ? "" : ", ") + std::string(dev.name);
    }
    d.error("device.preset", "unknown device '" + config.device.preset.substr(0, 64) +
                                 "'; known devices: " + names + " (or give device.bytes)");
  }
  if (config.device.bytes != 0 && !in_range(config.device.bytes, 1, max_config_bytes)) {
    d.error("device.bytes", "must be 0 (use the preset) or an integer in [1, " +
                                std::to_string(max_config_bytes) + "] bytes, got " +
                                std::to_string(config.device.bytes));
  }
}

// A measurement's global rank (-1: not known) lies in the layout and on the measurement's
// pipeline stage; Megatron orders ranks tp-cp-(ep)-dp-pp: the pipeline coordinate is the slowest.
void validate_measurement_rank(const Config& config, const Measurement& m, const std::string& field,
                               Diagnostics& d) {
  const std::int64_t stages = config.parallel.pipeline_parallel;
  const std::int64_t world = world_size(config.parallel);
  const std::int64_t per_stage = stages > 0 ? world / stages : 0;
  if (!in_range(m.rank, 0, std::min(world - 1, max_rank))) {
    d.error(field + ".rank", "must be -1 (not known) or a global rank in [0, " +
                                 std::to_string(std::min(world - 1, max_rank)) +
                                 "] of the layout's " + std::to_string(world) + " ranks, got " +
                                 std::to_string(m.rank));
  } else if (per_stage > 0 && m.rank / per_stage != m.stage) {
    d.error(field + ".stage",
            "rank " + std::to_string(m.rank) + " is on pipeline stage " +
                std::to_string(m.rank / per_stage) + " (" + std::to_string(per_stage) +
                " ranks per stage, Megatron's rank order), not stage " + std::to_string(m.stage));
  }
}

// One measurement `field` = "measurements[i]": point, stage, bytes, source, figure, rank, term.
void validate_measurement(const Config& config, const Measurement& m, const std::string& field,
                          Diagnostics& d) {
  const std::int64_t stages = config.parallel.pipeline_parallel;
  if (static_cast<std::size_t>(m.point) >= measurement_point_count) {
    d.error(field + ".point", one_of(enum_names<MeasurementPoint>));
  }
  if (!in_range(m.stage, 0, stages - 1)) {
    d.error(field + ".stage", "must be an integer in [0, " + std::to_string(stages - 1) +
                                  "], got " + std::to_string(m.stage));
  }
  if (!in_range(m.bytes, 0, max_config_bytes)) {
    d.error(field + ".bytes", "must be an integer in [0, " + std::to_string(max_config_bytes) +
                                  "] bytes, got " + std::to_string(m.bytes));
  }
  check_source(d, field + ".source", m.source);
  if (static_cast<std::size_t>(m.figure) >= memory_figure_count) {
    d.error(field + ".figure", one_of(enum_names<MemoryFigure>));
  }
  if (m.rank != -1) validate_measurement_rank(config, m, field, d);
  if (!in_range(m.iteration, -1, max_iteration)) {
    d.error(field + ".iteration", "must be -1 (not known) or an integer in [0, " +
                                      std::to_string(max_iteration) + "], got " +
                                      std::to_string(m.iteration));
  }
  if (m.point == MeasurementPoint::term &&
      (m.term.empty() || m.term.size() > max_term_name_length)) {
    d.error(field + ".term", "point 'term' needs the term's name (1 to " +
                                 std::to_string(max_term_name_length) + " characters)");
  }
}

// One gap entry `field` = "gaps[i]" (the i-th of config.gaps): kind, stage, bytes, source, and
// no earlier entry of the same kind and stage.
void validate_gap(const Config& config, std::size_t i, const std::string& field, Diagnostics& d) {
  const std::int64_t stages = config.parallel.pipeline_parallel;
  const GapEntry& g = config.gaps[i];
  if (static_cast<std::size_t>(g.kind) >= gap_kind_count) {
    d.error(field + ".kind", one_of(enum_names<GapKind>));
  }
  if (!in_range(g.stage, -1, stages - 1)) {
    d.error(field + ".stage", "must be -1 (every stage) or an integer in [0, " +
                                  std::to_string(stages - 1) + "], got " + std::to_string(g.stage));
  }
  if (!in_range(g.bytes, 0, max_config_bytes)) {
    d.error(field + ".bytes", "must be an integer in [0, " + std::to_string(max_config_bytes) +
                                  "] bytes, got " + std::to_string(g.bytes));
  }
  check_source(d, field + ".source", g.source);
  // One reading per kind and stage: the report shows one (gaps.cpp), so a second one would be
  // dropped without a word.
  for (std::size_t j = 0; j < i; ++j) {
    const GapEntry& earlier = config.gaps[j];
    if (earlier.kind != g.kind || earlier.stage != g.stage) continue;
    d.error(field,
            std::string(gap_kind_name(g.kind)) +
                (g.stage < 0 ? " for every stage" : " for stage " + std::to_string(g.stage)) +
                " is given twice, first " + std::to_string(earlier.bytes) + " B (gaps[" +
                std::to_string(j) + "]), then " + std::to_string(g.bytes) +
                " B; give one reading per kind and stage");
    break;
  }
}

// Every field but the layout and the activation inputs: precision, optimizer, device, and the
// measurements and gap entries read from a run.
void validate_precision_device_and_readings(const Config& config, Diagnostics& d) {
  validate_allocator(config, d);
  validate_precision_and_optimizer(config, d);
  validate_device(config, d);
  if (config.measurements.size() > max_measurements) {
    d.error("measurements", "at most " + std::to_string(max_measurements) + " are accepted");
  }
  for (std::size_t i = 0; i < config.measurements.size() && i < max_measurements; ++i) {
    validate_measurement(config, config.measurements[i], "measurements[" + std::to_string(i) + "]",
                         d);
  }
  if (config.gaps.size() > max_measurements) {
    d.error("gaps", "at most " + std::to_string(max_measurements) + " are accepted");
  }
  for (std::size_t i = 0; i < config.gaps.size() && i < max_measurements; ++i) {
    validate_gap(config, i, "gaps[" + std::to_string(i) + "]", d);
  }
}

}  // namespace

namespace {

// Sequence, batch, recompute and kernel options; the layout's sizes are checked by validate_layout.
// torchtitan's pieces are its Llama-3 model's (memory/torchtitan_pieces.cpp): what that model
// and its AC cannot express is refused, naming the field.
void validate_torchtitan(const Model& model, const Config& config, Diagnostics& d) {
  const TrainingConfig& t = config.training;
  if (t.framework != Framework::torchtitan) return;
  const bool llama = std::all_of(model.layers.begin(), model.layers.end(), [](const LayerKind& k) {
    return k.attention == AttentionKind::gqa && k.mlp == MlpKind::dense;
  });
  if (!llama || model.mtp_layers > 0 || model.attn_res.block_size > 0 || model.gqa.qk_norm ||
      model.gqa.qkv_bias || model.gqa.output_bias || model.dense_mlp.bias ||
      model.dense_mlp.activation != MlpActivation::swiglu || model.learned_positions > 0) {
    d.error("framework",
            "torchtitan is modelled for its Llama-3 decoder (GQA without biases or q/k norms, "
            "dense SwiGLU, RoPE); this model needs framework megatron-core");
  }
  if (t.dropout) d.error("training.dropout", "torchtitan's Llama-3 has no dropout");
  if (t.kernels.tp_comm_overlap) {
    d.error("training.kernels.tp_comm_overlap",
            "Megatron's --tp-comm-overlap (TE userbuffers); torchtitan's async TP is not modelled");
  }
  if (config.parallel.context_parallel > 1) {
    d.error("parallel.cp",
            "torchtitan's context parallelism (SDPA ring attention) is not modelled: use CP 1");
  }
  if (t.recompute.policy == RecomputePolicy::full &&
      (t.recompute.method != FullRecomputeMethod::uniform || t.recompute.layers != 1)) {
    d.error("recompute.layers",
            "torchtitan's full AC checkpoints every block on its own: uniform, 1 layer");
  }
}

void validate_activation_inputs(const Model& model, const Config& config, Diagnostics& d) {
  validate_torchtitan(model, config, d);
  const TrainingConfig& t = config.training;
  const ParallelLayout& layout = config.parallel;
  const auto range = [&](const char* field, std::int64_t value, std::int64_t low,
                         std::int64_t high) {
    if (!in_range(value, low, high)) {
      d.error(field, "must be an integer in [" + std::to_string(low) + ", " + std::to_string(high) +
                         "], got " + std::to_string(value));
      return false;
    }
    return true;
  };
  const bool sequence_ok =
      range("training.sequence_length", t.sequence_length, 1, std::int64_t{1} << 24);
  range("training.micro_batch", t.micro_batch, 1, 65536);
  range("training.global_batch", t.global_batch, 1, std::int64_t{1} << 30);
  range("kernels.kda_chunk", t.kernels.kda_chunk, 16, 1024);
  if (static_cast<std::size_t>(t.kernels.gemm_workspaces) >= enum_names<GemmWorkspaces>.size()) {
    d.error("training.kernels.gemm_workspaces", one_of(enum_names<GemmWorkspaces>));
  }
  range("kernels.cross_entropy_chunk", t.kernels.cross_entropy_chunk, 1, std::int64_t{1} << 24);
  range("kernels.attn_res_live_temporaries", t.kernels.attn_res_live_temporaries, 0, 64);
  if (!(t.routing_imbalance >= 1.0 && t.routing_imbalance <= 1024.0)) {
    d.error("training.routing_imbalance", "must be a number in [1, 1024] (1: balanced routing)");
  }
  if (t.recompute.modules >= (std::uint32_t{1} << recompute_module_count)) {
    d.error("recompute.modules",
            "unknown module bits; known: core_attn, moe_act, layernorm, "
            "mla_up_proj, mlp, moe, shared_experts");
  }
  if (t.recompute.policy == RecomputePolicy::full) {
    range("recompute.layers", t.recompute.layers, 1,
          static_cast<std::int64_t>(model.layers.size()));
  }
  // Token-wise tensors are split over CP (and over TP under sequence parallelism) exactly.
  const std::int64_t cp = std::max<std::int64_t>(1, layout.context_parallel);
  const std::int64_t sequence_split =
      cp * (layout.sequence_parallel ? std::max<std::int64_t>(1, layout.tensor_parallel) : 1);
  if (sequence_ok && t.sequence_length % sequence_split != 0) {
    d.error("training.sequence_length",
            std::to_string(t.sequence_length) + " must be a multiple of CP" +
                std::string(layout.sequence_parallel ? " x TP (sequence parallel)" : "") + " = " +
                std::to_string(sequence_split));
  }
  const bool uses_moe = std::any_of(model.layers.begin(), model.layers.end(),
                                    [](const LayerKind& k) { return k.mlp == MlpKind::moe; });
  if (uses_moe && layout.tensor_parallel > 1 && !layout.sequence_parallel) {
    d.error("parallel.sequence_parallel",
            "MoE layers with TP > 1 need sequence parallelism (as Megatron-core requires)");
  }
  if (t.kernels.tp_comm_overlap && (layout.tensor_parallel < 2 || !layout.sequence_parallel)) {
    d.error("training.kernels.tp_comm_overlap",
            "tensor-parallel communication overlap needs TP > 1 with sequence parallelism (as "
            "Megatron's arguments require)");
  }
  if (d.ok()) {
    Diagnostics batch;
    const std::int64_t m =
        micro_batches_per_step(t.global_batch, t.micro_batch, data_parallel_size(layout), batch);
    for (auto& e : batch.errors) d.error(std::move(e.field), std::move(e.message));
    // Megatron's interleaved schedule (forward_backward_pipelining_with_interleaving) refuses
    // fewer micro-batches than PP and a remainder: M must be a positive multiple of PP.
    const std::int64_t pp = layout.pipeline_parallel;
    const bool dualpipev = layout.schedule == PipelineSchedule::dualpipev;
    // DualPipeV.step asserts num_chunks >= num_ranks * 2 (dualpipe/dualpipev.py).
    if (batch.ok() && dualpipev && m < 2 * pp) {
      d.error("training.global_batch",
              "schedule dualpipev needs the micro-batches per step M = training.global_batch / "
              "(training.micro_batch x parallel.data_parallel) = " +
                  std::to_string(t.global_batch) + " / (" + std::to_string(t.micro_batch) + " x " +
                  std::to_string(data_parallel_size(layout)) + ") = " + std::to_string(m) +
                  " to be at least 2 x PP = " + std::to_string(2 * pp) +
                  " (DualPipeV.step asserts it): raise gbs or lower mbs, DP or PP");
    }
    if (dualpipev) {
      d.warn("parallel.schedule",
             "dualpipev: the zero-bubble weight-gradient retention (each linear layer's input and "
             "output gradient kept from its B to its W, in warm-up and cool-down) is not counted: "
             "a named gap (docs/physics-notes.md, DualPipeV)");
    }
    if (batch.ok() && !dualpipev && layout.virtual_stages > 1 && pp > 1 &&
        (m < pp || m % pp != 0)) {
      d.error("training.global_batch",
              "the interleaved schedule (vpp " + std::to_string(layout.virtual_stages) +
                  ") needs the micro-batches per step M = gbs / (mbs x DP) = " +
                  std::to_string(t.global_batch) + " / (" + std::to_string(t.micro_batch) + " x " +
                  std::to_string(data_parallel_size(layout)) + ") = " + std::to_string(m) +
                  " to be a multiple of PP = " + std::to_string(pp) +
                  " (Megatron refuses it otherwise): change gbs, mbs, DP or PP");
    }
  }
}

}  // namespace

Config default_config() {
  return Config{};
}

std::optional<Model> resolve_model(const Config& config, Diagnostics& d) {
  if (!config.custom_model.empty()) {
    DecodedModel decoded = model_from_text(config.custom_model, "custom_model");
    for (auto& e : decoded.diagnostics.errors) d.error(std::move(e.field), std::move(e.message));
    return decoded.model;
  }
  auto model = find_preset(config.model);
  if (!model) {
    std::string names;
    for (std::string_view n : preset_names()) names += (names.empty() ? "" : ", ") + std::string(n);
    d.error("model",
            "unknown preset '" + config.model.substr(0, 64) + "'; known presets: " + names);
  }
  return model;
}

Diagnostics validate(const Config& config, const Model& model) {
  Diagnostics d;
  validate_layout(model, config.parallel, d);
  validate_beyond_layout(config, model, d);
  return d;
}

void validate_beyond_layout(const Config& config, const Model& model, Diagnostics& d) {
  validate_precision_device_and_readings(config, d);
  validate_activation_inputs(model, config, d);
  // Only a given fla release can lack KDA: the layers are not walked otherwise (every estimate
  // validates, a sweep thousands of times).
  const bool has_kda =
      config.training.stack.fla.given() &&
      std::any_of(model.layers.begin(), model.layers.end(),
                  [](const LayerKind& k) { return k.attention == AttentionKind::kda; });
  check_stack(config.training, has_kda, d);
}

Diagnostics validate(const Config& config) {
  Diagnostics d;
  const auto model = resolve_model(config, d);
  if (!model) return d;
  return validate(config, *model);
}

}  // namespace stagemem
