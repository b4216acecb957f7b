// Tests of report_json.h beyond the golden files (test_golden_reports.cpp pins report_json byte
// for byte): `check --json` is the check's verdict plus the same report document.
#include <string>

#include <nlohmann/json.hpp>

#include "catch.h"
#include "estimate/estimate.h"
#include "render/report_json.h"

using namespace stagemem;
using json = nlohmann::ordered_json;

TEST_CASE("Check JSON: the verdict fields, then the whole report document") {
  // Llama-3.1-8B at PP 2 x VPP 2 on an H200 (150,109,945,856 B): rank 0 runs layers 0-7 and
  // 16-23, rank 1 8-15 and 24-31; both fit.
  Config c;
  c.parallel.pipeline_parallel = 2;
  c.parallel.virtual_stages = 2;
  c.training.global_batch = 8;
  c.device.preset = "h200";
  const Report r = estimate(c);
  REQUIRE(r.diagnostics.ok());
  const json check = json::parse(check_json(r, c, "#v=1&pp=2&vpp=2&gbs=8&device=h200", {}));
  const json report = json::parse(report_json(r, c, "#v=1&pp=2&vpp=2&gbs=8&device=h200", {}));
  // The existing fields keep their names, order and values; schema_version and kind lead, the
  // report document comes last.
  std::vector<std::string> keys;
  for (const auto& item : check.items()) keys.push_back(item.key());
  CHECK(keys == std::vector<std::string>{"schema_version", "kind", "model", "fits", "device",
                                         "binding_stage", "stages", "report"});
  CHECK(check["schema_version"] == report_schema_version);
  CHECK(check["kind"] == "check");
  CHECK(check["report"] == report);
  CHECK(check["model"] == "llama-3.1-8b");
  CHECK(check["fits"] == true);
  CHECK(check["device"] == json{{"name", "h200"}, {"bytes", 150'109'945'856}});
  CHECK(check["binding_stage"] == report["binding_stage"]);
  REQUIRE(check["stages"].size() == 2);
  const json& s0 = check["stages"][0];
  CHECK(s0["index"] == 0);
  CHECK(s0["layers"] == "0-7,16-23");
  CHECK(s0["peak_bytes"] == report["stages"][0]["peak_bytes"]);
  CHECK(s0["headroom_bytes"] == report["stages"][0]["headroom_bytes"]);
  CHECK(s0["fits"] == true);
  // The five largest terms of the peak; stage 0's largest: Adam's two fp32 moments over its
  // parameters (8 B each).
  REQUIRE(s0["largest_terms"].size() == 5);
  CHECK(s0["largest_terms"][0]["name"] == "Adam exp_avg + exp_avg_sq (fp32): dense parameters");
  CHECK(s0["largest_terms"][0]["family"] == "resident");
  CHECK(check["stages"][1]["layers"] == "8-15,24-31");
}

TEST_CASE("Check JSON: a stage that does not fit") {
  // 1,000,000,000 B holds none of Llama-3.1-8B's 4 stages (PP 4): every stage's fits is false.
  Config c;
  c.parallel.pipeline_parallel = 4;
  c.device.bytes = 1'000'000'000;
  const Report r = estimate(c);
  REQUIRE(r.diagnostics.ok());
  const json check = json::parse(check_json(r, c, "", {}));
  CHECK(check["fits"] == false);
  for (const json& s : check["stages"]) CHECK(s["fits"] == false);
  CHECK(check["device"]["name"] == "custom");
  // Stage 0: 61,150,855,168 B peak reserved (the allocator replay; 60,023,768,064 B allocated)
  // - 1,000,000,000 B = 59,316,188,672 B over.
  CHECK(check["stages"][0]["peak_bytes"] == 60'023'768'064);
  CHECK(check["stages"][0]["peak_reserved_bytes"] == 61'150'855'168);
  CHECK(check["stages"][0]["device_peak_bytes"].is_null());
  CHECK(check["stages"][0]["fit_basis"] == "reserved");
  CHECK(check["stages"][0]["headroom_bytes"] == -60'150'855'168);
  CHECK(check["report"].contains("link") == false);  // no link given
}
