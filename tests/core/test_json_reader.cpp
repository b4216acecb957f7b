// Tests of json_reader.h: the bounded parse every JSON decoder goes through (size, depth,
// duplicate keys), with the path and the limit named in each error.
#include <string>

#include "base/json_reader.h"
#include "catch.h"

using namespace stagemem;

namespace {

// {"x":{"a":{"a": ... 1}}} with `depth` objects in all (the issue's crashing document at 10,000).
std::string nested_objects(int depth) {
  std::string text = "1";
  for (int i = 1; i < depth; ++i) text = "{\"a\":" + text + "}";
  return "{\"x\":" + text + "}";
}

}  // namespace

TEST_CASE("A well-formed document parses to the same value nlohmann reads") {
  Diagnostics d;
  const std::string text = R"({"a": [1, 2, {"b": null}], "c": {"d": "e"}, "f": 1.5, "g": true})";
  const auto parsed = parse_json_bounded(text, {}, "json", d);
  REQUIRE(parsed.has_value());
  CHECK(d.ok());
  CHECK(*parsed == nlohmann::json::parse(text));
}

TEST_CASE("Depth: the limit itself parses, one level more is an error naming the path") {
  const JsonLimits limits{.max_bytes = 1 << 20, .max_depth = 4};
  Diagnostics ok;
  // 4 objects: the root, x, a, a.
  CHECK(parse_json_bounded(nested_objects(4), limits, "json", ok).has_value());
  CHECK(ok.ok());
  Diagnostics d;
  CHECK_FALSE(parse_json_bounded(nested_objects(5), limits, "json", d).has_value());
  REQUIRE(d.errors.size() == 1);
  // The fifth object opens at json.x.a.a.a: the path up to the container that is one too deep.
  CHECK(d.errors[0].field == "json.x.a.a.a");
  CHECK(d.errors[0].message.find("limit of 4 levels") != std::string::npos);
  // Arrays count as levels too.
  Diagnostics arrays;
  CHECK_FALSE(parse_json_bounded("[[[[[1]]]]]", limits, "hf", arrays).has_value());
  REQUIRE(arrays.errors.size() == 1);
  CHECK(arrays.errors[0].field == "hf[0][0][0][0]");
}

TEST_CASE("The issue's 10,000-deep document is one error, not a crash") {
  Diagnostics d;
  CHECK_FALSE(parse_json_bounded(nested_objects(10000), {}, "json", d).has_value());
  REQUIRE(d.errors.size() == 1);
  CHECK(d.errors[0].message.find("limit of 32 levels") != std::string::npos);
  // 10,000 unclosed arrays as well (no closing brackets: the parse stops before the end).
  Diagnostics open;
  CHECK_FALSE(parse_json_bounded(std::string(10000, '['), {}, "json", open).has_value());
  REQUIRE(open.errors.size() == 1);
  CHECK(open.errors[0].message.find("limit of 32 levels") != std::string::npos);
}

TEST_CASE("Size: one byte over the limit is refused with both numbers") {
  const JsonLimits limits{.max_bytes = 10, .max_depth = 32};
  Diagnostics ok;
  CHECK(parse_json_bounded(R"({"a": 123})", limits, "json", ok).has_value());  // 10 bytes
  Diagnostics d;
  CHECK_FALSE(parse_json_bounded(R"({"a": 1234})", limits, "json", d).has_value());
  REQUIRE(d.errors.size() == 1);
  CHECK(d.errors[0].field == "json");
  CHECK(d.errors[0].message == "the document is 11 bytes; at most 10 are read");
}

TEST_CASE("Duplicate keys name the path and both values, at any depth") {
  Diagnostics d;
  CHECK_FALSE(parse_json_bounded(R"({"parallel": {"tp": 4, "tp": 8}})", {}, "json", d).has_value());
  REQUIRE(d.errors.size() == 1);
  CHECK(d.errors[0].field == "json.parallel.tp");
  CHECK(d.errors[0].message.find("first 4, then 8") != std::string::npos);

  // Container values: reported when the second one is complete, both shown.
  Diagnostics containers;
  CHECK_FALSE(parse_json_bounded(R"({"a": [1], "a": {"b": 2}})", {}, "hf", containers));
  REQUIRE(containers.errors.size() == 1);
  CHECK(containers.errors[0].field == "hf.a");
  CHECK(containers.errors[0].message.find(R"(first [1], then {"b":2})") != std::string::npos);

  // Inside an array element: the index is part of the path.
  Diagnostics in_array;
  CHECK_FALSE(
      parse_json_bounded(R"({"gaps": [{}, {"kind": "x", "kind": "y"}]})", {}, "json", in_array));
  REQUIRE(in_array.errors.size() == 1);
  CHECK(in_array.errors[0].field == "json.gaps[1].kind");
  CHECK(in_array.errors[0].message.find(R"(first "x", then "y")") != std::string::npos);

  // The same key in two different objects is no duplicate.
  Diagnostics fine;
  CHECK(parse_json_bounded(R"({"a": {"k": 1}, "b": {"k": 1}, "k": 1})", {}, "json", fine));
  CHECK(fine.ok());
}

TEST_CASE("Long values and keys are shortened in messages") {
  const std::string long_value(100, 'v');
  Diagnostics d;
  CHECK_FALSE(parse_json_bounded("{\"k\": \"" + long_value + "\", \"k\": 1}", {}, "json", d));
  REQUIRE(d.errors.size() == 1);
  CHECK(d.errors[0].message.find("...") != std::string::npos);
  CHECK(d.errors[0].message.size() < 120);
}

TEST_CASE("Syntax errors say where") {
  Diagnostics d;
  CHECK_FALSE(parse_json_bounded(R"({"a": 1,})", {}, "json", d).has_value());
  REQUIRE(d.errors.size() == 1);
  CHECK(d.errors[0].field == "json");
  CHECK(d.errors[0].message.starts_with("not valid JSON (at byte "));
  Diagnostics empty;
  CHECK_FALSE(parse_json_bounded("", {}, "json", empty).has_value());
  CHECK(!empty.ok());
}
