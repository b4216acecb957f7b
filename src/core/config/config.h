// config.h — the whole input of one estimate: which model, how it is laid out, how it trains.
//
// Purpose: the single value every front end edits and every encoding (URL fragment, JSON, CLI
// flags) round-trips. Defaults here are the defaults everywhere; encodings store only differences.
// Defaults follow Megatron-core with TransformerEngine: bf16 weights, fp32 main gradients, Adam
// without the distributed optimizer, fp32 master weights and fp32 moments.
//
// Units: bytes (int64) for every memory amount; counts are plain integers.
//
// Allowed ranges (validate() enforces them and names the field on error):
//  - precision.dense_weights, precision.expert_weights: a WeightDtype name (weight_dtype_name);
//    expert_weights applies to routed-expert matrices only.
//  - precision.grads: fp32 | bf16.
//  - optimizer.kind: adam | distributed-adam | muon | distributed-muon.
//  - optimizer.master_weights: fp32 | fp16 (fp16 only with the precision-aware optimizer, as in
//    Megatron's --main-params-dtype); ignored when the weights are fp32 (they are the master).
//  - optimizer.moments: fp32 | bf16 | fp16 | fp8 (Megatron --exp-avg-dtype/--exp-avg-sq-dtype of
//    the precision-aware optimizer; Muon's momentum uses the same dtype).
//  - optimizer.muon_*: booleans; which tensors Muon updates (the rest use AdamW).
//  - optimizer.cast_copy: none | muon-group | all (a bf16 copy the optimizer keeps).
//  - optimizer.param_gather: buffer | layer-wise | layer-wise-2026-01 (distributed Muon's
//    parameter all-gather implementation, ParamGather).
//  - optimizer.muon_tp_mode: duplicated | blockwise | distributed (MuonTpMode).
//  - precision.gradient_accumulation_fusion: boolean.
//  - precision.fp8_recipe and the other low-precision compute fields: training.h.
//  - device.preset: "" (no device) or a name from devices.h; device.bytes: 0 (use the preset) or
//    an integer in [1, 2^50] bytes, which overrides the preset (a custom device).
//  - measurements[i]: point (MeasurementPoint), stage in [0, PP-1], bytes in [0, 2^50], source
//    text 1..200 characters, term: required (1..120 characters) only for point `term`.
//  - gaps[i]: kind (GapKind), stage in [-1, PP-1] (-1: every stage), bytes in [0, 2^50], source
//    text 1..200 characters. A gap is only ever a MEASURED value; there is no default amount.
// Limitations: one model per configuration (no vision towers).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/diagnostics.h"
#include "base/enum_names.h"
#include "config/training.h"
#include "parallel/layout.h"

namespace stagemem {

// How a parameter tensor is stored on the device during training.
enum class WeightDtype : std::uint8_t {
  bf16,
  fp32,
  fp8_tensor_scaled,  // fp8 e4m3 values, one fp32 scale per tensor (TE delayed/current scaling)
  fp8_block_scaled,   // fp8 e4m3 values, one fp32 scale per 128 x 128 block (DeepSeek-V3 recipe)
  mxfp8,              // fp8 e4m3 values, one e8m0 (1 B) scale per 32 values (OCP MX)
  mxfp4,              // fp4 e2m1 values (0.5 B), one e8m0 (1 B) scale per 32 values (OCP MX)
  nvfp4,  // fp4 e2m1 values (0.5 B), one e4m3 (1 B) scale per 16 values and an fp32 tensor amax
          // (TE NVFP4Tensor; Megatron --fp4-param-gather)
};
template <>
struct EnumNames<WeightDtype> {
  static constexpr std::array<std::string_view, 7> names = {
      "bf16", "fp32", "fp8-tensor", "fp8-block", "mxfp8", "mxfp4", "nvfp4"};
};
static_assert(names_end_at<WeightDtype::nvfp4>());
inline constexpr int weight_dtype_count = static_cast<int>(enum_count<WeightDtype>);

enum class GradDtype : std::uint8_t { fp32, bf16 };
template <>
struct EnumNames<GradDtype> {
  static constexpr std::array<std::string_view, 2> names = {"fp32", "bf16"};
};
static_assert(names_end_at<GradDtype::bf16>());
enum class OptimizerKind : std::uint8_t { adam, distributed_adam, muon, distributed_muon };
template <>
struct EnumNames<OptimizerKind> {
  static constexpr std::array<std::string_view, 4> names = {"adam", "distributed-adam", "muon",
                                                            "distributed-muon"};
};
static_assert(names_end_at<OptimizerKind::distributed_muon>());
enum class MasterDtype : std::uint8_t { fp32, fp16 };
template <>
struct EnumNames<MasterDtype> {
  static constexpr std::array<std::string_view, 2> names = {"fp32", "fp16"};
};
static_assert(names_end_at<MasterDtype::fp16>());
enum class MomentDtype : std::uint8_t { fp32, bf16, fp16, fp8 };
template <>
struct EnumNames<MomentDtype> {
  static constexpr std::array<std::string_view, 4> names = {"fp32", "bf16", "fp16", "fp8"};
};
static_assert(names_end_at<MomentDtype::fp8>());
enum class CastCopy : std::uint8_t { none, muon_group, all };
template <>
struct EnumNames<CastCopy> {
  static constexpr std::array<std::string_view, 3> names = {"none", "muon-group", "all"};
};
static_assert(names_end_at<CastCopy::all>());
// How a distributed optimizer brings the updated parameters back to every rank after step():
//  - buffer: Megatron's bucketed all-gather in place into the bf16 parameter buffer (distributed
//    Adam always; distributed Muon with `use_buffer_param_sync`, current Megatron): no extra bytes;
//  - layer_wise: the legacy layer-wise (distributed Muon) `allgather_params`: the rank's own
//    flattened shard plus one receive buffer per other rank, i.e. the whole un-sharded bf16 group,
//    one group (dense, then routed experts) at a time;
//  - layer_wise_2026_01: its first version (Megatron commit 5548cdc57b, 2026-01-14) that also
//    received into a slot for the own rank: (1 + 1/D) x the group.
// Only distributed Muon offers a choice; distributed Adam always gathers in place.
enum class ParamGather : std::uint8_t { buffer, layer_wise, layer_wise_2026_01 };
template <>
struct EnumNames<ParamGather> {
  static constexpr std::array<std::string_view, 3> names = {"buffer", "layer-wise",
                                                            "layer-wise-2026-01"};
};
static_assert(names_end_at<ParamGather::layer_wise_2026_01>());
// Megatron's `--muon-tp-mode`: how Muon orthogonalises a tensor-parallel weight.
//  - duplicated (Megatron's default): all-gather the fp32 shards, concatenate, Newton-Schulz on
//    the full matrix on every rank;
//  - blockwise: Newton-Schulz on the local shard only;
//  - distributed: Newton-Schulz on the shard with X X^T all-reduced over TP.
enum class MuonTpMode : std::uint8_t { duplicated, blockwise, distributed };
template <>
struct EnumNames<MuonTpMode> {
  static constexpr std::array<std::string_view, 3> names = {"duplicated", "blockwise",
                                                            "distributed"};
};
static_assert(names_end_at<MuonTpMode::distributed>());

inline std::string_view weight_dtype_name(WeightDtype dtype) {
  return enum_name(dtype);
}  // "bf16", "fp8-tensor", "mxfp4", ...
inline std::string_view grad_dtype_name(GradDtype dtype) {
  return enum_name(dtype);
}
inline std::string_view optimizer_kind_name(OptimizerKind kind) {
  return enum_name(kind);
}  // "distributed-muon", ...
inline std::string_view master_dtype_name(MasterDtype dtype) {
  return enum_name(dtype);
}
inline std::string_view moment_dtype_name(MomentDtype dtype) {
  return enum_name(dtype);
}
inline std::string_view cast_copy_name(CastCopy copy) {
  return enum_name(copy);
}
inline std::string_view param_gather_name(ParamGather gather) {
  return enum_name(gather);
}
inline std::string_view muon_tp_mode_name(MuonTpMode mode) {
  return enum_name(mode);
}
inline std::optional<WeightDtype> parse_weight_dtype(std::string_view name) {
  return parse_enum<WeightDtype>(name);
}
inline std::optional<GradDtype> parse_grad_dtype(std::string_view name) {
  return parse_enum<GradDtype>(name);
}
inline std::optional<OptimizerKind> parse_optimizer_kind(std::string_view name) {
  return parse_enum<OptimizerKind>(name);
}
inline std::optional<MasterDtype> parse_master_dtype(std::string_view name) {
  return parse_enum<MasterDtype>(name);
}
inline std::optional<MomentDtype> parse_moment_dtype(std::string_view name) {
  return parse_enum<MomentDtype>(name);
}
inline std::optional<CastCopy> parse_cast_copy(std::string_view name) {
  return parse_enum<CastCopy>(name);
}
inline std::optional<ParamGather> parse_param_gather(std::string_view name) {
  return parse_enum<ParamGather>(name);
}
inline std::optional<MuonTpMode> parse_muon_tp_mode(std::string_view name) {
  return parse_enum<MuonTpMode>(name);
}

struct Precision {
  WeightDtype dense_weights = WeightDtype::bf16;   // linear-layer matrices outside routed experts
  WeightDtype expert_weights = WeightDtype::bf16;  // routed-expert matrices
  GradDtype grads = GradDtype::fp32;               // Megatron's main_grad buffer
  // Megatron's gradient-accumulation fusion (on unless `--no-gradient-accumulation-fusion`): the
  // weight-gradient GEMM accumulates straight into main_grad, and TransformerEngine (and
  // Megatron's own linear layers) hand autograd a dummy bf16 weight gradient instead, one
  // buffer per distinct weight shape, kept for the whole run (TE module/base.py get_dummy_wgrad).
  bool gradient_accumulation_fusion = true;
  friend bool operator==(const Precision&, const Precision&) = default;
};

struct OptimizerConfig {
  OptimizerKind kind = OptimizerKind::adam;
  MasterDtype master_weights = MasterDtype::fp32;
  MomentDtype moments = MomentDtype::fp32;
  // Which tensors Muon updates; everything else is AdamW. The default is Megatron's filter: 2-D
  // linear weights (routers and expert matrices included), not embedding, head, norms, biases,
  // vectors or convolution kernels.
  bool muon_routers = true;
  bool muon_expert_matrices = true;
  bool muon_embedding_and_head = false;
  CastCopy cast_copy = CastCopy::none;
  ParamGather param_gather = ParamGather::buffer;    // distributed Muon only
  MuonTpMode muon_tp_mode = MuonTpMode::duplicated;  // Muon with TP or ETP > 1 only
  friend bool operator==(const OptimizerConfig&, const OptimizerConfig&) = default;
};

struct DeviceConfig {
  std::string preset{};    // "" : no device; otherwise a devices.h name
  std::int64_t bytes = 0;  // > 0: custom usable bytes (overrides the preset)
  friend bool operator==(const DeviceConfig&, const DeviceConfig&) = default;
};

// When a measured number was read. Each point sees exactly the terms allocated before it.
enum class MeasurementPoint : std::uint8_t {
  after_model_init,      // model built and wrapped (weights, gradient buffers)
  after_optimizer_init,  // optimizer constructed, before the first step (no lazy state yet)
  after_first_step,      // between steps once the first step ran (all resident state alive)
  steady_state_peak,  // per-rank peak of a steady-state step (resident + activations + transients)
  term,               // one named term of the report
};
template <>
struct EnumNames<MeasurementPoint> {
  static constexpr std::array<std::string_view, 5> names = {
      "after-model-init", "after-optimizer-init", "after-first-step", "steady-state-peak", "term"};
};
static_assert(names_end_at<MeasurementPoint::term>());
inline constexpr int measurement_point_count = static_cast<int>(enum_count<MeasurementPoint>);
inline std::string_view measurement_point_name(MeasurementPoint point) {
  return enum_name(point);
}  // "after-optimizer-init", ...
inline std::optional<MeasurementPoint> parse_measurement_point(std::string_view name) {
  return parse_enum<MeasurementPoint>(name);
}

// Which of PyTorch's allocator figures a reading is: torch.cuda.memory_allocated,
// max_memory_allocated, memory_reserved or max_memory_reserved (what Megatron's memory report
// prints); unspecified for a number entered without saying.
enum class MemoryFigure : std::uint8_t {
  unspecified,
  allocated,
  max_allocated,
  reserved,
  max_reserved
};
template <>
struct EnumNames<MemoryFigure> {
  static constexpr std::array<std::string_view, 5> names = {
      "unspecified", "allocated", "max-allocated", "reserved", "max-reserved"};
};
static_assert(names_end_at<MemoryFigure::max_reserved>());
inline constexpr int memory_figure_count = static_cast<int>(enum_count<MemoryFigure>);
inline std::string_view memory_figure_name(MemoryFigure figure) {
  return enum_name(figure);
}  // "unspecified", "max-allocated", ...
inline std::optional<MemoryFigure> parse_memory_figure(std::string_view name) {
  return parse_enum<MemoryFigure>(name);
}

struct Measurement {
  MeasurementPoint point = MeasurementPoint::steady_state_peak;
  std::int64_t stage = 0;  // pipeline rank the reading was taken on
  std::int64_t bytes = 0;  // per rank
  std::string source{};    // who measured it and how, e.g. "torch.cuda.memory_allocated, run 17"
  std::string term{};      // point == term: the term's name as the report spells it
  // The global rank that printed it (a training log's "[Rank r]"), -1 when not known; its
  // pipeline coordinate under the layout must be `stage`.
  std::int64_t rank = -1;
  MemoryFigure figure = MemoryFigure::unspecified;
  // A training log's reading: how many iterations had run when it was printed (Megatron's
  // "(after N iterations)"), -1 when not known. An allocated figure then is read between steps
  // (point after-first-step holds for any N >= 1); a max figure covers iterations 1..N, so with
  // N = 1 it is the first step's peak, before lazily allocated state lived through a forward.
  std::int64_t iteration = -1;
  friend bool operator==(const Measurement&, const Measurement&) = default;
};
inline constexpr std::int64_t max_rank = (std::int64_t{1} << 20) - 1;
inline constexpr std::int64_t max_iteration = (std::int64_t{1} << 40) - 1;

// Memory that shapes cannot derive. Each appears as a named row, zero unless measured.
enum class GapKind : std::uint8_t {
  allocator_fragmentation,
  communication_buffers,
  runtime_context,
  math_library_workspaces,
};
template <>
struct EnumNames<GapKind> {
  static constexpr std::array<std::string_view, 4> names = {
      "allocator-fragmentation", "communication-buffers", "runtime-context",
      "math-library-workspaces"};
};
static_assert(names_end_at<GapKind::math_library_workspaces>());
inline constexpr int gap_kind_count = static_cast<int>(enum_count<GapKind>);
inline std::string_view gap_kind_name(GapKind kind) {
  return enum_name(kind);
}  // "allocator-fragmentation", ...
inline std::optional<GapKind> parse_gap_kind(std::string_view name) {
  return parse_enum<GapKind>(name);
}

struct GapEntry {
  GapKind kind = GapKind::allocator_fragmentation;
  std::int64_t stage = -1;  // -1: the same reading applies to every stage
  std::int64_t bytes = 0;
  std::string source{};
  friend bool operator==(const GapEntry&, const GapEntry&) = default;
};

inline constexpr std::int64_t max_config_bytes = std::int64_t{1} << 50;  // 1 PiB: any real device
inline constexpr std::size_t max_source_length = 200;
inline constexpr std::size_t max_term_name_length = 120;
inline constexpr std::size_t max_measurements = 64;

struct Config {
  std::string model = "llama-3.1-8b";  // a preset name (presets.h); ignored with custom_model
  // A custom model in the one-line text form of model_text.h (e.g. from a pasted Hugging Face
  // config.json); empty: use the preset.
  std::string custom_model{};
  ParallelLayout parallel{.pipeline_parallel = 4};
  Precision precision{};
  OptimizerConfig optimizer{};
  DeviceConfig device{};
  TrainingConfig training{};
  std::vector<Measurement> measurements{};
  std::vector<GapEntry> gaps{};
  friend bool operator==(const Config&, const Config&) = default;
};

// The one default configuration: what a link's missing keys, a JSON document's missing fields and
// the CLI without flags mean, and where the app starts (it adds only a device, and says so). It
// is Config{}; front ends call this instead of spelling defaults of their own, so the three
// cannot drift apart. Changing it changes what every old link means: it must stay as it is.
Config default_config();

// The model a configuration describes: its custom model text if any, else its preset.
std::optional<Model> resolve_model(const Config& config, Diagnostics& diagnostics);
// Every check of the configuration against its model; errors name the field.
Diagnostics validate(const Config& config, const Model& model);
Diagnostics validate(const Config& config);  // resolves the model first
// Every check but validate_layout's (which depends on the model and config.parallel only).
void validate_beyond_layout(const Config& config, const Model& model, Diagnostics& diagnostics);

}  // namespace stagemem
