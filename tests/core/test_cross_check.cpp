// Tests of cross_check.h: measurement-point semantics, gap and ratio, explanations, and the
// users' optimizer-state probe shipped as an example.
#include "catch.h"
#include "cross_check.h"
#include "report.h"

using namespace stagemem;

namespace {

// Llama-3.1-8B at PP 4, stage 0: N = 8 x 218,112,000 + 525,336,576 = 2,270,232,576 params.
constexpr std::int64_t stage0_params = 2'270'232'576LL;

Report llama_with(std::vector<Measurement> measurements) {
  Config c;
  c.measurements = std::move(measurements);
  return estimate(c);
}

bool mentions(const CrossCheck& c, std::string_view text) {
  for (const auto& e : c.explanations) {
    if (e.find(text) != std::string::npos) return true;
  }
  return false;
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
      {.point = MeasurementPoint::after_first_step, .bytes = 40'864'186'368, .source = "C"},
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
  CHECK(mentions(r.cross_checks[1], "not alive yet"));
  CHECK(mentions(r.cross_checks[1], "Adam exp_avg + exp_avg_sq"));
  // After the first step: 18 B x N = 40,864,186,368 B; measured equal -> zero gap, ratio 1.
  CHECK(r.cross_checks[2].derived_bytes == 18 * stage0_params);
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
  CHECK(mentions(check, "Muon momentum"));
  for (const auto& name : check.alive_terms) CHECK(name.find("momentum") == std::string::npos);
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
  CHECK(r.cross_checks[0].alive_terms == std::vector<std::string>{"weights (bf16)"});
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
  CHECK(mentions(r.cross_checks[0], "MEASURED gap rows alive at this point sum to 600,000,000 B"));
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
  CHECK(!checks[8].explanations.empty());
}
