// Tests of measurement_text.h: byte amounts and the POINT[/STAGE]=AMOUNT@SOURCE form.
#include "catch.h"
#include "config/measurement_text.h"

using namespace stagemem;

TEST_CASE("Amounts read binary and decimal units and round to the byte") {
  CHECK(parse_byte_amount("4096") == 4096);
  CHECK(parse_byte_amount("0") == 0);
  CHECK(parse_byte_amount("141.1GiB") == 151'504'971'366);  // 141.1 x 2^30 = 151,504,971,366.4
  CHECK(parse_byte_amount("7.1GB") == 7'100'000'000);
  CHECK(parse_byte_amount("7.1 GB") == 7'100'000'000);
  CHECK(parse_byte_amount("512MiB") == 512LL << 20);
  CHECK(parse_byte_amount("1TiB") == 1LL << 40);
  CHECK(parse_byte_amount("1024TiB") == 1LL << 50);
  CHECK(parse_byte_amount(".5KiB") == 512);
}

TEST_CASE("Amounts reject signs, exponents, NaN, infinity, junk and more than 2^50") {
  for (const char* text :
       {"", "-1", "+1", "1e9", "NaN", "nan", "inf", "Infinity", "1..2", "1.2.3", "5 GiB ", "5  GiB",
        "5gib", "5 XB", "1025TiB", "0x10", ".", "GiB", "99999999999999999999999999999999999"}) {
    INFO(text);
    CHECK(!parse_byte_amount(text));
  }
}

TEST_CASE("Amount text is the shortest exact spelling") {
  CHECK(byte_amount_text(0) == "0");
  CHECK(byte_amount_text(4096) == "4096");  // "4KiB" is shorter but 4096 reads plainly too
  CHECK(byte_amount_text(151'504'971'366) == "141.1GiB");
  CHECK(byte_amount_text(25'000'000'000) == "25GB");
  CHECK(byte_amount_text(3LL << 30) == "3GiB");
  for (std::int64_t bytes : {std::int64_t{1}, std::int64_t{999}, std::int64_t{123'456'789'012},
                             (std::int64_t{1} << 50) - 1, std::int64_t{1} << 50}) {
    INFO(bytes);
    CHECK(parse_byte_amount(byte_amount_text(bytes)) == bytes);
  }
}

TEST_CASE("Measurements and gaps round-trip through their text") {
  Diagnostics d;
  const auto m = parse_measurement_text(
      "after-first-step/2=141.1GiB@torch.cuda.memory_allocated, run 17", d, "m");
  REQUIRE(m);
  CHECK(m->point == MeasurementPoint::after_first_step);
  CHECK(m->stage == 2);
  CHECK(m->source == "torch.cuda.memory_allocated, run 17");
  CHECK(measurement_text(*m) == "after-first-step/2=141.1GiB@torch.cuda.memory_allocated, run 17");
  // A term name may hold '/': the formatter always writes the stage, so it reads back whole.
  const Measurement slash{.point = MeasurementPoint::term,
                          .stage = 0,
                          .bytes = 5,
                          .source = "x@y=z",
                          .term = "KDA state / chunk 1/2"};
  CHECK(parse_measurement_text(measurement_text(slash), d, "m") == slash);
  CHECK(parse_measurement_text("term:a/b=5@x", d, "m")->term == "a/b");
  const auto g = parse_gap_text("runtime-context=512MiB@nvidia-smi", d, "g");
  REQUIRE(g);
  CHECK(g->stage == -1);
  CHECK(gap_text(*g) == "runtime-context=512MiB@nvidia-smi");
  CHECK(d.ok());
}

TEST_CASE("Clean text is valid UTF-8 without control characters") {
  CHECK(is_clean_text("plain, ünïcode ✓ 🚀"));
  CHECK(!is_clean_text("a\nb"));
  CHECK(!is_clean_text("\x7f"));
  CHECK(!is_clean_text("\xff"));
  CHECK(!is_clean_text("\xc0\xaf"));          // overlong '/'
  CHECK(!is_clean_text("\xed\xa0\x80"));      // a surrogate
  CHECK(!is_clean_text("\xf4\x90\x80\x80"));  // above U+10FFFF
  CHECK(!is_clean_text("\xe2\x82"));          // truncated
  CHECK(!is_clean_text("\xc2\x85"));          // C1 control (NEL)
}
