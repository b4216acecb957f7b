// Tests of cross_check.h: measurement-point semantics, gap and ratio, explanations, and the
// users' optimizer-state probe shipped as an example.
#include <algorithm>

#include "catch.h"
#include "estimate/cross_check.h"
#include "estimate/estimate.h"
#include "render/cross_check_text.h"
#include "render/term_text.h"
#include "report/report.h"

using namespace stagemem;

namespace {

// Llama-3.1-8B at PP 4, stage 0: N = 8 x 218,112,000 + 525,336,576 = 2,270,232,576 params.
constexpr std::int64_t stage0_params = 2'270'232'576LL;

Report llama_with(std::vector<Measurement> measurements) {
  Config c;
  c.measurements = std::move(measurements);
  return estimate(c);
}

// The check's explanations as every front end shows them (render/cross_check_text.h).
bool mentions(const Report& r, const CrossCheck& c, std::string_view text) {
  for (const auto& e : cross_check_explanations(c, *cross_check_stage(r, c))) {
    if (e.find(text) != std::string::npos) return true;
  }
  return false;
}

std::vector<std::string> alive_names(const Report& r, const CrossCheck& c) {
  return cross_check_alive_names(c, *cross_check_stage(r, c));
}

}  // namespace

TEST_CASE("Liveness: each measurement point sees exactly the terms allocated before it") {
  CHECK(
      alive_at(Family::resident, AllocationPoint::model_init, MeasurementPoint::after_model_init));
  CHECK(!alive_at(Family::resident, AllocationPoint::optimizer_init,
                  MeasurementPoint::after_model_init));
  CHECK(alive_at(Family::resident, AllocationPoint::optimizer_init,
                 MeasurementPoint::after_optimizer_init));
  CHECK(!alive_at(Family::resident, AllocationPoint::first_step,
                  MeasurementPoint::after_optimizer_init));
  CHECK(
      alive_at(Family::resident, AllocationPoint::first_step, MeasurementPoint::after_first_step));
  CHECK(
      !alive_at(Family::activation, AllocationPoint::forward, MeasurementPoint::after_first_step));
  CHECK(alive_at(Family::transient, AllocationPoint::forward, MeasurementPoint::steady_state_peak));
  CHECK(!alive_at(Family::gap, AllocationPoint::model_init, MeasurementPoint::steady_state_peak));
}

TEST_CASE("Adam on Llama stage 0: derived sums at each point") {
  const Report r = llama_with({
      {.point = MeasurementPoint::after_model_init, .bytes = 14'000'000'000, .source = "probe A"},
      {.point = MeasurementPoint::after_optimizer_init, .bytes = 23'000'000'000, .source = "B"},
      {.point = MeasurementPoint::after_first_step, .bytes = 41'401'058'304, .source = "C"},
  });
  REQUIRE(r.diagnostics.ok());
  REQUIRE(r.cross_checks.size() == 3);
  // After model init: bf16 weights 2 B + fp32 grads 4 B = 6 B x N.
  CHECK(r.cross_checks[0].derived_bytes == 6 * stage0_params);
  CHECK(r.cross_checks[0].gap_bytes == 14'000'000'000 - 6 * stage0_params);
  CHECK(r.cross_checks[0].has_ratio);
  CHECK(r.cross_checks[0].ratio == Approx(14e9 / (6.0 * stage0_params)));
  // After optimizer init: + fp32 master 4 B = 10 B x N; the lazy moments are named as not alive.
  CHECK(r.cross_checks[1].derived_bytes == 10 * stage0_params);
  CHECK(mentions(r, r.cross_checks[1], "not alive yet"));
  CHECK(mentions(r, r.cross_checks[1], "Adam exp_avg + exp_avg_sq"));
  // After the first step: 18 B x N = 40,864,186,368 B, + TE's dummy bf16 weight gradients created
  // in the first backward (gradient-accumulation fusion: qkv [6144, 4096], proj [4096, 4096],
  // fc1 [28672, 4096], fc2 [4096, 14336] = 218,103,808 x 2 B = 436,207,616 B) + the documented
  // GEMM workspaces (TE 33,555,456 + cuBLAS 2 x 33,554,432 = 100,664,320 B) = 41,401,058,304 B;
  // measured equal -> zero gap, ratio 1.
  CHECK(r.cross_checks[2].derived_bytes == 18 * stage0_params + 436'207'616 + 100'664'320);
  CHECK(r.cross_checks[2].gap_bytes == 0);
  CHECK(r.cross_checks[2].ratio == 1.0);
}

TEST_CASE("The users' confound: a reading before the first step misses lazy Muon state") {
  // Distributed Muon at DP 8: after optimizer init only weights, grads and sharded masters are
  // alive (2 + 4 + 4/8 B/param); the momentum (4/8 B/param) arrives in the first step().
  Config c;
  c.parallel.data_parallel = 8;
  c.optimizer.kind = OptimizerKind::distributed_muon;
  c.measurements = {{.point = MeasurementPoint::after_optimizer_init, .bytes = 0, .source = "x"}};
  const Report r = estimate(c);
  REQUIRE(r.diagnostics.ok());
  const CrossCheck& check = r.cross_checks.at(0);
  CHECK(mentions(r, check, "Muon momentum"));
  for (const auto& name : alive_names(r, check)) CHECK(name.find("momentum") == std::string::npos);
}

TEST_CASE("A single named term is compared with that term only") {
  // "weights (bf16)" on stage 0 is 2 B x 2,270,232,576 = 4,540,465,152 B.
  const Report r = llama_with({{.point = MeasurementPoint::term,
                                .bytes = 5'000'000'000,
                                .source = "memory snapshot",
                                .term = "weights (bf16)"}});
  REQUIRE(r.diagnostics.ok());
  CHECK(r.cross_checks[0].derived_bytes == 4'540'465'152LL);
  CHECK(r.cross_checks[0].gap_bytes == 5'000'000'000LL - 4'540'465'152LL);
  CHECK(alive_names(r, r.cross_checks[0]) == std::vector<std::string>{"weights (bf16)"});
}

TEST_CASE("An unknown term or stage is an error naming the measurement field") {
  const Report bad_term = llama_with(
      {{.point = MeasurementPoint::term, .bytes = 1, .source = "s", .term = "AttnRes internal"}});
  REQUIRE(!bad_term.diagnostics.ok());
  CHECK(bad_term.diagnostics.errors[0].field == "measurements[0].term");
  const Report bad_stage = llama_with({{.stage = 4, .bytes = 1, .source = "s"}});
  REQUIRE(!bad_stage.diagnostics.ok());
  CHECK(bad_stage.diagnostics.errors[0].field == "measurements[0].stage");
}

TEST_CASE("Measured gap rows are reported beside the gap, never in the derived sum") {
  Config c;
  c.gaps = {{.kind = GapKind::runtime_context, .bytes = 600'000'000, .source = "nvidia-smi idle"}};
  c.measurements = {
      {.point = MeasurementPoint::after_model_init, .bytes = 14'000'000'000, .source = "s"}};
  const Report r = estimate(c);
  REQUIRE(r.diagnostics.ok());
  CHECK(r.cross_checks[0].derived_bytes == 6 * stage0_params);
  CHECK(
      mentions(r, r.cross_checks[0], "MEASURED gap rows alive at this point sum to 600,000,000 B"));
}

TEST_CASE("Probe example: derived next to measured, gaps shown, never absorbed") {
  const auto checks = optimizer_state_probe_cross_checks();
  REQUIRE(checks.size() == 9);
  // Adam: 18 derived vs 18.02 measured.
  CHECK(checks[0].derived_bytes_per_parameter == 18.0);
  CHECK(checks[0].gap_bytes_per_parameter == Approx(0.02));
  // Distributed Adam 6 + 12/dp: 12.00, 9.00, 7.50 vs 12.02, 9.03, 7.52.
  CHECK(checks[1].derived_bytes_per_parameter == 12.0);
  CHECK(checks[2].derived_bytes_per_parameter == 9.0);
  CHECK(checks[3].derived_bytes_per_parameter == 7.5);
  CHECK(checks[3].gap_bytes_per_parameter == Approx(0.02));
  // Muon 14 vs 15.17; distributed Muon 14, 10, 8, 7 vs 15.17, 11.00, 8.91, 7.87.
  CHECK(checks[4].derived_bytes_per_parameter == 14.0);
  CHECK(checks[5].derived_bytes_per_parameter == 14.0);
  CHECK(checks[6].derived_bytes_per_parameter == 10.0);
  CHECK(checks[7].derived_bytes_per_parameter == 8.0);
  CHECK(checks[8].derived_bytes_per_parameter == 7.0);
  CHECK(checks[8].gap_bytes_per_parameter == Approx(0.87));
  CHECK(checks[8].ratio == Approx(7.87 / 7.0));
  CHECK(probe_formula(checks[8]) ==
        "2 (bf16 weight) + 4 (fp32 grad) + 8 (fp32 master + momentum) / 8");
  CHECK(!probe_explanations(checks[8]).empty());
}

TEST_CASE("A steady-state peak is compared with the phase that binds") {
  // Distributed Muon with the legacy layer-wise gather on Llama-3.1-8B at PP 1, DP 8 and a short
  // sequence: the gather (2 B x 8,030,261,248) dwarfs the activations, so the optimizer step
  // binds; its derived sum holds the optimizer-step transients and no stored activation.
  Config c;
  c.parallel = {.pipeline_parallel = 1, .data_parallel = 8};
  c.optimizer = {.kind = OptimizerKind::distributed_muon, .param_gather = ParamGather::layer_wise};
  c.training.sequence_length = 256;
  c.training.global_batch = 8;
  c.measurements = {{.point = MeasurementPoint::steady_state_peak, .bytes = 1, .source = "x"}};
  Report r = estimate(c);
  REQUIRE(r.diagnostics.ok());
  const StageReport& s = r.stages[0];
  REQUIRE(s.optimizer_phase_binds);
  const CrossCheck& check = r.cross_checks[0];
  // Nothing measured as a gap: the derived sum is the stage's peak exactly.
  CHECK(check.derived_bytes == s.peak_bytes);
  CHECK(check.derived_bytes == s.resident_bytes + s.optimizer_transient_bytes);
  for (const std::int32_t i : check.alive_terms) {
    CHECK(s.terms[static_cast<std::size_t>(i)].family != Family::activation);
  }
  CHECK(mentions(r, check, "the optimizer step binds"));
  CHECK(!mentions(r, check, "not derived in this version"));

  // With the in-place gather (current Megatron) forward/backward binds: stored activations
  // and one co-live transient are in the sum, no optimizer-step transient.
  c.optimizer.param_gather = ParamGather::buffer;
  c.training.sequence_length = 8192;
  r = estimate(c);
  REQUIRE(r.diagnostics.ok());
  REQUIRE(!r.stages[0].optimizer_phase_binds);
  const CrossCheck& fb = r.cross_checks[0];
  CHECK(fb.derived_bytes == r.stages[0].peak_bytes);
  CHECK(fb.derived_bytes == r.stages[0].resident_bytes + r.stages[0].activation_bytes +
                                r.stages[0].largest_transient_bytes);
  CHECK(mentions(r, fb, "forward/backward binds"));
}

TEST_CASE("After the step a fed stage also holds its kept pipeline input; the peak does not") {
  // Llama-3.1-8B at PP 4 (default seq 4,096, mbs 1): stage 3 keeps the input of its last
  // micro-batch and its gradient, 2 x 4,096 x 1 x 4,096 x 2 B = 67,108,864 B, past the step.
  // Stage 0 is fed by the embedding and keeps none.
  const Report r = llama_with({
      {.point = MeasurementPoint::after_first_step, .stage = 0, .bytes = 1, .source = "A"},
      {.point = MeasurementPoint::after_first_step, .stage = 3, .bytes = 1, .source = "B"},
      {.point = MeasurementPoint::steady_state_peak, .stage = 3, .bytes = 1, .source = "C"},
  });
  REQUIRE(r.diagnostics.ok());
  REQUIRE(r.cross_checks.size() == 3);
  const StageReport& first = r.stages[0];
  const StageReport& last = r.stages[3];
  CHECK(r.cross_checks[0].derived_bytes == first.resident_bytes);
  CHECK(r.cross_checks[1].derived_bytes == last.resident_bytes + 67'108'864);
  const auto alive = alive_names(r, r.cross_checks[1]);
  CHECK(std::count_if(alive.begin(), alive.end(), [](const std::string& name) {
          return name.starts_with("pipeline input of each chunk's last micro-batch");
        }) == 1);
  // Forward/backward binds stage 3: the kept input is replaced by the first forward of the next
  // step before that pass allocates, so the peak does not hold it; the optimizer step does.
  REQUIRE_FALSE(last.optimizer_phase_binds);
  CHECK(r.cross_checks[2].derived_bytes == last.peak_bytes);
  bool found = false;
  for (const Term& t : last.terms) {
    if (t.place != TransientPlace::between_steps) continue;
    found = true;
    CHECK_FALSE(t.counts_in_peak);
    CHECK(t.allocated_at == AllocationPoint::optimizer_step);
  }
  CHECK(found);
  CHECK(last.optimizer_transient_bytes >= 67'108'864);
}
