// Tests of memory_log.h: Megatron's memory report lines read as measurements on the right stage.
#include <algorithm>
#include <random>
#include <set>
#include <tuple>

#include "catch.h"
#include "config/config_json.h"
#include "config/measurement_text.h"
#include "estimate/estimate.h"
#include "measured/memory_log.h"
#include "model/presets.h"
#include "render/report_json.h"
#include "render/vocabulary.h"
#include "report/report.h"

using namespace stagemem;

namespace {

constexpr std::int64_t MiB = std::int64_t{1} << 20;

bool has_error_containing(const Diagnostics& d, std::string_view field, std::string_view text) {
  for (const FieldMessage& e : d.errors) {
    if (e.field == field && e.message.find(text) != std::string::npos) return true;
  }
  return false;
}

ParallelLayout layout_of(std::int64_t tp, std::int64_t pp, std::int64_t dp, std::int64_t cp = 1,
                         std::int64_t ep = 1) {
  ParallelLayout l;
  l.tensor_parallel = tp;
  l.pipeline_parallel = pp;
  l.context_parallel = cp;
  l.data_parallel = dp;
  l.expert_parallel = ep;
  return l;
}

}  // namespace

TEST_CASE("Public Megatron memory report lines are read exactly") {
  // https://github.com/NVIDIA/Megatron-LM/issues/60 (2020, before "[Rank r]" prefixes: printed by
  // global rank 0 only), a log excerpt with the lines around it.
  const std::string issue_60 =
      " iteration        5/  120000 | elapsed time per iteration (ms): 16491.5 | learning rate: "
      "0.000E+00 | loss scale: 268435456.0 |\n"
      "after 5 iterations memory (MB) | allocated: 10250.5693359375 | max allocated: "
      "12606.06201171875 | reserved: 17482.0 | max reserved: 17482.0\n"
      "time (ms) | forward: 11716.18 | backward: 4770.37\n";
  Diagnostics d;
  const auto old = parse_memory_log(issue_60, "memory_log[issue60]", d);
  REQUIRE(d.ok());
  REQUIRE(old.size() == 1);
  CHECK(old[0].line == 2);
  CHECK(old[0].rank == 0);
  CHECK_FALSE(old[0].rank_given);
  CHECK(old[0].label == "after 5 iterations");
  CHECK(old[0].iteration == 5);
  // Megatron's MB is MiB: 10250.5693359375 x 2^20 = 10,748,500,992 B exactly.
  CHECK(old[0].allocated == 10748500992);
  CHECK(old[0].max_allocated == 13218414080);  // 12606.06201171875 MiB
  CHECK(old[0].reserved == 17482 * MiB);
  CHECK(old[0].max_reserved == 17482 * MiB);
  REQUIRE(d.warnings.size() == 1);
  CHECK(d.warnings[0].field == "memory_log[issue60]:2");
  CHECK(d.warnings[0].message.find("rank 0") != std::string::npos);

  // https://github.com/NVIDIA/Megatron-LM/pull/5662 (output sample, 2026): two decimals.
  const std::string pr_5662 =
      "[2026-07-10 05:46:31.627699] iteration       20/      20 | consumed samples:          320 "
      "|\n"
      "[Rank 0] (after 20 iterations) memory (MB) | allocated: 3270.16 | max allocated: 5670.39 | "
      "reserved: 6406.00 | max reserved: 6406.00\n";
  Diagnostics d2;
  const auto current = parse_memory_log(pr_5662, "memory_log[pr5662]", d2);
  REQUIRE(d2.ok());
  CHECK(d2.warnings.empty());
  REQUIRE(current.size() == 1);
  CHECK(current[0].rank_given);
  CHECK(current[0].label == "(after 20 iterations)");
  CHECK(current[0].iteration == 20);
  // 3270.16 MiB = 3270 x 2^20 + round(0.16 x 2^20 = 167,772.16) = 3,429,011,292 B.
  CHECK(current[0].allocated == 3429011292);
  CHECK(current[0].max_allocated == 5945834865);  // 5670.39 MiB
  CHECK(current[0].max_reserved == 6406 * MiB);
}

TEST_CASE("Every rank's latest reading lands on its stage in Megatron's rank order") {
  // In Megatron's format, with a launcher's "6: " prefix and a logger prefix; TP 2 x DP 2 x PP 2:
  // 4 ranks per stage, so ranks 0-3 are stage 0 and 4-7 stage 1; rank 6 is TP 0, DP 1 (6 % 4 = 2:
  // TP = 2 % 2 = 0, DP = 2 / 2 = 1).
  const std::string log =
      "[Rank 0] (after 1 iterations) memory (MB) | allocated: 100.0 | max allocated: 200.0 | "
      "reserved: 300.0 | max reserved: 300.0\n"
      "6: [Rank 6] (after 1 iterations) memory (MB) | allocated: 110.5 | max allocated: 250.25 | "
      "reserved: 320.0 | max reserved: 330.0\n"
      "[2024-06-21 10:50:42][INFO][utils:190] - [Rank 0] (after 2 iterations) memory (MB) | "
      "allocated: 101.0 | max allocated: 201.0 | reserved: 300.0 | max reserved: 301.0\n"
      "[Rank 1] (after 2 iterations) memory (MB) | allocated: 99.0 | max allocated: 199.0 | "
      "reserved: 250.0\n";
  Diagnostics d;
  const auto readings = parse_memory_log(log, "memory_log[train.log]", d);
  REQUIRE(d.ok());
  REQUIRE(readings.size() == 4);
  const auto measurements =
      memory_log_measurements(readings, layout_of(2, 2, 2), "train.log", "memory_log", 64, d);
  REQUIRE(d.ok());
  // Rank 0 (latest: line 3) and rank 6 with 4 figures each; rank 1 prints no max reserved: 3.
  REQUIRE(measurements.size() == 11);
  const Measurement& first = measurements[0];
  CHECK(first.rank == 0);
  CHECK(first.stage == 0);
  CHECK(first.figure == MemoryFigure::allocated);
  CHECK(first.point == MeasurementPoint::after_first_step);
  CHECK(first.bytes == 101 * MiB);
  CHECK(first.source.find("train.log line 3: [Rank 0] (after 2 iterations)") != std::string::npos);
  CHECK(measurements[1].figure == MemoryFigure::max_allocated);
  CHECK(measurements[1].point == MeasurementPoint::steady_state_peak);
  CHECK(measurements[3].figure == MemoryFigure::max_reserved);
  CHECK(measurements[3].bytes == 301 * MiB);
  const Measurement& rank6 = measurements[7];
  CHECK(rank6.rank == 6);
  CHECK(rank6.stage == 1);
  CHECK(rank6.figure == MemoryFigure::allocated);
  CHECK(rank6.bytes == 110 * MiB + MiB / 2);
  CHECK(rank6.source.find("TP 0 CP 0 DP 1 EP 0") != std::string::npos);
  // Every measurement is valid text for links and round-trips through it.
  for (const Measurement& m : measurements) {
    Diagnostics t;
    const auto back = parse_measurement_text(measurement_text(m), t, "m");
    REQUIRE(back.has_value());
    CHECK(*back == m);
  }
}

TEST_CASE("A configuration with log readings cross-checks each rank and figure") {
  Config config;
  config.model = "llama-3.1-8b";
  config.parallel = layout_of(2, 2, 2);
  config.parallel.sequence_parallel = true;
  config.training.global_batch = 16;
  const std::string log =
      "[Rank 4] (after 2 iterations) memory (MB) | allocated: 20000.0 | max allocated: 40000.0 | "
      "reserved: 42000.0 | max reserved: 42000.0\n";
  Diagnostics d;
  config.measurements = memory_log_measurements(parse_memory_log(log, "log", d), config.parallel,
                                                "run.log", "log", 64, d);
  REQUIRE(d.ok());
  const Report report = estimate(config);
  REQUIRE(report.diagnostics.ok());
  REQUIRE(report.cross_checks.size() == 4);
  for (const CrossCheck& c : report.cross_checks) {
    CHECK(c.measurement.rank == 4);
    CHECK(c.measurement.stage == 1);
    CHECK(c.gap_bytes == c.measurement.bytes - c.derived_bytes);
  }
  // The allocated reading compares with the resident terms and the pipeline input stage 1 keeps
  // after the step with its gradient ([S=4,096] x [B=1] x [h/TP (SP)=2,048] x 2 x 2 B =
  // 33,554,432 B), max allocated with the peak.
  CHECK(report.cross_checks[0].derived_bytes == report.stages[1].resident_bytes + 33'554'432);
  CHECK(report.cross_checks[1].derived_bytes == report.stages[1].peak_bytes);
  CHECK(report.cross_checks[1].explanations.front() == GapExplanation::max_allocated_figure);
  // Reserved figures compare with the allocator replay's: max reserved with its peak, reserved
  // with what it holds after the step.
  CHECK(report.cross_checks[3].explanations.front() == GapExplanation::allocator_replay);
  CHECK(report.cross_checks[3].against_replay);
  CHECK(report.cross_checks[3].derived_bytes == report.stages[1].peak_reserved_bytes);
  CHECK(report.cross_checks[2].derived_bytes == report.stages[1].reserved_after_steps_bytes);
  CHECK(report.cross_checks[2].alive_terms.empty());
  // The JSON report names the rank and the figure; the configuration's JSON keeps them.
  const std::string json = report_json(report, config, "", Diagnostics{});
  CHECK(json.find("\"rank\": 4") != std::string::npos);
  CHECK(json.find("\"figure\": \"max-reserved\"") != std::string::npos);
  const DecodedConfig decoded = config_from_json(config_to_json(config));
  REQUIRE(decoded.diagnostics.ok());
  CHECK(decoded.config.measurements == config.measurements);
}

TEST_CASE("Bad memory report lines are errors naming the line") {
  const struct {
    std::string line;
    std::string message;
  } cases[] = {
      {"[Rank 0] (after 1 iterations) memory (TB) | allocated: 1 | max allocated: 2",
       "expected the unit MB"},
      {"[Rank 0] (after 1 iterations) memory (MB) | allocated: -5 | max allocated: 2",
       "allocated: \"-5\" is not an amount"},
      {"[Rank 0] (after 1 iterations) memory (MB) | allocated: nan | max allocated: 2",
       "is not an amount"},
      {"[Rank 0] (after 1 iterations) memory (MB) | allocated: 1e9 | max allocated: 2",
       "is not an amount"},
      {"[Rank 0] (after 1 iterations) memory (MB) | allocated: 2000000000 | max allocated: 2",
       "up to 2^50 bytes"},
      {"[Rank 0] (after 1 iterations) memory (MB) | allocated: 5 | reserved: 2",
       "needs both \"allocated\" and \"max allocated\""},
      {"[Rank 99999999] (after 1 iterations) memory (MB) | allocated: 1 | max allocated: 2",
       "is not a rank"},
      {"[Rank x] (after 1 iterations) memory (MB) | allocated: 1 | max allocated: 2",
       "is not a rank"},
  };
  for (const auto& c : cases) {
    INFO(c.line);
    Diagnostics d;
    const auto readings = parse_memory_log("iteration 1\n" + c.line + "\n", "log", d);
    CHECK(readings.empty());
    CHECK(has_error_containing(d, "log:2", c.message));
  }
  // A rank the layout does not have (TP 2 x PP 2 x DP 2 = 8 ranks).
  Diagnostics d;
  const auto readings = parse_memory_log(
      "[Rank 8] (after 1 iterations) memory (MB) | allocated: 1 | max allocated: 2\n", "log", d);
  REQUIRE(readings.size() == 1);
  CHECK(memory_log_measurements(readings, layout_of(2, 2, 2), "x", "log", 64, d).empty());
  CHECK(has_error_containing(d, "log:1", "rank 8 is outside the layout's 8 ranks"));
  // Lines that are not memory reports are ignored, a log without any is empty, not an error.
  Diagnostics none;
  CHECK(parse_memory_log("loss 1.0\nTheoretical memory footprints: weight and optimizer=1 MB\n",
                         "log", none)
            .empty());
  CHECK(none.ok());
  // A measurement whose rank is not on its stage is refused by validation.
  Config config;
  config.model = "llama-3.1-8b";
  config.parallel = layout_of(2, 2, 2);
  config.training.global_batch = 16;
  config.measurements.push_back({.point = MeasurementPoint::steady_state_peak,
                                 .stage = 0,
                                 .bytes = 1,
                                 .source = "x",
                                 .rank = 5,
                                 .figure = MemoryFigure::max_allocated});
  const Report report = estimate(config);
  CHECK(has_error_containing(report.diagnostics, "measurements[0].stage",
                             "rank 5 is on pipeline stage 1"));
}

TEST_CASE("More ranks than a configuration holds keep each stage's binding rank") {
  // 32 ranks (TP 4 x DP 1 x PP 8) x 4 figures = 128 > 64: one rank per stage, its largest peak.
  std::string log;
  for (int rank = 0; rank < 32; ++rank) {
    log += "[Rank " + std::to_string(rank) +
           "] (after 2 iterations) memory (MB) | allocated: 10 |" +
           " max allocated: " + std::to_string(100 + rank % 4 * 7 % 4) +
           " | reserved: 200 | max reserved: 200\n";
  }
  Diagnostics d;
  const auto readings = parse_memory_log(log, "log", d);
  REQUIRE(readings.size() == 32);
  const auto measurements =
      memory_log_measurements(readings, layout_of(4, 8, 1), "big.log", "log", 64, d);
  REQUIRE(d.ok());
  REQUIRE(measurements.size() == 32);  // 8 stages x 4 figures
  REQUIRE(d.warnings.size() == 1);
  CHECK(d.warnings[0].message.find("32 ranks") != std::string::npos);
  for (std::size_t i = 0; i < measurements.size(); i += 4) {
    // rank % 4 * 7 % 4 is largest (3) for in-stage index 1: rank 4 x stage + 1.
    CHECK(measurements[i].rank == measurements[i].stage * 4 + 1);
  }
}

TEST_CASE("Rank coordinates cover every rank once (property)") {
  std::mt19937_64 random(20261201);
  for (int trial = 0; trial < 200; ++trial) {
    const std::int64_t tp = std::int64_t{1} << (random() % 3);
    const std::int64_t cp = std::int64_t{1} << (random() % 2);
    const std::int64_t pp = 1 + static_cast<std::int64_t>(random() % 4);
    const std::int64_t dp = std::int64_t{1} << (random() % 3);
    const ParallelLayout layout = layout_of(tp, pp, dp, cp);
    std::set<std::tuple<std::int64_t, std::int64_t, std::int64_t, std::int64_t>> seen;
    for (std::int64_t rank = 0; rank < tp * cp * pp * dp; ++rank) {
      const RankCoordinates c = rank_coordinates(layout, rank);
      CHECK(c.pipeline < pp);
      CHECK(c.tensor < tp);
      CHECK(c.context < cp);
      CHECK(c.data < dp);
      // Megatron's order: rank = ((pp x DP + dp) x CP + cp) x TP + tp.
      CHECK(rank == ((c.pipeline * dp + c.data) * cp + c.context) * tp + c.tensor);
      seen.insert({c.pipeline, c.tensor, c.context, c.data});
    }
    CHECK(seen.size() == static_cast<std::size_t>(tp * cp * pp * dp));
  }
}

TEST_CASE("Log readings round-trip through measurement text, and bad FIGURE or RANK is refused") {
  const Measurement m{.point = MeasurementPoint::steady_state_peak,
                      .stage = 3,
                      .bytes = 81835 * MiB,
                      .source = "train.log line 9",
                      .rank = 27,
                      .figure = MemoryFigure::max_reserved};
  CHECK(measurement_text(m) == "max-reserved:steady-state-peak/3/r27=81835MiB@train.log line 9");
  Diagnostics d;
  CHECK(parse_measurement_text(measurement_text(m), d, "m") == m);
  const struct {
    std::string text;
    std::string field;
  } bad[] = {
      {"peak:steady-state-peak/0=1GiB@x", "m.figure"},
      {"steady-state-peak/0/rx=1GiB@x", "m.rank"},
      {"steady-state-peak/0/r99999999=1GiB@x", "m.rank"},
      {"max-allocated:term:weights (bf16)=1GiB@x", "m.figure"},
  };
  for (const auto& b : bad) {
    INFO(b.text);
    Diagnostics e;
    CHECK_FALSE(parse_measurement_text(b.text, e, "m").has_value());
    REQUIRE_FALSE(e.ok());
    CHECK(e.errors.front().field == b.field);
  }
}

TEST_CASE("After N iterations: allocated is between steps, max covers iterations 1..N") {
  // Megatron's training_log prints report_memory("(after N iterations)") once, after the N-th
  // step (N = the first log interval): allocated is read between steps with every resident term
  // alive (after-first-step, whatever N >= 1); max allocated is the peak since the start, so it
  // covers a steady-state step when N >= 2 but only the first step when N = 1.
  Config config;
  config.model = "llama-3.1-8b";
  config.parallel = layout_of(1, 2, 1);
  config.training.global_batch = 8;
  for (const std::int64_t n : {1, 10}) {
    const std::string log = "[Rank 1] (after " + std::to_string(n) +
                            " iterations) memory (MB) | allocated: 20000.0 | max allocated: "
                            "40000.0\n";
    Diagnostics d;
    config.measurements = memory_log_measurements(parse_memory_log(log, "log", d), config.parallel,
                                                  "run.log", "log", 64, d);
    REQUIRE(d.ok());
    REQUIRE(config.measurements.size() == 2);
    const Measurement& allocated = config.measurements[0];
    const Measurement& max = config.measurements[1];
    CHECK(allocated.iteration == n);
    CHECK(allocated.point == MeasurementPoint::after_first_step);
    CHECK(max.point == MeasurementPoint::steady_state_peak);
    const std::string times = n == 1 ? "1 iteration" : "10 iterations";
    CHECK(measurement_title(allocated) ==
          "allocated after " + times + " (between steps: after-first-step), stage 1, rank 1");
    CHECK(measurement_title(max) ==
          "max-allocated over " + times +
              (n == 1 ? " (the first step's peak, compared at steady-state-peak)"
                      : " (compared at steady-state-peak)") +
              ", stage 1, rank 1");
    const Report report = estimate(config);
    REQUIRE(report.diagnostics.ok());
    REQUIRE(report.cross_checks.size() == 2);
    const auto& why = report.cross_checks[1].explanations;
    const bool first_only =
        std::find(why.begin(), why.end(), GapExplanation::first_iteration_only) != why.end();
    CHECK(first_only == (n == 1));
    // The allocated reading is compared with the same terms whatever N (all resident state).
    CHECK(report.cross_checks[0].explanations.end() ==
          std::find(report.cross_checks[0].explanations.begin(),
                    report.cross_checks[0].explanations.end(),
                    GapExplanation::first_iteration_only));
    // The iteration travels in the measurement text, the JSON and the report JSON.
    Diagnostics t;
    CHECK(measurement_text(max).find("/r1/i" + std::to_string(n) + "=") != std::string::npos);
    CHECK(parse_measurement_text(measurement_text(max), t, "m") == max);
    CHECK(config_from_json(config_to_json(config)).config.measurements == config.measurements);
    CHECK(report_json(report, config, "", Diagnostics{})
              .find("\"iteration\": " + std::to_string(n)) != std::string::npos);
  }
}

TEST_CASE("An iteration count past max_iteration is not known (-1), never cut off") {
  // Found by the fuzzer: "(after 2777...7 iterations)" had its digits read up to 2^40 and past
  // it, and the measurement's text (/iN) then no longer parsed back.
  const std::string at_limit = std::to_string(max_iteration);
  const std::string past = at_limit + "7";
  for (const auto& [count, expected] :
       {std::pair{at_limit, max_iteration}, std::pair{past, std::int64_t{-1}}}) {
    const std::string log = "[Rank 0] (after " + count +
                            " iterations) memory (MB) | allocated: 38000.5 | max allocated: "
                            "52010.0 | reserved: 56000.0 | max reserved: 56000.0\n";
    Diagnostics d;
    const auto readings = parse_memory_log(log, "log", d);
    REQUIRE(readings.size() == 1);
    CHECK(readings[0].iteration == expected);
    ParallelLayout layout;
    layout.pipeline_parallel = 1;
    const auto measurements = memory_log_measurements(readings, layout, "x.log", "log", 64, d);
    REQUIRE_FALSE(measurements.empty());
    for (const Measurement& m : measurements) {
      Diagnostics back;
      CHECK(parse_measurement_text(measurement_text(m), back, "m") == m);
    }
  }
}
