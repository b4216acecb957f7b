// Tests of software_stack.h: release numbers, the name=version text form and its errors.
#include "catch.h"
#include "config/software_stack.h"

using namespace stagemem;

TEST_CASE("Release numbers: leading integers, suffixes ignored, compared part by part", "[stack]") {
  const auto r = [](std::string_view text) {
    const auto parsed = parse_release(text);
    REQUIRE(parsed);
    return *parsed;
  };
  CHECK(release_text(r("2.18")) == "2.18");
  CHECK(release_text(r("0.13.1")) == "0.13.1");
  // An NGC container's torch: the release is 2.7.0; the pre-release and local parts are ignored.
  CHECK(release_text(r("2.7.0a0+79aa17489c.nv25.04")) == "2.7.0");
  CHECK(release_text(r("2.18.0rc1")) == "2.18.0");
  CHECK(release_text(r("2.5.dev20250101")) == "2.5");
  CHECK(compare_releases(r("2.7"), r("2.7.0")) == 0);
  CHECK(compare_releases(r("2.17.1"), r("2.18")) < 0);
  CHECK(compare_releases(r("2.18"), r("2.17.1")) > 0);
  CHECK(compare_releases(r("0.9"), r("0.13")) < 0);  // numeric, not text, order
  CHECK(compare_releases(r("10.0"), r("9.9.9.9")) > 0);
  for (std::string_view bad : {"", "v2.18", "x", ".2", "2..1", "100000", "1.2.3.4.5", "-1"}) {
    INFO(bad);
    CHECK_FALSE(parse_release(bad));
  }
}

TEST_CASE("A stack reads name=version pairs and writes them in one canonical order", "[stack]") {
  std::string error;
  const auto s =
      parse_stack(" torch=2.7 ,te=2.11,megatron-core=0.13,compile=on,arch=sm100,fla=0.4.1", error);
  REQUIRE(s);
  CHECK(error.empty());
  CHECK(release_text(s->transformer_engine) == "2.11");
  CHECK(release_text(s->megatron_core) == "0.13");
  CHECK(s->compile == CompileMode::on);
  CHECK(s->architecture == Architecture::sm100);
  CHECK(stack_text(*s) == "megatron-core=0.13,te=2.11,torch=2.7,compile=on,fla=0.4.1,arch=sm100");
  // The canonical text reads back to the same stack.
  const auto again = parse_stack(stack_text(*s), error);
  REQUIRE(again);
  CHECK(*again == *s);
  // Aliases name the same components.
  const auto aliased =
      parse_stack("mcore=0.12,transformer-engine=2.17,pytorch=2.6,flash-attention=2.7.4", error);
  REQUIRE(aliased);
  CHECK(stack_text(*aliased) == "megatron-core=0.12,te=2.17,torch=2.6,flash-attn=2.7.4");
  // The empty text is the empty stack: every component at its current release.
  const auto empty = parse_stack("", error);
  REQUIRE(empty);
  CHECK(empty->empty());
  CHECK(stack_text(*empty).empty());
  CHECK(parse_stack("compile=off", error)->compile == CompileMode::off);
}

TEST_CASE("Bad stacks: each error names the pair and what is allowed", "[stack]") {
  struct Bad {
    std::string_view text;
    std::string_view says;
  };
  const Bad bad[] = {
      {"tensorflow=2.1", "'tensorflow=2.1' names an unknown component 'tensorflow'"},
      {"tensorflow=2.1", "megatron-core, te, torch, compile, flash-attn, fla, arch"},
      {"te=two", "'two' is not a release number"},
      {"te=2.11,te=2.18", "te is named twice"},
      {"te", "'te' is not a name=version pair"},
      {"te=2.11,", "an empty pair"},
      {",te=2.11", "an empty pair"},
      {"compile=maybe", "compile is on or off"},
      {"arch=sm70", "unknown architecture"},
      {"arch=current", "unknown architecture"},
      {"te=", "'' is not a release number"},
      // A long list stops at the first component named twice (so at most 8 pairs are read).
      {"te=2.1,torch=2.1,fla=0.1,megatron-core=0.1,flash-attn=2.1,arch=sm90,compile=on,te=1,"
       "torch=1,fla=1,megatron-core=1,flash-attn=1,arch=sm80,compile=off,te=3,torch=3,fla=3",
       "'te=1': te is named twice"},
  };
  for (const Bad& b : bad) {
    INFO(b.text);
    std::string error;
    CHECK_FALSE(parse_stack(b.text, error));
    INFO(error);
    CHECK(error.find(b.says) != std::string::npos);
  }
}
