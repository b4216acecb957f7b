// Tests of cross_check_text.h's verdict: the one line a memory-log paste opens with.
#include <string>

#include "catch.h"
#include "estimate/estimate.h"
#include "render/cross_check_text.h"
#include "render/vocabulary.h"

using namespace stagemem;

namespace {

constexpr std::int64_t gib = std::int64_t{1} << 30;

Report report_with(std::vector<CrossCheck> checks) {
  Report r;
  r.cross_checks = std::move(checks);
  return r;
}

CrossCheck check_of(MemoryFigure figure, MeasurementPoint point, std::int64_t stage,
                    std::int64_t measured, std::int64_t derived) {
  CrossCheck c;
  c.measurement = {.point = point,
                   .stage = stage,
                   .bytes = measured,
                   .source = "log",
                   .rank = 3,
                   .figure = figure,
                   .iteration = 10};
  c.derived_bytes = derived;
  c.gap_bytes = measured - derived;
  return c;
}

}  // namespace

TEST_CASE("Cross-check verdict: the binding peak reading first, as one line") {
  // Measured 61.2 GiB max allocated vs derived 58.9 GiB: the gap 2.3 GiB is 3.76 % of 61.2.
  const std::int64_t measured = 612 * gib / 10, derived = 589 * gib / 10;
  const Report r = report_with({
      check_of(MemoryFigure::allocated, MeasurementPoint::after_first_step, 0, 40 * gib, 39 * gib),
      check_of(MemoryFigure::max_allocated, MeasurementPoint::steady_state_peak, 0, measured,
               derived),
      check_of(MemoryFigure::max_reserved, MeasurementPoint::steady_state_peak, 0, 70 * gib,
               derived),
      check_of(MemoryFigure::max_allocated, MeasurementPoint::steady_state_peak, 1, 50 * gib,
               60 * gib),
  });
  CHECK(verdict_cross_check(r) == 1);
  CHECK(cross_check_verdict(r) ==
        "measured 61.2 GiB max allocated on stage 0 (rank 3, after 10 iterations) vs derived "
        "58.9 GiB: derived is 3.8 % under (3 more readings below)");
  // Derived above measured: 60 vs 50 GiB is 20.0 % of 50 over.
  const Report over = report_with({check_of(
      MemoryFigure::max_allocated, MeasurementPoint::steady_state_peak, 1, 50 * gib, 60 * gib)});
  CHECK(cross_check_verdict(over) ==
        "measured 50.0 GiB max allocated on stage 1 (rank 3, after 10 iterations) vs derived "
        "60.0 GiB: derived is 20.0 % over");
  // A hand-entered reading without figure, rank or iteration.
  CrossCheck plain;
  plain.measurement = {.point = MeasurementPoint::after_optimizer_init,
                       .stage = 2,
                       .bytes = 10 * gib,
                       .source = "x"};
  plain.derived_bytes = 10 * gib;
  CHECK(cross_check_verdict(report_with({plain})) ==
        "measured 10.0 GiB after-optimizer-init on stage 2 vs derived 10.0 GiB: derived matches");
  CHECK(cross_check_verdict(report_with({})).empty());
  CHECK(verdict_cross_check(report_with({})) == -1);
  CHECK(cross_check_line(r.cross_checks[1]) ==
        "measured 61.20 GiB vs derived 58.90 GiB, gap +2.30 GiB, " + ratio_text(r.cross_checks[1]));
}
