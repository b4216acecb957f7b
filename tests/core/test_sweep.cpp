// Tests of plan/sweep.h: the sweepable rule, axis parsing and its errors, the grid's cell order,
// cells equal to fresh estimates of their configurations, and a cursor resumed in slices equal to
// the grid computed at once.
#include <algorithm>
#include <set>

#include "catch.h"
#include "config/config.h"
#include "config/config_fields.h"
#include "estimate/estimate.h"
#include "model/presets.h"
#include "parallel/layout.h"
#include "plan/sweep.h"
#include "report/report.h"

using namespace stagemem;

namespace {

SweepAxis axis(std::string_view key, std::string_view values, const Config& base) {
  Diagnostics d;
  auto parsed = parse_sweep_axis(key, values, base, 64, key, d);
  INFO(key << ": " << (d.ok() ? std::string() : d.errors[0].message));
  REQUIRE(parsed);
  return *parsed;
}

FieldMessage parse_error(std::string_view key, std::string_view values, std::size_t max_values,
                         std::string_view name) {
  Diagnostics d;
  const auto parsed = parse_sweep_axis(key, values, Config{}, max_values, name, d);
  CHECK(!parsed);
  REQUIRE(d.errors.size() == 1);
  return d.errors[0];
}

// The same cell, field by field (results only; where a cell's stage peaks sit in the flat list is
// compared through sweep_stage_peaks).
void check_same_cell(const SweepRun& a, const SweepRun& b, std::size_t i) {
  INFO("cell " << i);
  const SweepCell& x = a.cells[i];
  const SweepCell& y = b.cells[i];
  CHECK(x.evaluated == y.evaluated);
  CHECK(x.valid == y.valid);
  CHECK(x.is_base == y.is_base);
  CHECK(x.fit == y.fit);
  CHECK(x.binding_stage == y.binding_stage);
  CHECK(x.max_peak_bytes == y.max_peak_bytes);
  CHECK(x.min_headroom_bytes == y.min_headroom_bytes);
  CHECK(x.device_bytes == y.device_bytes);
  CHECK(x.world_size == y.world_size);
  CHECK(x.error.field == y.error.field);
  CHECK(x.error.message == y.error.message);
  const auto px = sweep_stage_peaks(a, x);
  const auto py = sweep_stage_peaks(b, y);
  CHECK(std::vector<std::int64_t>(px.begin(), px.end()) ==
        std::vector<std::int64_t>(py.begin(), py.end()));
}

}  // namespace

TEST_CASE("Sweepable fields hold one value: lists and sets and free text do not", "[sweep]") {
  // The field table's 77 fields less stages (a list), recompute_modules (a set), custom and
  // layout (free text) and stack (name=version pairs): 72. model and device are text that names
  // one preset.
  std::set<std::string_view> keys;
  for (const ConfigField* field : sweepable_fields()) keys.insert(field->key);
  CHECK(config_fields().size() == 77);
  CHECK(keys.size() == 72);
  for (std::string_view key : {"stages", "recompute_modules", "custom", "layout", "stack"}) {
    INFO(key);
    CHECK(!sweepable(*find_field_by_key(key)));
    CHECK(keys.count(key) == 0);
  }
  for (std::string_view key : {"model", "device", "seq", "mbs", "recompute", "sp", "imbalance"}) {
    INFO(key);
    CHECK(sweepable(*find_field_by_key(key)));
  }
  // The rule is the kind's (a text field: whether it names one item).
  for (const ConfigField& field : config_fields()) {
    INFO(field.key);
    const bool one_value = field.kind == FieldKind::integer || field.kind == FieldKind::boolean ||
                           field.kind == FieldKind::number || field.kind == FieldKind::choice ||
                           (field.kind == FieldKind::text && field.names != nullptr);
    CHECK(sweepable(field) == one_value);
  }
  // In the table's order.
  CHECK(sweepable_fields().front()->key == "model");
  CHECK(sweepable_fields()[1]->key == "tp");
}

TEST_CASE("An axis is parsed from text: blanks ignored and empty values skipped", "[sweep]") {
  const Config base;
  const SweepAxis seq = axis("seq", " 4096 ,8192,, 16384 ", base);
  CHECK(seq.field == find_field_by_key("seq"));
  CHECK(seq.name == "seq");
  CHECK(seq.values == std::vector<std::string>{"4096", "8192", "16384"});
  CHECK(axis("recompute", "none,full", base).values == std::vector<std::string>{"none", "full"});
  CHECK(axis("model", "llama-3.1-8b, llama-3.1-70b", base).values.size() == 2);
  // Text forms are checked, not what only the estimate knows: an unknown preset is a value.
  CHECK(axis("model", "no-such-model", base).values == std::vector<std::string>{"no-such-model"});
}

TEST_CASE("Axis errors name the field as given and the allowed values", "[sweep]") {
  FieldMessage e = parse_error("seq", "4096, abc", 64, "--seq");
  CHECK(e.field == "--seq");
  CHECK(e.message == "'abc' is not an integer: expected an integer in [1, 16777216]");
  e = parse_error("recompute", "none,bogus", 64, "recompute");
  CHECK(e.field == "recompute");
  CHECK(e.message == "'bogus' is not a known name: expected one of: none, selective, full");
  e = parse_error("seq", "1,2,3,4", 3, "seq");
  CHECK(e.message == "at most 3 values");
  e = parse_error("mbs", " , ", 64, "mbs");
  CHECK(e.message ==
        "give at least one value: expected a comma-separated list, each an integer in [1, 65536]");
  // A field that cannot be swept, and a key that is no field: the sweepable keys are listed.
  e = parse_error("custom", "h:1", 64, "custom");
  CHECK(e.field == "custom");
  CHECK(
      e.message.starts_with("cannot be swept (its value is free text): expected one of: model, "
                            "tp, pp, vpp, cp, ep, etp, dp, world, sp, "));
  CHECK(e.message.ends_with(
      ", schedule, fp8_amax_history_len, bf16_layers_at_start, bf16_layers_at_end, fp8_attention, "
      "tp_comm_overlap, framework, dp_impl, sharding, dp_shard, reshard_after_forward, "
      "reshard_ranks, reduce_dtype, fsdp_prefetch, overlap_grad_reduce, ddp_bucket_size, "
      "expandable_segments, max_split_size_mb, roundup_power2_divisions, "
      "empty_unused_memory_level, per_process_memory_fraction, garbage_collection_threshold"));
  CHECK(parse_error("stages", "1,2", 64, "stages")
            .message.starts_with("cannot be swept (its value is a list)"));
  CHECK(parse_error("recompute_modules", "core_attn", 64, "x")
            .message.starts_with("cannot be swept (its value is a set)"));
  e = parse_error("warp", "9", 64, "view.x");
  CHECK(e.field == "view.x");
  CHECK(e.message.starts_with("'warp' is not a configuration field: expected one of: model, tp,"));
}

TEST_CASE("Cell order: the last axis varies fastest; a cell's values and configuration",
          "[sweep]") {
  Config base;
  base.parallel.context_parallel = 2;
  SweepGrid grid{base,
                 {axis("recompute", "none, full", base), axis("seq", "4096, 8193", base),
                  axis("tp", "1, 2", base)}};
  // 2 x 2 x 2 = 8 cells; cell = recompute x 4 + seq x 2 + tp. Cell 5 = 1 x 4 + 0 x 2 + 1:
  // recompute full, seq 4096, tp 2.
  CHECK(sweep_cell_count(grid.axes) == 8);
  CHECK(sweep_value_index(grid, 5, 0) == 1);
  CHECK(sweep_value_index(grid, 5, 1) == 0);
  CHECK(sweep_value_index(grid, 5, 2) == 1);
  Config five = base;
  REQUIRE(apply_sweep_values(grid, 5, five));
  Config expected = base;
  expected.training.recompute.policy = RecomputePolicy::full;
  expected.parallel.tensor_parallel = 2;
  CHECK(five == expected);
  // Over another configuration, only the axes' fields change.
  Config other;
  other.parallel.pipeline_parallel = 8;
  other.training.sequence_length = 2048;
  REQUIRE(apply_sweep_values(grid, 5, other));
  CHECK(other.parallel.pipeline_parallel == 8);
  CHECK(other.parallel.tensor_parallel == 2);
  CHECK(other.training.sequence_length == 4096);
  CHECK(other.training.recompute.policy == RecomputePolicy::full);
  // An axis built by hand with a value that does not parse: nothing is written.
  SweepGrid bad = grid;
  bad.axes[2].values[1] = "two";
  Config untouched = base;
  CHECK(!apply_sweep_values(bad, 5, untouched));
  CHECK(untouched == base);
  CHECK(sweep_cell_count(std::vector<SweepAxis>{}) == 1);
  // 2^32 values on each of two axes would be 2^64 cells: the count saturates.
  SweepAxis huge{find_field_by_key("seq"), "seq", {}};
  huge.values.resize(std::size_t{1} << 16);
  CHECK(sweep_cell_count(std::vector<SweepAxis>(4, huge)) == INT64_MAX);          // 2^64 > 2^63 - 1
  const SweepRun refused = start_sweep({base, std::vector<SweepAxis>(2, huge)});  // 2^32 cells
  CHECK(refused.cells.empty());
  CHECK(refused.error.message == "the grid has more than 1000000 cells");
}

TEST_CASE("Sweep cells equal fresh estimates of their configurations", "[sweep]") {
  // Llama-3.1-8B at PP 4, CP 2 (DP derives to 1) on an H200 (143,156 MiB = 150,109,945,856 B),
  // over recompute x seq x tp; seq 8193 is not a multiple of CP 2, so half the cells are invalid.
  Config base;
  base.parallel.context_parallel = 2;
  base.device.preset = "h200";
  const SweepGrid grid{base,
                       {axis("recompute", "none, full", base), axis("seq", "4096, 8193", base),
                        axis("tp", "1, 2", base)}};
  const SweepRun run = compute_sweep(grid);
  REQUIRE(run.cells.size() == 8);
  CHECK(run.evaluated == 8);
  CHECK(run.models.size() == 1);  // one model, one cache, for every cell
  REQUIRE(run.devices.size() == 1);
  CHECK(run.devices[0].name == "h200");
  CHECK(run.devices[0].bytes == 150'109'945'856);
  const Model model = *find_preset("llama-3.1-8b");
  std::int64_t largest = 0;
  for (std::size_t i = 0; i < run.cells.size(); ++i) {
    INFO("cell " << i);
    Config config = grid.base;
    REQUIRE(apply_sweep_values(grid, i, config));
    const Report fresh = estimate(config, model);  // full terms, no cache
    const SweepCell& cell = run.cells[i];
    CHECK(cell.evaluated);
    CHECK(cell.is_base == (i == 0));  // recompute none, seq 4096, tp 1: the base's own
    // GPUs: TP x PP 4 x CP 2 x DP 1 = 8 at TP 1, 16 at TP 2.
    CHECK(cell.world_size == (sweep_value_index(grid, i, 2) == 0 ? 8 : 16));
    const bool valid = sweep_value_index(grid, i, 1) == 0;  // seq 4096
    REQUIRE(cell.valid == valid);
    REQUIRE(fresh.diagnostics.ok() == valid);
    if (!valid) {
      CHECK(cell.error.field == "training.sequence_length");
      CHECK(cell.error.message == "8193 must be a multiple of CP = 2");
      CHECK(cell.error.message == fresh.diagnostics.errors[0].message);
      CHECK(cell.fit == SweepFit::invalid);
      CHECK(sweep_stage_peaks(run, cell).empty());
      continue;
    }
    const auto peaks = sweep_stage_peaks(run, cell);
    REQUIRE(peaks.size() == fresh.stages.size());
    REQUIRE(peaks.size() == 4);
    for (std::size_t s = 0; s < peaks.size(); ++s) CHECK(peaks[s] == fresh.stages[s].peak_bytes);
    const std::int64_t binding_peak =
        fresh.stages[static_cast<std::size_t>(fresh.binding_stage)].peak_bytes;
    CHECK(cell.binding_stage == fresh.binding_stage);
    CHECK(cell.max_peak_bytes == binding_peak);
    CHECK(cell.device_bytes == 150'109'945'856);
    CHECK(cell.min_headroom_bytes == 150'109'945'856 - binding_peak);
    CHECK(cell.fit == (cell.min_headroom_bytes >= 0 ? SweepFit::fits : SweepFit::does_not_fit));
    largest = std::max(largest, binding_peak);
  }
  CHECK(run.largest_peak_bytes == largest);
}

TEST_CASE("A model axis: one model per value; an unknown preset is an invalid cell", "[sweep]") {
  const Config base;  // no device: every valid cell is "no device"
  const SweepRun run =
      compute_sweep({base, {axis("model", "llama-3.1-8b, no-such-model, llama-3.1-70b", base)}});
  REQUIRE(run.cells.size() == 3);
  CHECK(run.models.size() == 3);
  CHECK(run.devices.empty());
  CHECK(run.cells[0].valid);
  CHECK(run.cells[0].fit == SweepFit::no_device);
  CHECK(run.cells[0].min_headroom_bytes == 0);
  CHECK(run.cells[0].is_base);
  CHECK(!run.cells[1].valid);
  CHECK(run.cells[1].error.field == "model");
  CHECK(run.cells[1].error.message.starts_with("unknown preset 'no-such-model'; known presets: "));
  CHECK(run.cells[2].valid);
  Config seventy;
  seventy.model = "llama-3.1-70b";
  const Report fresh = estimate(seventy);
  CHECK(run.cells[2].max_peak_bytes ==
        fresh.stages[static_cast<std::size_t>(fresh.binding_stage)].peak_bytes);
}

TEST_CASE("Evaluation order: the axis that rebuilds the activation pieces varies slowest",
          "[sweep]") {
  const Config base;
  // Axes recompute (the activations' memo only) then seq (the pieces): cell = recompute x 2 +
  // seq. seq varies slowest: (seq 0: recompute 0, 1), (seq 1: recompute 0, 1) = cells 0, 2, 1, 3.
  const SweepRun run =
      start_sweep({base, {axis("recompute", "none, full", base), axis("seq", "2048, 4096", base)}});
  CHECK(sweep_evaluation_cell(run, 0) == 0);
  CHECK(sweep_evaluation_cell(run, 1) == 2);
  CHECK(sweep_evaluation_cell(run, 2) == 1);
  CHECK(sweep_evaluation_cell(run, 3) == 3);
  // A layout axis (tp) varies slower still, whatever the axis order.
  const SweepRun layout =
      start_sweep({base, {axis("seq", "2048, 4096", base), axis("tp", "1, 2", base)}});
  CHECK(layout.order == std::vector<std::size_t>{1, 0});
}

TEST_CASE("A sweep cursor resumed in slices equals the grid computed at once", "[sweep]") {
  Config base;
  base.device.preset = "h100-80gb";
  base.training.global_batch = 32;
  const SweepGrid grid{
      base,
      {axis("mbs", "1, 2, 3", base), axis("recompute", "none, selective, full", base),
       axis("seq", "2048, 8192", base), axis("pp", "2, 4", base)}};
  const SweepRun whole = compute_sweep(grid);
  REQUIRE(whole.cells.size() == 36);
  SweepRun sliced = start_sweep(grid);
  std::set<std::size_t> visited;
  std::size_t slices = 0;
  for (std::size_t n = 1; !sweep_complete(sliced); n = n % 5 + 1, ++slices) {
    const std::size_t before = sliced.evaluated;
    for (std::size_t k = before; k < std::min(before + n, sliced.cells.size()); ++k) {
      visited.insert(sweep_evaluation_cell(sliced, k));
    }
    CHECK(evaluate_sweep(sliced, n) == std::min(n, sliced.cells.size() - before));
    // Exactly the cells of this slice are new.
    std::size_t evaluated = 0;
    for (const SweepCell& c : sliced.cells) evaluated += c.evaluated;
    CHECK(evaluated == sliced.evaluated);
  }
  CHECK(slices > 10);
  CHECK(visited.size() == 36);  // every cell once
  CHECK(evaluate_sweep(sliced, 10) == 0);
  for (std::size_t i = 0; i < whole.cells.size(); ++i) check_same_cell(whole, sliced, i);
  CHECK(sliced.largest_peak_bytes == whole.largest_peak_bytes);
  // mbs 3 does not divide gbs 32: those cells are invalid, the rest valid.
  for (std::size_t i = 0; i < whole.cells.size(); ++i) {
    CHECK(whole.cells[i].valid == (sweep_value_index(grid, i, 0) != 2));
  }
}

TEST_CASE("Suggested sweep values around the configuration's own", "[sweep]") {
  Config c;
  c.training.sequence_length = 8192;
  c.training.global_batch = 32;  // DP 1: micro-batches dividing 32
  const auto suggested = [&](std::string_view key) {
    return suggested_sweep_values(*find_field_by_key(key), c);
  };
  // A quarter to four times 8192.
  CHECK(suggested("seq") == "2048, 4096, 8192, 16384, 32768");
  CHECK(suggested("mbs") == "1, 2, 4, 8, 16, 32");
  CHECK(suggested("recompute") == "none, selective, full");
  CHECK(suggested("sp") == "0, 1");
  CHECK(suggested("imbalance") == "1, 2, 4");  // 0.25 and 0.5 are below the minimum 1
  CHECK(suggested("dp") == "0, 1, 2, 4, 8");   // 0: derived, then powers of two
  CHECK(suggested("pp") == "1, 2, 4, 8, 16");  // 4 / 4 = 1 to 4 x 4
  CHECK(suggested("custom").empty());
  std::string presets;
  for (std::string_view n : preset_names())
    presets += (presets.empty() ? "" : ", ") + std::string(n);
  CHECK(suggested("model") == presets);
  // Every suggestion parses as an axis.
  for (const ConfigField* field : sweepable_fields()) {
    INFO(field->key);
    Diagnostics d;
    CHECK(parse_sweep_axis(*field, suggested_sweep_values(*field, c), c, 1000, field->key, d));
  }
}

TEST_CASE("A restarted sweep keeps its models and equals a fresh one", "[sweep]") {
  Config base;
  base.device.preset = "h200";
  SweepRun run =
      compute_sweep({base, {axis("seq", "2048, 4096", base), axis("mbs", "1, 2", base)}});
  REQUIRE(run.models.size() == 1);
  const SweepModel* model = run.models[0].get();
  // Another configuration (TP 2, another device) and another axis: the same model, its cache
  // refilled for the new layout where the estimate needs it.
  Config edited = base;
  edited.parallel.tensor_parallel = 2;
  edited.parallel.sequence_parallel = true;
  edited.device.preset = "b200";
  const SweepGrid grid{
      edited, {axis("recompute", "none, full", edited), axis("seq", "1024, 8192", edited)}};
  restart_sweep(run, grid);
  CHECK(run.evaluated == 0);
  CHECK(run.devices.empty());
  CHECK(run.largest_peak_bytes == 0);
  REQUIRE(run.cells.size() == 4);
  CHECK(!run.cells[0].evaluated);
  evaluate_sweep(run, 4);
  CHECK(run.models.size() == 1);
  CHECK(run.models[0].get() == model);  // resolved once, kept
  const SweepRun fresh = compute_sweep(grid);
  for (std::size_t i = 0; i < fresh.cells.size(); ++i) check_same_cell(fresh, run, i);
  REQUIRE(run.devices.size() == 1);
  CHECK(run.devices[0].name == "b200");
}

TEST_CASE("Device axes and two axes over one field give each cell its own configuration",
          "[sweep]") {
  Config base;
  base.device.preset = "h200";
  // device x seq x seq: the later seq axis is the one a cell's configuration keeps (values are
  // written in axis order), so cells differing only in the first seq value are equal.
  const SweepGrid grid{base,
                       {axis("device", "h100-80gb, b200", base), axis("seq", "2048, 4096", base),
                        axis("seq", "8192, 1024", base)}};
  const SweepRun run = compute_sweep(grid);
  REQUIRE(run.cells.size() == 8);
  REQUIRE(run.devices.size() == 2);
  CHECK(run.devices[0].name == "h100-80gb");
  CHECK(run.devices[1].name == "b200");
  const Model model = *find_preset("llama-3.1-8b");
  for (std::size_t i = 0; i < run.cells.size(); ++i) {
    INFO("cell " << i);
    Config config = base;
    REQUIRE(apply_sweep_values(grid, i, config));
    CHECK(config.training.sequence_length == (sweep_value_index(grid, i, 2) == 0 ? 8192 : 1024));
    const Report fresh = estimate(config, model);
    const SweepCell& cell = run.cells[i];
    REQUIRE(cell.valid);
    CHECK(run.devices[static_cast<std::size_t>(cell.device)].name == fresh.device.name);
    CHECK(cell.device_bytes == fresh.device.bytes);
    CHECK(cell.max_peak_bytes ==
          fresh.stages[static_cast<std::size_t>(fresh.binding_stage)].peak_bytes);
    CHECK(cell.min_headroom_bytes == fresh.device.bytes - cell.max_peak_bytes);
    CHECK(!cell.is_base);  // h200 is on no device axis value
  }
  // Cells 0 (seq 2048 then 8192) and 2 (seq 4096 then 8192) are the same configuration.
  CHECK(run.cells[0].max_peak_bytes == run.cells[2].max_peak_bytes);
}

namespace {

// The axis's values, joined as the user would type them.
std::string joined(const SweepAxis& axis) {
  std::string out;
  for (const std::string& v : axis.values) out += (out.empty() ? "" : ",") + v;
  return out;
}

}  // namespace

TEST_CASE("Values no cell can make valid are dropped, with the first reason", "[sweep]") {
  // DeepSeek-V3: 128 MLA heads (TP must divide them: 1, 2, 4, 8 of 1..8), 61 layers (PP at most
  // 61), MoE with TP > 1 needs sequence parallelism (on here).
  Config base;
  base.model = "deepseek-v3";
  base.parallel.sequence_parallel = true;
  const SweepGrid grid{
      base,
      {axis("tp", "1, 2, 3, 4, 5, 6, 7, 8", base), axis("pp", "1, 2, 3, 4, 16, 62, 64", base)}};
  const FilteredSweep filtered = filter_sweep_values(grid);
  CHECK(filtered.checked);
  CHECK(joined(filtered.grid.axes[0]) == "1,2,4,8");
  CHECK(joined(filtered.grid.axes[1]) == "1,2,3,4,16");
  REQUIRE(filtered.dropped.size() == 6);
  // The reason is the error of the cell with the other axis at the base's own value (PP 1).
  CHECK(filtered.dropped[0].axis == 0);
  CHECK(filtered.dropped[0].value == "3");
  CHECK(filtered.dropped[0].reason.field == "parallel.tp");
  CHECK(filtered.dropped[0].reason.message ==
        "tensor parallel size 3 must divide the MLA heads (128)");
  CHECK(filtered.dropped[4].axis == 1);
  CHECK(filtered.dropped[4].value == "62");
  CHECK(filtered.dropped[4].reason.field == "parallel.pp");
  CHECK(dropped_value_count(filtered, 0) == 4);
  CHECK(dropped_values_text(filtered, 0, "tp") ==
        "tp: dropped 4 of 8 values that cannot be valid with this configuration: 3, 5, 6, 7 "
        "(parallel.tp: tensor parallel size 3 must divide the MLA heads (128))");
  CHECK(dropped_values_list(filtered, 1) ==
        "62, 64 (parallel.pp: pipeline parallel size must be an integer in [1, 61], got 62 (the "
        "model's layer count is 61))");
  // Without sequence parallelism every TP > 1 is invalid with this model: only 1 stays, and the
  // reason names the rule that refuses 2 (a different field from 3's).
  Config no_sp = base;
  no_sp.parallel.sequence_parallel = false;
  const FilteredSweep strict = filter_sweep_values({no_sp, grid.axes});
  CHECK(joined(strict.grid.axes[0]) == "1");
  CHECK(dropped_values_text(strict, 0, "tp") ==
        "tp: dropped 7 of 8 values that cannot be valid with this configuration: 2, 4, 8 "
        "(parallel.sequence_parallel: MoE layers with TP > 1 need sequence parallelism (as "
        "Megatron-core requires)); 3, 5, 6, 7 (parallel.tp: tensor parallel size 3 must divide "
        "the MLA heads (128))");
}

TEST_CASE("A value is kept when any cell of it is valid, whatever the other axes hold", "[sweep]") {
  // Llama-3.1-70B (64 heads, 8 KV heads, 80 layers) on a world of 16 GPUs: TP x PP must divide
  // 16. TP 4 is valid only with PP 4 (4 x 4 = 16); PP 8 only with TP 1 or 2; TP 8 with no PP of
  // {4, 8, 32} (8 x 4 = 32 > 16) and PP 32 with no TP (32 > 16): those two are dropped.
  Config base;
  base.model = "llama-3.1-70b";
  base.parallel.world_size = 16;
  const SweepGrid grid{base, {axis("tp", "1, 2, 4, 8", base), axis("pp", "4, 8, 32", base)}};
  const FilteredSweep filtered = filter_sweep_values(grid);
  CHECK(joined(filtered.grid.axes[0]) == "1,2,4");
  CHECK(joined(filtered.grid.axes[1]) == "4,8");
  REQUIRE(filtered.dropped.size() == 2);
  CHECK(filtered.dropped[0].value == "8");
  CHECK(filtered.dropped[0].reason.field == "parallel.world_size");
  CHECK(filtered.dropped[0].reason.message ==
        "world size 16 must be a multiple of TP x PP x CP = 32");
  CHECK(filtered.dropped[1].value == "32");
  // Exact: against the whole grid computed cell by cell, a kept value has a valid cell and a
  // dropped one none.
  const SweepRun run = compute_sweep(grid);
  for (std::size_t a = 0; a < 2; ++a) {
    for (std::size_t v = 0; v < grid.axes[a].values.size(); ++v) {
      bool any_valid = false;
      for (std::size_t i = 0; i < run.cells.size(); ++i) {
        any_valid |= sweep_value_index(grid, i, a) == v && run.cells[i].valid;
      }
      const auto& kept = filtered.grid.axes[a].values;
      INFO(grid.axes[a].name << " " << grid.axes[a].values[v]);
      CHECK(any_valid ==
            (std::find(kept.begin(), kept.end(), grid.axes[a].values[v]) != kept.end()));
    }
  }
  // Nothing to drop: the grid comes back whole.
  const FilteredSweep whole = filter_sweep_values({Config{}, {axis("seq", "4096, 8192", {})}});
  CHECK(whole.dropped.empty());
  CHECK(joined(whole.grid.axes[0]) == "4096,8192");
  CHECK(dropped_values_text(whole, 0, "seq").empty());
}
