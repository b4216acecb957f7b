// fuzz_estimate.cpp — libFuzzer target of the whole path: link or JSON bytes -> decoded
// configuration -> estimate() -> every output writer of the core.
//
// The same bytes are read as a URL fragment and as a JSON configuration; each configuration a
// decoder accepts is estimated, and the report must keep the oracles of tests/report_oracles.h
// (no negative or wrapped bytes, each stage's peak the sum of its co-live terms, totals that
// agree). Then every writer runs on it and its output must read back:
//   - the link and the JSON document of the configuration decode to the same configuration;
//   - every term's text (name, formula, scaling, source) through the CSV text-cell escaper reads
//     back as RFC 4180 to the text (plus the formula-injection apostrophe) and through the
//     Markdown cell escaper keeps no raw HTML-significant character, line break or bare '|';
//   - the core's report JSON (report_json.h) parses back with the same peaks, term names and
//     bytes, and its counts_in_peak terms sum to each peak.
// A broken oracle traps (libFuzzer reports it as a crash with the input saved).
// Build and run: scripts/fuzz.sh SECONDS (clang, -DSTAGEMEM_FUZZ=ON).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "base/text_escaping.h"
#include "config/config_json.h"
#include "config/url_fragment.h"
#include "estimate/estimate.h"
#include "render/report_json.h"
#include "render/term_text.h"
#include "report/report.h"
#include "report_oracles.h"

namespace {

void require(bool condition) {
  if (!condition) __builtin_trap();
}

// RFC 4180 read-back of one field; false when malformed.
bool read_csv_field(const std::string& field, std::string& out) {
  out.clear();
  if (field.empty() || field[0] != '"') {
    out = field;
    return field.find_first_of(",\"\n\r") == std::string::npos;
  }
  if (field.size() < 2 || field.back() != '"') return false;
  for (std::size_t i = 1; i + 1 < field.size(); ++i) {
    if (field[i] == '"' && (i + 2 >= field.size() || field[++i] != '"')) return false;
    out += field[i];
  }
  return true;
}

void check_csv(const std::string& text) {
  std::string back;
  require(read_csv_field(stagemem::csv_field(text), back));
  require(back == text || back == "'" + text);
}

void check_markdown(const std::string& text) {
  const std::string md = stagemem::markdown_cell(text);
  for (std::size_t i = 0; i < md.size(); ++i) {
    const char c = md[i];
    if (c == '<') {
      require(md.compare(i, 4, "<br>") == 0);
      i += 3;
      continue;
    }
    require(c != '>' && c != '"' && c != '\'' && c != '\n' && c != '\r');
    if (c == '|') {
      std::size_t slashes = 0;
      while (slashes < i && md[i - 1 - slashes] == '\\') ++slashes;
      require(slashes % 2 == 1);
    }
  }
}

void check_writers(const stagemem::Config& config, const stagemem::Report& report) {
  // The configuration's own writers.
  const auto from_link = stagemem::decode_fragment(stagemem::encode_fragment(config));
  require(from_link.diagnostics.ok() && from_link.config == config);
  const auto from_json = stagemem::config_from_json(stagemem::config_to_json(config));
  require(from_json.diagnostics.ok() && from_json.config == config);

  // The report: each term's text through the table escapers, and the core's JSON writer
  // (report_json.h, what the CLI, the app and the web bindings write) read back.
  for (const stagemem::StageReport& s : report.stages) {
    for (const stagemem::Term& t : s.terms) {
      const std::string texts[] = {stagemem::term_name(t), stagemem::term_formula(t),
                                   stagemem::term_scaling(t),
                                   std::string(stagemem::term_source(t, config))};
      for (const std::string& text : texts) {
        check_csv(text);
        check_markdown(text);
      }
    }
  }
  // The report JSON costs ten estimates per stage under the sanitizers (146 ms for 32 stages
  // against 5 ms for the estimate): past 8 pipeline chunks the fuzzer would spend nearly all
  // its time there for no new paths, so larger layouts stop at the text writers above.
  if (config.parallel.pipeline_parallel * config.parallel.virtual_stages > 8) return;
  using json = nlohmann::json;
  const std::string link = stagemem::encode_fragment(config);
  const json back = json::parse(stagemem::report_json(report, config, link, {}), nullptr, false);
  require(!back.is_discarded() && back.is_object());
  const json& stages = back["stages"];
  require(stages.is_array() && stages.size() == report.stages.size());
  for (std::size_t i = 0; i < report.stages.size(); ++i) {
    const stagemem::StageReport& s = report.stages[i];
    require(stages[i]["peak_bytes"].get<std::int64_t>() == s.peak_bytes);
    const json& terms = stages[i]["terms"];
    require(terms.is_array() && terms.size() == s.terms.size());
    std::int64_t in_peak = 0;
    for (std::size_t k = 0; k < s.terms.size(); ++k) {
      require(terms[k]["bytes"].get<std::int64_t>() == s.terms[k].bytes);
      require(terms[k]["name"].get<std::string>() == stagemem::term_name(s.terms[k]));
      if (terms[k]["counts_in_peak"].get<bool>()) in_peak += terms[k]["bytes"].get<std::int64_t>();
    }
    require(in_peak == s.peak_bytes);  // the schema's promise, read back from the text
  }
}

void check_path(const stagemem::DecodedConfig& decoded) {
  if (!decoded.diagnostics.ok()) return;
  const stagemem::Report report = stagemem::estimate(decoded.config);
  if (const std::string broken = stagemem_tests::check_report(report); !broken.empty()) {
    std::fprintf(stderr, "fuzz_estimate: oracle broken: %s\n", broken.c_str());
    __builtin_trap();
  }
  if (report.diagnostics.ok()) check_writers(decoded.config, report);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  check_path(stagemem::decode_fragment(text));
  check_path(stagemem::config_from_json(text));
  return 0;
}
