// Tests of config_fields.h: the table is consistent and every field parses and formats.
#include <set>

#include "catch.h"
#include "config/config_fields.h"

using namespace stagemem;

TEST_CASE("Field keys and paths are unique and every field has exactly one accessor") {
  std::set<std::string_view> keys, paths;
  for (const ConfigField& f : config_fields()) {
    INFO(f.key);
    CHECK(keys.insert(f.key).second);
    CHECK(paths.insert(f.path).second);
    CHECK(!f.help.empty());
    const int accessors = (f.integer != nullptr) + (f.boolean != nullptr) + (f.text != nullptr) +
                          (f.integer_list != nullptr) + (f.get_choice != nullptr) +
                          (f.number != nullptr) + (f.bits != nullptr) + (f.stack != nullptr);
    CHECK(accessors == 1);
    CHECK(find_field_by_key(f.key) == &f);
    CHECK(find_field_by_path(f.path) == &f);
  }
}

TEST_CASE("Every field's default formats to text that parses back to the default") {
  const Config defaults;
  for (const ConfigField& f : config_fields()) {
    INFO(f.key);
    Config c;
    Diagnostics d;
    CHECK(parse_field_text(f, format_field_text(f, defaults), c, d, f.key));
    CHECK(d.ok());
    CHECK(field_equals(f, c, defaults));
  }
}

TEST_CASE("A failed parse leaves the configuration unchanged and names the field") {
  Config c;
  Diagnostics d;
  CHECK(!parse_field_text(*find_field_by_key("tp"), "x", c, d, "--tp"));
  CHECK(c == Config{});
  REQUIRE(d.errors.size() == 1);
  CHECK(d.errors[0].field == "--tp");
  CHECK(d.errors[0].message == "'x' is not an integer: expected an integer in [1, 1024]");
}

TEST_CASE("Numbers format in fixed point and read back exactly") {
  // Found by fuzzing: 10 once formatted as "1e+01", which the parser rejected.
  const ConfigField& imbalance = *find_field_by_key("imbalance");
  for (double value :
       {1.0, 1.25, 10.0, 100.0, 1000.0, 1024.0, 1.0000000000000002, 3.3333333333333335}) {
    INFO(value);
    Config c;
    c.training.routing_imbalance = value;
    const std::string text = format_field_text(imbalance, c);
    CHECK(text.find('e') == std::string::npos);
    Config back;
    Diagnostics d;
    CHECK(parse_field_text(imbalance, text, back, d, "imbalance"));
    CHECK(back.training.routing_imbalance == value);
  }
  Config c;
  c.training.routing_imbalance = 10.0;
  CHECK(format_field_text(imbalance, c) == "10");
}
