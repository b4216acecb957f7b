// Tests of optimizer_transients.h: the distributed all-gather and Muon's Newton-Schulz buffers.
#include "catch.h"
#include "layout.h"
#include "optimizer_transients.h"
#include "presets.h"

using namespace stagemem;

TEST_CASE("Largest Muon matrix: Llama-3.1-8B's MLP at TP 1 and TP 2") {
  const Model m = *find_preset("llama-3.1-8b");
  const OptimizerConfig muon{.kind = OptimizerKind::muon};
  MatrixShape shape = largest_muon_matrix(m, {m.layers[0]}, {}, muon);
  CHECK(shape.rows == 14'336);
  CHECK(shape.cols == 4'096);
  shape = largest_muon_matrix(m, {m.layers[0]}, {.tensor_parallel = 2}, muon);
  // At TP 2 the shards are 7168 x 4096 (fc1) and 4096 x 7168 (fc2); both cost the same.
  CHECK(shape.rows * shape.cols == 7'168LL * 4'096);
}

TEST_CASE("Optimizer-step transients follow the optimizer and its sharding") {
  const Model m = *find_preset("llama-3.1-8b");
  const ParallelLayout layout{.pipeline_parallel = 1, .data_parallel = 8};
  Diagnostics d;
  const auto plan = plan_stages(m, layout, d);
  REQUIRE(plan);
  const auto stages = stage_parameters(m, layout, *plan);
  // Adam: nothing transient at the step.
  CHECK(optimizer_step_transients(m, stages[0], layout, {.kind = OptimizerKind::adam}).empty());
  // Distributed Adam at DP 8: the whole bf16 parameter set of the rank is gathered.
  const auto gathered =
      optimizer_step_transients(m, stages[0], layout, {.kind = OptimizerKind::distributed_adam});
  REQUIRE(gathered.size() == 1);
  CHECK(gathered[0].bytes == 2 * 8'030'261'248LL);
  // Distributed Muon adds Newton-Schulz on the 14336 x 4096 fc1:
  // 58,720,256 x 4 + (2 x 58,720,256 + 3 x 4096^2) x 2 = 234,881,024 + 335,544,320 = 570,425,344 B.
  const auto muon =
      optimizer_step_transients(m, stages[0], layout, {.kind = OptimizerKind::distributed_muon});
  REQUIRE(muon.size() == 2);
  const std::int64_t product = 14'336LL * 4'096;
  CHECK(muon[1].bytes == product * 4 + (2 * product + 3 * 4'096LL * 4'096) * 2);
  CHECK(muon[1].bytes == 570'425'344LL);
  for (const Term& t : muon) CHECK(t.family == Family::transient);
}
