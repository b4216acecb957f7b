#include "url_fragment.h"

#include <charconv>
#include <cstdint>

namespace stagemem {
namespace {

constexpr std::size_t max_fragment_length = 16384;

struct IntegerField {
  std::string_view key;
  std::int64_t ParallelLayout::*member;
  std::int64_t max;
};

constexpr IntegerField integer_fields[] = {
    {"tp", &ParallelLayout::tensor_parallel, 1024},
    {"pp", &ParallelLayout::pipeline_parallel, 1024},
    {"ep", &ParallelLayout::expert_parallel, 4096},
    {"etp", &ParallelLayout::expert_tensor_parallel, 1024},
};

bool is_model_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_';
}

// Keys and values of version 1 never need escaping; a '%' is rejected rather than decoded so a
// link has exactly one spelling.
void parse_integer(std::string_view key, std::string_view value, std::int64_t max,
                   std::int64_t& out, Diagnostics& d) {
  const std::string field = "url." + std::string(key);
  const std::string range = "an integer in [1, " + std::to_string(max) + "]";
  std::int64_t parsed = 0;
  const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), parsed);
  if (value.empty() || error != std::errc() || end != value.data() + value.size()) {
    d.error(field, "'" + std::string(value.substr(0, 32)) + "' is not " + range);
    return;
  }
  if (parsed < 1 || parsed > max) {
    d.error(field, std::to_string(parsed) + " is out of range: expected " + range);
    return;
  }
  out = parsed;
}

}  // namespace

std::string encode_fragment(const Config& config) {
  const Config defaults;
  std::string out = "v=" + std::to_string(url_format_version);
  if (config.model != defaults.model) out += "&model=" + config.model;
  for (const IntegerField& f : integer_fields) {
    if (config.parallel.*f.member != defaults.parallel.*f.member) {
      out += "&" + std::string(f.key) + "=" + std::to_string(config.parallel.*f.member);
    }
  }
  return out;
}

DecodedFragment decode_fragment(std::string_view text) {
  DecodedFragment result;
  Diagnostics& d = result.diagnostics;
  if (const auto hash = text.find('#'); hash != std::string_view::npos) text.remove_prefix(hash + 1);
  if (text.size() > max_fragment_length) {
    d.error("url", "the fragment is " + std::to_string(text.size()) + " characters; at most " +
                       std::to_string(max_fragment_length) + " are accepted");
    return result;
  }
  if (text.empty()) return result;
  bool saw_version = false;
  while (!text.empty()) {
    const auto amp = text.find('&');
    const std::string_view pair = text.substr(0, amp);
    text = amp == std::string_view::npos ? std::string_view{} : text.substr(amp + 1);
    if (pair.empty()) continue;
    const auto eq = pair.find('=');
    if (eq == std::string_view::npos) {
      d.error("url", "'" + std::string(pair.substr(0, 32)) + "' is not a key=value pair");
      continue;
    }
    const std::string_view key = pair.substr(0, eq);
    const std::string_view value = pair.substr(eq + 1);
    if (key == "v") {
      saw_version = true;
      if (value != "1") {
        d.error("url.v", "format version '" + std::string(value.substr(0, 16)) +
                             "' is not supported; this build reads version 1");
        return result;
      }
      continue;
    }
    if (key == "model") {
      bool valid = !value.empty() && value.size() <= 64;
      for (char c : value) valid = valid && is_model_name_char(c);
      if (!valid) {
        d.error("url.model", "a preset name of 1 to 64 characters from [a-z0-9._-] is expected");
      } else {
        result.config.model = std::string(value);
      }
      continue;
    }
    bool known = false;
    for (const IntegerField& f : integer_fields) {
      if (key == f.key) {
        known = true;
        parse_integer(key, value, f.max, result.config.parallel.*f.member, d);
      }
    }
    if (!known) {
      d.warn("url." + std::string(key.substr(0, 32)), "unknown key ignored (a newer link format?)");
    }
  }
  if (!saw_version) d.warn("url.v", "no format version; read as version 1");
  return result;
}

}  // namespace stagemem
