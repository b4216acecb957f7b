// The bad-input corpus (tests/bad-inputs/): every entry of every decoder is rejected with an
// error naming the field, and nothing crashes (this also runs under ASan + UBSan in the
// native-asan preset). One test per decoder: URL fragment, JSON, HF config, model text,
// measured and gap text; plus the fuzzer's reproducers, fed to every decoder.
#include <filesystem>

#include "catch.h"
#include "config/config_json.h"
#include "config/measurement_text.h"
#include "config/url_fragment.h"
#include "corpus.h"
#include "measured/memory_log.h"
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

TEST_CASE("Fuzzer reproducers: no decoder crashes on any of them") {
  const std::filesystem::path directory = stagemem_tests::corpus_path("bad-inputs/crashes");
  int files = 0;
  for (const auto& file : std::filesystem::directory_iterator(directory)) {
    if (file.path().extension() == ".md") continue;
    INFO(file.path().string());
    const std::string bytes = stagemem_tests::read_whole_file(file.path().string());
    const DecodedFragment fragment = decode_fragment(bytes);
    if (fragment.diagnostics.ok())
      CHECK(decode_fragment(encode_fragment(fragment.config)).config == fragment.config);
    const DecodedConfig json = config_from_json(bytes);
    if (json.diagnostics.ok())
      CHECK(config_from_json(config_to_json(json.config)).config == json.config);
    (void)import_hf_config(bytes);
    (void)model_from_text(bytes, "model");
    Diagnostics d;
    (void)parse_measurement_text(bytes, d, "m");
    (void)parse_gap_text(bytes, d, "g");
    (void)parse_byte_amount(bytes);
    (void)parse_memory_log(bytes, "memory_log", d);
    ++files;
  }
  SUCCEED(std::to_string(files) + " reproducers");
}
