// Tests of render/comparison.h: a comparison as text, Markdown, CSV and JSON.
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "catch.h"
#include "config/url_fragment.h"
#include "estimate/compare.h"
#include "estimate/estimate.h"
#include "render/comparison.h"

using namespace stagemem;

namespace {

Config from_link(std::string_view fragment) {
  DecodedFragment decoded = decode_fragment(fragment);
  REQUIRE(decoded.diagnostics.ok());
  return decoded.config;
}

// Two configurations, their reports and their comparison, kept alive together.
struct Pair {
  Config a_config;
  Config b_config;
  Report a;
  Report b;
  Comparison comparison;
  Pair(std::string_view a_link, std::string_view b_link)
      : a_config(from_link(a_link)),
        b_config(from_link(b_link)),
        a(estimate(a_config)),
        b(estimate(b_config)),
        comparison(compare_reports(a, b)) {
    REQUIRE(comparison.diagnostics.ok());
  }
  ComparedReports compared() const {
    return {.a_config = a_config, .a = a, .b_config = b_config, .b = b, .comparison = comparison};
  }
};

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

std::size_t term_rows(const Comparison& c) {
  std::size_t n = 0;
  for (const StageComparison& s : c.stages) n += s.terms.size();
  return n;
}

}  // namespace

TEST_CASE("Comparison: the settings that differ, as the link writes them") {
  const Config a = from_link("v=1&pp=2&tp=2");
  const Config b = from_link("v=1&pp=2&tp=4&sp=1&seq=8192");
  const std::vector<SettingChange> changes = setting_changes(a, b);
  REQUIRE(changes.size() == 3);
  CHECK(setting_changes_text(changes) == "tp 2 -> 4, sp 0 -> 1, seq 4096 -> 8192");
  CHECK(setting_changes(a, a).empty());
  CHECK(setting_changes_text({}) == "none");
}

TEST_CASE("Comparison text: both sides, the changes, the binding peaks, stages, changed terms") {
  const Pair p("v=1&pp=2", "v=1&pp=4");
  const std::string text = comparison_text(p.compared(), {});
  CHECK(text.starts_with("A: llama-3.1-8b, TP 1 x PP 2 x CP 1 x DP 1 = 2 GPUs;"));
  CHECK(text.find("\nB: llama-3.1-8b, TP 1 x PP 4 x CP 1 x DP 1 = 4 GPUs;") != std::string::npos);
  CHECK(text.find("settings changed: pp 2 -> 4\n") != std::string::npos);
  // Binding peaks: 91,431,896,064 B = 85.15 GiB and 60,023,768,064 B = 55.90 GiB; the
  // difference is -31,408,128,000 B = -29.25 GiB.
  CHECK(text.find("binding peak: 85.15 GiB -> 55.90 GiB (-29.25 GiB)\n") != std::string::npos);
  // Stages 2 and 3 only B has: A's cells are "-".
  CHECK(text.find("            2  -         16-23") != std::string::npos);
  // The binding stage (0 on both sides) lists its changed terms, largest change first:
  // Adam's moments (4 bytes x 2 per parameter) lead with -13,959,168,000 B = -13.00 GiB.
  const auto at = text.find("stage 0: ");
  REQUIRE(at != std::string::npos);
  const std::vector<std::string> after = lines_of(text.substr(at));
  REQUIRE(after.size() > 2);
  CHECK(after[2].starts_with("Adam exp_avg + exp_avg_sq (fp32): dense parameters"));
  CHECK(after[2].ends_with("-13.00 GiB"));
  // Only the binding stages' terms without --terms; every stage's with it.
  CHECK(text.find("\nstage 1: ") == std::string::npos);
  const std::string all = comparison_text(p.compared(), {.all_stages = true});
  CHECK(all.find("\nstage 3: ") != std::string::npos);
}

TEST_CASE("Comparison text: a difference too small for GiB is written in bytes") {
  const Pair p("v=1&pp=2", "v=1&pp=2&weights=fp8-tensor&fp8_recipe=tensor");
  const std::string text = comparison_text(p.compared(), {});
  CHECK(text.find("0.00 GiB") == std::string::npos);
  CHECK(text.find(" B") != std::string::npos);
  CHECK(text.find("(B only)") != std::string::npos);
}

TEST_CASE("Comparison Markdown: summary, stage table, changed terms and the links") {
  const Pair p("v=1&pp=2", "v=1&pp=4");
  const std::string md = comparison_markdown(
      p.compared(), {.a_link = "#v=1&pp=2",
                     .b_link = "#v=1",
                     .comparison_link = "https://wiki.example/stagemem/#v=1&base=x"});
  CHECK(md.find("- Settings changed: pp 2 \u2192 4\n") != std::string::npos);
  CHECK(md.find("| stage | layers A | layers B | peak A | peak B | difference | reserved A | "
                "reserved B | fits A | fits B |\n| ---: |") != std::string::npos);
  CHECK(md.find("#### stage 0: ") != std::string::npos);
  CHECK(md.find("[Open this comparison in stagemem](<https://wiki.example/stagemem/#v=1&base=x>)"
                "\n") != std::string::npos);
  CHECK(md.find("A (stagemem link fragment): `#v=1&pp=2`\n") != std::string::npos);
  CHECK(md.find("B (stagemem link fragment): `#v=1`\n") != std::string::npos);
}

TEST_CASE("Comparison CSV: a row per stage and term plus each stage's peaks, B - A exactly") {
  // Per stage: its terms, the peak (allocated) row and the peak reserved row (both sides are
  // replayed); no device row, as neither side measures the rows outside the allocator.
  const Pair p("v=1&model=mixtral-8x7b&pp=4&ep=8", "v=1&model=mixtral-8x7b&pp=4&ep=8&tp=2&sp=1");
  const std::string csv = comparison_csv(p.compared());
  const std::vector<std::string> rows = lines_of(csv);
  REQUIRE(rows.size() == 1 + term_rows(p.comparison) + 2 * p.comparison.stages.size());
  for (const StageComparison& s : p.comparison.stages) {
    CHECK(csv.find("\n" + std::to_string(s.index) + ",peak reserved,," +
                   std::to_string(s.a_peak_reserved_bytes) + "," +
                   std::to_string(s.b_peak_reserved_bytes) + "," +
                   std::to_string(s.b_peak_reserved_bytes - s.a_peak_reserved_bytes) +
                   ",yes,yes\n") != std::string::npos);
  }
  CHECK(csv.find(",device peak,") == std::string::npos);
  CHECK(rows[0] == "stage,term,family,a_bytes,b_bytes,delta_bytes,in_a,in_b");
  for (std::size_t i = 1; i < rows.size(); ++i) {
    // The last five fields hold no comma: a_bytes, b_bytes, delta_bytes, in_a, in_b.
    std::vector<std::string> tail;
    std::string row = rows[i];
    for (int f = 0; f < 5; ++f) {
      const auto comma = row.rfind(',');
      REQUIRE(comma != std::string::npos);
      tail.insert(tail.begin(), row.substr(comma + 1));
      row.resize(comma);
    }
    CHECK(std::stoll(tail[2]) == std::stoll(tail[1]) - std::stoll(tail[0]));
  }
}

TEST_CASE("Comparison JSON: per stage peak_delta_bytes, per term a_bytes/b_bytes/delta_bytes") {
  const Pair p("v=1&pp=2", "v=1&pp=4&device=h100-80gb");
  const auto doc = nlohmann::json::parse(comparison_json(p.compared(), "#v=1&pp=2", "#x"));
  CHECK(doc["kind"] == "diff");
  CHECK(doc["schema_version"] == 1);
  CHECK(doc["a"]["link"] == "#v=1&pp=2");
  CHECK(doc["a"]["fits"].is_null());  // no device
  CHECK(doc["b"]["fits"].is_boolean());
  CHECK(doc["b"]["device"]["name"] == "h100-80gb");
  CHECK(doc["a"]["binding_peak_bytes"] == 91'431'896'064);
  CHECK(doc["binding_peak_delta_bytes"] == p.comparison.binding_peak_delta_bytes);
  REQUIRE(doc["stages"].size() == 4);
  CHECK(doc["settings_changed"].size() == 2);  // pp and device
  for (std::size_t i = 0; i < 4; ++i) {
    const auto& s = doc["stages"][i];
    const StageComparison& c = p.comparison.stages[i];
    CHECK(s["index"] == i);
    CHECK(s["peak_delta_bytes"] ==
          s["b_peak_bytes"].get<std::int64_t>() - s["a_peak_bytes"].get<std::int64_t>());
    CHECK(s["changed_terms"] == changed_terms(c));
    REQUIRE(s["terms"].size() == c.terms.size());
    for (std::size_t t = 0; t < c.terms.size(); ++t) {
      CHECK(s["terms"][t]["a_bytes"] == c.terms[t].a_bytes);
      CHECK(s["terms"][t]["b_bytes"] == c.terms[t].b_bytes);
      CHECK(s["terms"][t]["delta_bytes"] == c.terms[t].delta_bytes);
      CHECK(s["terms"][t]["a_name"].is_null() == (c.terms[t].a_term < 0));
    }
  }
  // Each side's replayed reserved peak; the device figure is unknown without measured rows.
  for (std::size_t i = 0; i < 2; ++i) {
    CHECK(doc["stages"][i]["a_peak_reserved_bytes"] == p.a.stages[i].peak_reserved_bytes);
    CHECK(doc["stages"][i]["b_peak_reserved_bytes"] == p.b.stages[i].peak_reserved_bytes);
    CHECK(doc["stages"][i]["a_peak_reserved_bytes"] >= doc["stages"][i]["a_peak_bytes"]);
    CHECK(doc["stages"][i]["a_device_peak_bytes"].is_null());
  }
  CHECK(doc["stages"][3]["a_peak_reserved_bytes"].is_null());  // A has 2 stages
  CHECK(doc["stages"][3]["b_peak_reserved_bytes"] == p.b.stages[3].peak_reserved_bytes);
  CHECK(doc["stages"][3]["in_a"] == false);
  CHECK(doc["stages"][3]["a_layers"].is_null());
  CHECK(doc["stages"][3]["a_fits"].is_null());
}

TEST_CASE("Comparison: the pieces a front end draws are the cells the writers print") {
  // The app's Compare tab draws these tables itself; they must be the ones `stagemem diff`
  // prints, so the text writer's output holds each of them whole.
  const Pair p("v=1&pp=2", "v=1&pp=4");
  const ComparedReports c = p.compared();
  const Table stages = comparison_stage_table(c);
  REQUIRE(stages.rows.size() == p.comparison.stages.size());  // one row per stage index
  CHECK(stages.columns.size() == 10);
  const std::string text = comparison_text(c, {.all_stages = true});
  CHECK(text.find(text_table(stages)) != std::string::npos);
  for (const StageComparison& s : p.comparison.stages) {
    CHECK(text.find(changed_terms_heading(s)) != std::string::npos);
    const Table terms = changed_terms_table(c, s);
    CHECK(static_cast<std::int64_t>(terms.rows.size()) == changed_terms(s));
    if (!terms.rows.empty()) CHECK(text.find(text_table(terms)) != std::string::npos);
  }
  // The binding peaks line, with the arrow asked for.
  CHECK(text.find("binding peak: " + binding_peaks_text(p.comparison)) != std::string::npos);
  CHECK(binding_peaks_text(p.comparison, " \u2192 ").find(" \u2192 ") != std::string::npos);
  // Amounts under 10 MiB in bytes, so a change never reads 0.00 GiB; differences signed.
  CHECK(comparison_amount_text(81920) == "81,920 B");
  CHECK(comparison_amount_text(std::int64_t{3} << 30) == "3.00 GiB");
  CHECK(comparison_delta_text(81920) == "+81,920 B");
  CHECK(comparison_delta_text(-(std::int64_t{3} << 29)) == "-1.50 GiB");
  CHECK(comparison_delta_text(0) == "0 B");
  CHECK(comparison_side_summary(p.b, p.b_config).find("sequence") != std::string::npos);
}

TEST_CASE("Comparison text and Markdown in GB when asked; CSV and JSON stay in bytes") {
  const Pair p("v=1&pp=2", "v=1&pp=4");
  ComparedReports gb = p.compared();
  gb.unit = AmountUnit::gb;
  // 91,431,896,064 B = 91.43 GB; 60,023,768,064 B = 60.02 GB; -31,408,128,000 B = -31.41 GB.
  const std::string text = comparison_text(gb, {});
  CHECK(text.find("binding peak: 91.43 GB -> 60.02 GB (-31.41 GB)\n") != std::string::npos);
  CHECK(text.find("GiB") == std::string::npos);
  const std::string md = comparison_markdown(gb, {});
  CHECK(md.find("GiB") == std::string::npos);
  CHECK(md.find("B - A (GB = 10^9 bytes)") != std::string::npos);
  CHECK(comparison_csv(gb) == comparison_csv(p.compared()));
  CHECK(comparison_json(gb, "", "") == comparison_json(p.compared(), "", ""));
}
