// The report JSON of every preset over a fixed set of configurations, byte for byte
// (tests/core/data/golden_reports/). It pins everything a restructuring of the core must keep:
// every number, every term's text and the schema's shape. The files were written by commit
// 5b9bb59 (before src/core was grouped by subsystem, issue 21), with
//   STAGEMEM_WRITE_GOLDEN=1 ./out/build/native-asan/tests/stagemem_core_tests "[golden]"
// A deliberate change of the physics or the schema rewrites them the same way, and the diff of
// the files is the review of that change.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>
#include <string>

#include "config/config.h"
#include "config/production_layouts.h"
#include "config/url_fragment.h"
#include "corpus.h"
#include "estimate/estimate.h"
#include "model/presets.h"
#include "render/report_json.h"
#include "report/report.h"

namespace {

using stagemem::Config;

struct GoldenCase {
  std::string name;
  std::string fields;
};

std::vector<GoldenCase> golden_cases() {
  std::vector<GoldenCase> cases;
  for (const auto& entry : stagemem_tests::read_corpus("core/data/golden_reports/cases.txt", "#")) {
    cases.push_back({entry.first, entry.second});
  }
  return cases;
}

// The link of a case on a preset; "production" is the preset's production layout and optimizer
// ("" when the preset has none).
std::string case_link(const std::string& preset, const GoldenCase& c) {
  if (c.fields != "production") {
    return "v=1&model=" + preset + (c.fields.empty() ? "" : "&" + c.fields);
  }
  const auto production = stagemem::preset_production_layout(preset);
  if (!production) return "";
  Config config;
  config.model = preset;
  config.parallel = production->layout;
  config.optimizer = production->optimizer;
  config.device.preset = "h200";
  config.training.global_batch = 896;  // a multiple of DP 28
  return stagemem::encode_fragment(config);
}

// Every case of one preset, each after a "=== NAME" line.
std::string golden_text(const std::string& preset) {
  std::string text;
  for (const GoldenCase& c : golden_cases()) {
    const std::string link = case_link(preset, c);
    if (link.empty()) continue;
    const stagemem::DecodedFragment decoded = stagemem::decode_fragment(link);
    text += "=== " + c.name + "\n";
    if (!decoded.diagnostics.ok()) {
      for (const auto& e : decoded.diagnostics.errors) {
        text += "link error: " + e.field + ": " + e.message + "\n";
      }
      continue;
    }
    const stagemem::Report report = stagemem::estimate(decoded.config);
    text += stagemem::report_json(report, decoded.config, link, decoded.diagnostics);
  }
  return text;
}

}  // namespace

TEST_CASE("golden: the report JSON of every preset over the fixed cases", "[golden]") {
  const bool write = std::getenv("STAGEMEM_WRITE_GOLDEN") != nullptr;
  REQUIRE(golden_cases().size() >= 20);
  for (const std::string_view name : stagemem::preset_names()) {
    const std::string preset(name);
    const std::string path =
        stagemem_tests::corpus_path("core/data/golden_reports/" + preset + ".json");
    const std::string text = golden_text(preset);
    if (write) {
      std::ofstream(path, std::ios::binary) << text;
      continue;
    }
    const std::string expected = stagemem_tests::read_whole_file(path);
    INFO(preset << ": " << path);
    REQUIRE(!expected.empty());
    if (text == expected) continue;
    // Name the first case and line that differ, not a multi-megabyte dump.
    std::size_t at = 0;
    while (at < text.size() && at < expected.size() && text[at] == expected[at]) ++at;
    const std::size_t case_at = expected.rfind("=== ", at);
    const std::size_t line_at = expected.rfind('\n', at == 0 ? 0 : at - 1);
    const std::size_t begin = line_at == std::string::npos ? 0 : line_at + 1;
    INFO("case " << expected.substr(case_at, expected.find('\n', case_at) - case_at));
    INFO("expected line: " << expected.substr(begin, expected.find('\n', at) - begin));
    INFO("actual line:   " << text.substr(begin, text.find('\n', at) - begin));
    CHECK(text == expected);
  }
}
