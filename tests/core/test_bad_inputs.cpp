// The bad-input corpus (tests/bad-inputs/): every entry of every decoder is rejected with an
// error naming the field, and nothing crashes (this also runs under ASan + UBSan in the
// native-asan preset). One test per decoder: URL fragment, JSON, HF config, model text,
// measured and gap text; plus the fuzzer's reproducers, fed to every decoder, each with its
// recorded outcome (tests/bad-inputs/crash-outcomes.txt).
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "catch.h"
#include "config/config_json.h"
#include "config/measurement_text.h"
#include "config/scaling_points.h"
#include "config/url_fragment.h"
#include "corpus.h"
#include "estimate/estimate.h"
#include "measured/memory_log.h"
#include "measured/snapshot.h"
#include "measured/snapshot_link.h"
#include "model/hf_config.h"
#include "model/model_text.h"

using namespace stagemem;

namespace {

void check_corpus(const std::string& file, Diagnostics (*decode)(const std::string&)) {
  const auto entries = stagemem_tests::read_corpus("bad-inputs/" + file, "#");
  REQUIRE(entries.size() >= 8);
  for (const auto& entry : entries) {
    INFO("tests/bad-inputs/" << file << " line " << entry.line << ": " << entry.second);
    const Diagnostics d = decode(stagemem_tests::unescape(entry.second));
    REQUIRE(!d.ok());
    INFO(d.errors[0].field << ": " << d.errors[0].message);
    CHECK(d.errors[0].field.starts_with(entry.first));
    CHECK(!d.errors[0].message.empty());
  }
}

}  // namespace

TEST_CASE("Bad-input corpus: URL fragments") {
  check_corpus("url.txt",
               [](const std::string& text) { return decode_fragment(text).diagnostics; });
}

TEST_CASE("Bad-input corpus: JSON configurations") {
  check_corpus("json.txt",
               [](const std::string& text) { return config_from_json(text).diagnostics; });
}

TEST_CASE("Bad-input corpus: Hugging Face configs") {
  check_corpus("hf-config.txt",
               [](const std::string& text) { return import_hf_config(text).diagnostics; });
}

TEST_CASE("Bad-input corpus: model texts") {
  check_corpus("model-text.txt",
               [](const std::string& text) { return model_from_text(text, "model").diagnostics; });
}

TEST_CASE("Bad-input corpus: measured values and gaps") {
  check_corpus("measured.txt", [](const std::string& text) {
    Diagnostics d;
    parse_measurement_text(text, d, "m");
    return d;
  });
  check_corpus("gap.txt", [](const std::string& text) {
    Diagnostics d;
    parse_gap_text(text, d, "g");
    return d;
  });
}

TEST_CASE("Bad-input corpus: scaling points") {
  check_corpus("scaling.txt", [](const std::string& text) {
    Diagnostics d;
    parse_scaling_point_text(text, d, "p");
    return d;
  });
}

TEST_CASE("Bad-input corpus: Megatron memory report lines") {
  // EXPECTED is ":LINE: MESSAGE": the error names the log and the line, its message holds MESSAGE.
  const auto entries = stagemem_tests::read_corpus("bad-inputs/memory-log.txt", "#");
  REQUIRE(entries.size() >= 8);
  for (const auto& entry : entries) {
    INFO("tests/bad-inputs/memory-log.txt line " << entry.line << ": " << entry.second);
    const auto colon = entry.first.find(": ", 1);
    REQUIRE(colon != std::string::npos);
    const std::string field = "memory_log[corpus]" + entry.first.substr(0, colon);
    const std::string message = entry.first.substr(colon + 2);
    Diagnostics d;
    const auto readings =
        parse_memory_log(stagemem_tests::unescape(entry.second), "memory_log[corpus]", d);
    REQUIRE(!d.ok());
    bool found = false;
    for (const auto& e : d.errors) {
      found = found || (e.field == field && e.message.find(message) != std::string::npos);
    }
    INFO(d.errors[0].field << ": " << d.errors[0].message);
    CHECK(found);
    // The bad line gives no reading; a good line before it still does.
    for (const auto& r : readings) CHECK("memory_log[corpus]:" + std::to_string(r.line) != field);
  }
}

namespace {

// An outcome on one line, as crash-outcomes.txt holds it: \n, \t, \\ and \xNN escapes (the
// corpus escapes, undone by stagemem_tests::unescape).
std::string escaped(const std::string& text) {
  std::string out;
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\\') {
      out += "\\\\";
    } else if (byte < 0x20 || byte >= 0x7f) {
      constexpr char hex[] = "0123456789abcdef";
      out += std::string("\\x") + hex[byte >> 4] + hex[byte & 15];
    } else {
      out += c;
    }
  }
  return out;
}

// "error FIELD" naming the first error, else `ok`: what a decoder made of a reproducer.
std::string outcome(const Diagnostics& d, const std::string& ok) {
  if (d.ok()) return ok;
  // Every error names its field and says something.
  for (const auto& e : d.errors) {
    CHECK(!e.field.empty());
    CHECK(!e.message.empty());
  }
  return "error " + d.errors[0].field;
}

// Every decoder of untrusted bytes (the fuzz targets' list: tests/fuzz/) on one input, in a fixed
// order, with its outcome; what a decoder accepts must also survive its round trip.
std::vector<std::pair<std::string, std::string>> decode_everything(const std::string& bytes) {
  std::vector<std::pair<std::string, std::string>> out;
  std::optional<Config> config;
  const DecodedFragment fragment = decode_fragment(bytes);
  if (fragment.diagnostics.ok()) {
    CHECK(decode_fragment(encode_fragment(fragment.config)).config == fragment.config);
    config = fragment.config;
  }
  out.emplace_back("url", outcome(fragment.diagnostics, "value"));
  const DecodedConfig json = config_from_json(bytes);
  if (json.diagnostics.ok()) {
    CHECK(config_from_json(config_to_json(json.config)).config == json.config);
    if (!config) config = json.config;
  }
  out.emplace_back("json", outcome(json.diagnostics, "value"));
  // A decoded configuration goes on through the estimate (fuzz_estimate's path).
  if (config) {
    const Report report = estimate(*config);
    out.emplace_back("estimate", outcome(report.diagnostics, "report"));
  } else {
    out.emplace_back("estimate", "-");
  }
  const HfImport hf = import_hf_config(bytes);
  CHECK(hf.model.has_value() == hf.diagnostics.ok());
  out.emplace_back("hf-config", outcome(hf.diagnostics, "value"));
  const DecodedModel model = model_from_text(bytes, "model");
  if (model.model)
    CHECK(model_from_text(model_to_text(*model.model), "model").model == model.model);
  out.emplace_back("model-text", outcome(model.diagnostics, "value"));
  Diagnostics measured_d;
  const auto measured = parse_measurement_text(bytes, measured_d, "m");
  CHECK(measured.has_value() == measured_d.ok());
  out.emplace_back("measured", outcome(measured_d, "value"));
  Diagnostics gap_d;
  const auto gap = parse_gap_text(bytes, gap_d, "g");
  CHECK(gap.has_value() == gap_d.ok());
  out.emplace_back("gap", outcome(gap_d, "value"));
  const auto amount = parse_byte_amount(bytes);
  out.emplace_back("amount", amount ? "value " + std::to_string(*amount) : "none");
  Diagnostics log_d;
  const auto readings = parse_memory_log(bytes, "memory_log", log_d);
  out.emplace_back("memory-log", outcome(log_d, std::to_string(readings.size()) + " readings"));
  const DecodedSnapshotLink link = decode_snapshot_link(bytes);
  out.emplace_back("snapshot-link", outcome(link.diagnostics, link.snapshot ? "value" : "none"));
  // The snapshot's errors are "pickle: byte N: MESSAGE" (the pickle reader) or "PATH: MESSAGE"
  // (the decoder): recorded without MESSAGE.
  const SnapshotDecoded snapshot = read_snapshot(bytes);
  CHECK(snapshot.snapshot.has_value() == snapshot.error.empty());
  const std::string& error = snapshot.error;
  const std::size_t message = error.find(": ", error.starts_with("pickle: ") ? 8 : 0);
  out.emplace_back("snapshot", snapshot.snapshot ? "value" : "error " + error.substr(0, message));
  return out;
}

}  // namespace

// Each file of tests/bad-inputs/crashes/ once crashed or hung a decoder. The outcome of every
// decoder on each is recorded in tests/bad-inputs/crash-outcomes.txt; the test fails when the
// folder is missing or holds no reproducer, when one cannot be read, when a file and the record
// disagree (a reproducer without outcomes or outcomes without a file) and when an outcome changes.
TEST_CASE("Fuzzer reproducers: every decoder gives the recorded outcome on each") {
  std::map<std::string, std::map<std::string, std::string>> recorded;  // file -> decoder -> outcome
  for (const auto& entry : stagemem_tests::read_corpus("bad-inputs/crash-outcomes.txt", "#")) {
    INFO("tests/bad-inputs/crash-outcomes.txt line " << entry.line);
    const auto tab = entry.second.find('\t');
    REQUIRE(tab != std::string::npos);
    const std::string decoder = entry.second.substr(0, tab);
    REQUIRE(recorded[entry.first].emplace(decoder, entry.second.substr(tab + 1)).second);
  }
  const std::filesystem::path directory = stagemem_tests::corpus_path("bad-inputs/crashes");
  REQUIRE(std::filesystem::is_directory(directory));
  std::set<std::string> files;
  for (const auto& file : std::filesystem::directory_iterator(directory)) {
    if (file.path().filename() == "README.md") continue;
    INFO(file.path().string());
    REQUIRE(file.is_regular_file());
    files.insert(file.path().filename().string());
  }
  REQUIRE(!files.empty());
  std::set<std::string> recorded_files;
  for (const auto& [file, outcomes] : recorded) recorded_files.insert(file);
  CHECK(files == recorded_files);

  for (const std::string& file : files) {
    // read_whole_file throws (and the test fails) when the file cannot be read.
    const std::string bytes = stagemem_tests::read_whole_file((directory / file).string());
    const auto outcomes = decode_everything(bytes);
    const auto& expected = recorded[file];
    CHECK(expected.size() == outcomes.size());
    for (const auto& [decoder, got] : outcomes) {
      // The line crash-outcomes.txt holds for it; every decoder is checked, so a new
      // reproducer's failures list all its lines.
      INFO(file << "\t" << decoder << "\t" << escaped(got));
      const auto it = expected.find(decoder);
      CHECK(got ==
            (it == expected.end() ? "(not recorded)" : stagemem_tests::unescape(it->second)));
    }
  }
}
