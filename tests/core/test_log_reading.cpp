// Tests of log_reading.h: one rank's Megatron memory report line as its measurements, and the
// compact reading= link form: exact round trips, the encoder's fallback, and errors by name.
#include <string>
#include <vector>

#include "catch.h"
#include "config/log_reading.h"
#include "config/measurement_text.h"
#include "config/url_fragment.h"
#include "measured/memory_log.h"

using namespace stagemem;

namespace {

constexpr std::int64_t MiB = std::int64_t{1} << 20;

// TP 2 x PP 2 x DP 2 (8 ranks): rank 6 is stage 1 (6 / 4), TP coordinate 0, DP coordinate 1.
Config layout_2x2x2() {
  Config c;
  c.parallel.tensor_parallel = 2;
  c.parallel.pipeline_parallel = 2;
  c.parallel.data_parallel = 2;
  c.parallel.sequence_parallel = true;
  c.training.global_batch = 16;
  return c;
}

const std::string rank6_line =
    "[Rank 6] (after 10 iterations) memory (MB) | allocated: 53199.09 | max allocated: 84019.37 "
    "| reserved: 84732.0 | max reserved: 84732.0\n";

std::vector<Measurement> read_log(const Config& c, const std::string& text) {
  Diagnostics d;
  auto out = memory_log_measurements(parse_memory_log(text, "log", d), c.parallel, "train.log",
                                     "log", 64, d);
  REQUIRE(d.ok());
  return out;
}

std::size_t count_of(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("log reading: the reader's measurements are the reading's, source text included") {
  const Config c = layout_2x2x2();
  const std::vector<Measurement> read = read_log(c, rank6_line);
  REQUIRE(read.size() == 4);
  // 53199.09 MiB = 53,199 x 1,048,576 + 0.09 x 1,048,576 = 55,783,194,624 + 94,371.84 B
  // -> 55,783,288,996 B (rounded to the nearest byte).
  CHECK(read[0].bytes == 55'783'288'996);
  CHECK(read[0].iteration == 10);
  CHECK(read[0].source ==
        "Megatron memory report, train.log line 1: [Rank 6] (after 10 iterations), TP 0 CP 0 DP "
        "1 EP 0");
  const auto run = log_reading_at(read, 0);
  REQUIRE(run.has_value());
  CHECK(run->count == 4);
  CHECK(run->reading.rank == 6);
  CHECK(run->reading.stage == 1);
  CHECK(run->reading.iteration == 10);
  CHECK(run->reading.line == 1);
  CHECK(run->reading.coordinates == std::array<std::int64_t, 4>{0, 0, 1, 0});
  CHECK(run->reading.log == "train.log");
  CHECK(log_reading_measurements(run->reading) == read);
  // The compact text: the numbers once, each amount the shortest text of its exact bytes
  // ("53199.09MiB" is no shorter than 55783288996; 84732 MiB is whole).
  const std::string text = log_reading_text(run->reading);
  CHECK(text == "r6/s1/i10/l1/c0.0.1.0=55783288996,88100694917,84732MiB,84732MiB@train.log");
  Diagnostics d;
  const auto back = parse_log_reading_text(text, d, "url.reading[0]");
  REQUIRE(back.has_value());
  CHECK(*back == run->reading);
}

TEST_CASE("log reading: a link carries each reading once and decodes to the same measurements") {
  Config c = layout_2x2x2();
  c.measurements = read_log(c,
                            "[Rank 0] (after 10 iterations) memory (MB) | allocated: 38000.50 | "
                            "max allocated: 52000.25 | reserved: 56000.00 | max reserved: "
                            "56000.00\n" +
                                rank6_line);
  REQUIRE(c.measurements.size() == 8);
  const std::string fragment = encode_fragment(c);
  CHECK(count_of(fragment, "&reading=") == 2);
  CHECK(count_of(fragment, "&measured=") == 0);
  CHECK(count_of(fragment, "Megatron memory report") == 0);
  const DecodedFragment back = decode_fragment(fragment);
  REQUIRE(back.diagnostics.ok());
  CHECK(back.config == c);
  // The measured= form of the same readings, one key per figure, repeats the ~100-character
  // source 8 times: the compact form is well under half as long.
  std::string old_form = "v=1";
  for (const Measurement& m : c.measurements)
    old_form += "&measured=" + percent_encode(measurement_text(m));
  CHECK(fragment.size() * 3 < old_form.size());
  // Old links keep decoding to the same configuration (the corpus also holds one).
  const DecodedFragment old_back = decode_fragment(old_form);
  REQUIRE(old_back.diagnostics.ok());
  CHECK(old_back.config.measurements == c.measurements);
}

TEST_CASE("log reading: anything but an untouched reading stays in the measured= form") {
  Config c = layout_2x2x2();
  c.measurements = read_log(c, rank6_line);
  // A figure's bytes edited by hand are still the reading's numbers: compact, and exact.
  Config edited = c;
  edited.measurements[1].bytes += 1;
  std::string fragment = encode_fragment(edited);
  CHECK(count_of(fragment, "&reading=") == 1);
  CHECK(decode_fragment(fragment).config == edited);
  // Moved to another stage (or its source edited): no longer exactly one reading.
  edited = c;
  edited.measurements[1].stage = 0;
  fragment = encode_fragment(edited);
  CHECK(count_of(fragment, "&reading=") == 0);
  CHECK(count_of(fragment, "&measured=") == 4);
  CHECK(decode_fragment(fragment).config == edited);
  edited = c;
  edited.measurements[0].source += " (edited)";
  fragment = encode_fragment(edited);
  // A reading starts at its allocated figure: with that one changed, all four go one by one.
  CHECK(count_of(fragment, "&reading=") == 0);
  CHECK(count_of(fragment, "&measured=") == 4);
  CHECK(decode_fragment(fragment).config == edited);
}

TEST_CASE("log reading: fewer figures, hand-entered values around it, the order kept") {
  Config c = layout_2x2x2();
  // A line without reserved figures: two measurements, two amounts. Rank 3 is stage 0 (3 / 4),
  // TP coordinate 3 % 2 = 1, DP coordinate 3 / 2 % 2 = 1.
  c.measurements = read_log(c,
                            "[Rank 3] (after 1 iterations) memory (MB) | allocated: 100.5 | max "
                            "allocated: 200.25\n");
  REQUIRE(c.measurements.size() == 2);
  const Measurement by_hand{.point = MeasurementPoint::after_optimizer_init,
                            .stage = 0,
                            .bytes = 7LL << 30,
                            .source = "torch.cuda.memory_allocated, run 17"};
  c.measurements.insert(c.measurements.begin(), by_hand);
  c.measurements.push_back(by_hand);
  const std::string fragment = encode_fragment(c);
  INFO(fragment);
  CHECK(fragment.find("&measured=after-optimizer-init/0=7GiB@torch.cuda.memory_allocated,%20run%"
                      "2017&reading=r3/s0/i1/l1/c1.0.1.0=100.5MiB,209977344@train.log&measured="
                      "after-optimizer-init/0=7GiB@") != std::string::npos);
  const DecodedFragment back = decode_fragment(fragment);
  for (const auto& e : back.diagnostics.errors) UNSCOPED_INFO(e.field << ": " << e.message);
  REQUIRE(back.diagnostics.ok());
  CHECK(back.config == c);
  // Reserved not printed but max reserved printed: "-" holds the place.
  LogReading r;
  r.log = "a.log";
  r.allocated = MiB;
  r.max_allocated = 2 * MiB;
  r.max_reserved = 3 * MiB;
  CHECK(log_reading_text(r) == "r0/s0/i0/l1/c0.0.0.0=1MiB,2MiB,-,3MiB@a.log");
  Diagnostics d;
  CHECK(parse_log_reading_text(log_reading_text(r), d, "x") == r);
}

TEST_CASE("log reading: a bad compact reading names its part and the form") {
  const struct {
    std::string text;
    std::string field;
  } bad[] = {
      {"r6/s1/i2/l9=1MiB,2MiB@log", "url.reading[0].coordinates"},
      {"r6/s1/i2/l9/c0.0.1=1MiB,2MiB@log", "url.reading[0].coordinates"},
      {"rx/s1/i2/l9/c0.0.1.0=1MiB,2MiB@log", "url.reading[0].rank"},
      {"r6/s2000/i2/l9/c0.0.1.0=1MiB,2MiB@log", "url.reading[0].stage"},
      {"r6/s1/i2/l0/c0.0.1.0=1MiB,2MiB@log", "url.reading[0].line"},
      {"s1/r6/i2/l9/c0.0.1.0=1MiB,2MiB@log", "url.reading[0].rank"},
      {"r6/s1/i2/l9/c0.0.1.0=1MiB@log", "url.reading[0].bytes"},
      {"r6/s1/i2/l9/c0.0.1.0=1MiB,2 parsecs@log", "url.reading[0].bytes"},
      {"r6/s1/i2/l9/c0.0.1.0=1,2,3,4,5@log", "url.reading[0].bytes"},
      {"r6/s1/i2/l9/c0.0.1.0=1MiB,2MiB@", "url.reading[0].log"},
      {"r6/s1/i2/l9/c0.0.1.0=1MiB,2MiB", "url.reading[0]"},
  };
  for (const auto& b : bad) {
    INFO(b.text);
    const DecodedFragment decoded =
        decode_fragment("v=1&tp=2&pp=2&dp=2&reading=" + percent_encode(b.text));
    REQUIRE_FALSE(decoded.diagnostics.ok());
    CHECK(decoded.diagnostics.errors.front().field == b.field);
    CHECK(decoded.diagnostics.errors.front().message.find("expected rRANK/sSTAGE/iN/lLINE/") !=
          std::string::npos);
  }
}
