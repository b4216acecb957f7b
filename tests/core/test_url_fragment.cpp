// Tests of url_fragment.h: round trips, only non-default fields, and bad links.
#include "catch.h"
#include "url_fragment.h"

using namespace stagemem;

TEST_CASE("Default configuration encodes to the version only") {
  CHECK(encode_fragment(Config{}) == "v=1");
}

TEST_CASE("Fragments round-trip") {
  Config c;
  c.parallel.pipeline_parallel = 8;
  c.parallel.tensor_parallel = 2;
  const std::string text = encode_fragment(c);
  CHECK(text == "v=1&tp=2&pp=8");
  const DecodedFragment decoded = decode_fragment("#" + text);
  CHECK(decoded.diagnostics.ok());
  CHECK(decoded.diagnostics.warnings.empty());
  CHECK(decoded.config == c);
  CHECK(decode_fragment("https://wiki.example/stagemem/#" + text).config == c);
}

TEST_CASE("Bad fields are named with their allowed range") {
  struct Case { const char* text; const char* field; };
  const Case cases[] = {
      {"v=1&tp=0", "url.tp"},           {"v=1&tp=-4", "url.tp"},
      {"v=1&pp=abc", "url.pp"},         {"v=1&pp=1.5", "url.pp"},
      {"v=1&pp=99999999999999999999", "url.pp"}, {"v=1&ep=", "url.ep"},
      {"v=2&pp=2", "url.v"},            {"v=1&model=<script>", "url.model"},
      {"v=1&garbage", "url"},
  };
  for (const Case& c : cases) {
    INFO(c.text);
    const DecodedFragment decoded = decode_fragment(c.text);
    REQUIRE(!decoded.diagnostics.ok());
    CHECK(decoded.diagnostics.errors[0].field == c.field);
  }
}

TEST_CASE("Unknown keys are warnings, not errors") {
  const DecodedFragment decoded = decode_fragment("v=1&pp=2&future_knob=7");
  CHECK(decoded.diagnostics.ok());
  REQUIRE(decoded.diagnostics.warnings.size() == 1);
  CHECK(decoded.diagnostics.warnings[0].field == "url.future_knob");
  CHECK(decoded.config.parallel.pipeline_parallel == 2);
}

TEST_CASE("An oversized fragment is rejected without being parsed") {
  const std::string huge(20000, 'a');
  CHECK(!decode_fragment(huge).diagnostics.ok());
}
