#include "base/json_reader.h"

#include <string>
#include <utility>
#include <vector>

namespace stagemem {
namespace {

using json = nlohmann::json;

// At most this many duplicate-key errors per document: each is real, but a machine-written file
// with thousands of them needs only the first few to be understood.
constexpr std::size_t max_duplicate_errors = 16;

std::string shown_key(const std::string& key) {
  constexpr std::size_t limit = 32;
  std::string out;
  for (char c : key.substr(0, limit)) {
    const auto byte = static_cast<unsigned char>(c);
    out += byte < 0x20 || byte == 0x7f ? '?' : c;
  }
  return out + (key.size() > limit ? "..." : "");
}

// A value as the user wrote it, shortened: enough to tell the two values of a duplicate apart.
std::string shown_value(const json& value) {
  constexpr std::size_t limit = 40;
  const std::string text = value.dump(-1, ' ', false, json::error_handler_t::replace);
  return text.size() <= limit ? text : text.substr(0, limit) + "...";
}

// Builds the DOM from nlohmann's SAX events (an explicit stack, no recursion), counting depth
// and checking every object's keys as they arrive.
class BoundedBuilder {
 public:
  BoundedBuilder(const JsonLimits& limits, std::string_view field, Diagnostics& d)
      : limits_(limits), field_(field), d_(d) {}

  json take() { return std::move(root_); }
  bool failed() const { return failed_; }

  bool null() { return value(json(nullptr)); }
  bool boolean(bool b) { return value(json(b)); }
  bool number_integer(json::number_integer_t n) { return value(json(n)); }
  bool number_unsigned(json::number_unsigned_t n) { return value(json(n)); }
  bool number_float(json::number_float_t n, const json::string_t&) { return value(json(n)); }
  bool string(json::string_t& s) { return value(json(std::move(s))); }
  bool binary(json::binary_t& b) { return value(json::binary(std::move(b))); }

  bool start_object(std::size_t) { return open(json::object()); }
  bool start_array(std::size_t) { return open(json::array()); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }

  bool key(json::string_t& k) {
    Level& level = levels_.back();
    level.key = k;
    if (const auto found = level.container->find(k); found != level.container->end()) {
      // Reported once the second value is complete, so the message can show both.
      duplicates_.push_back({levels_.size(), shown_value(*found)});
    }
    return true;
  }

  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception&) {
    d_.error(std::string(field_), "not valid JSON (at byte " + std::to_string(position) + ")");
    failed_ = true;
    return false;
  }

 private:
  struct Level {
    json* container;
    std::string key;  // the key being read, for objects
  };
  struct Duplicate {
    std::size_t depth;  // levels_.size() of the object holding the key
    std::string first;
  };

  // The path of the value being read: in an open array above it, the element is its last one;
  // in the innermost array, the next one.
  std::string path() const {
    std::string out(field_);
    for (std::size_t i = 0; i < levels_.size(); ++i) {
      const json& container = *levels_[i].container;
      if (container.is_object()) {
        out += "." + shown_key(levels_[i].key);
      } else {
        const std::size_t inner = i + 1 < levels_.size() ? 1 : 0;
        out += "[" + std::to_string(container.size() - inner) + "]";
      }
    }
    return out;
  }

  // Where the next value goes, or null for the root.
  json* slot() {
    if (levels_.empty()) return &root_;
    Level& level = levels_.back();
    if (level.container->is_array()) {
      level.container->push_back(nullptr);
      return &level.container->back();
    }
    return &(*level.container)[level.key];
  }

  // Called once a value (scalar or closed container) at depth levels_.size() is complete.
  void completed(const json& v) {
    if (duplicates_.empty() || duplicates_.back().depth != levels_.size()) return;
    const Duplicate dup = std::move(duplicates_.back());
    duplicates_.pop_back();
    failed_ = true;
    if (++duplicate_errors_ > max_duplicate_errors) return;
    d_.error(path(), "the key is given twice, first " + dup.first + ", then " + shown_value(v) +
                         "; give each key once");
  }

  bool value(json&& v) {
    completed(v);  // before it is stored: an array element's index is the array's size so far
    *slot() = std::move(v);
    return true;
  }

  bool open(json&& container) {
    if (static_cast<int>(levels_.size()) >= limits_.max_depth) {
      d_.error(path(), "nests deeper than the limit of " + std::to_string(limits_.max_depth) +
                           " levels of objects and arrays");
      failed_ = true;
      return false;  // stops the parse: nothing deeper is read
    }
    json* target = slot();
    *target = std::move(container);
    levels_.push_back({target, {}});
    return true;
  }

  bool close() {
    const json* done = levels_.back().container;
    levels_.pop_back();
    completed(*done);
    return true;
  }

  const JsonLimits& limits_;
  std::string_view field_;
  Diagnostics& d_;
  json root_;
  std::vector<Level> levels_;
  std::vector<Duplicate> duplicates_;
  std::size_t duplicate_errors_ = 0;
  bool failed_ = false;
};

}  // namespace

std::optional<json> parse_json_bounded(std::string_view text, const JsonLimits& limits,
                                       std::string_view field, Diagnostics& d) {
  if (text.size() > limits.max_bytes) {
    d.error(std::string(field), "the document is " + std::to_string(text.size()) +
                                    " bytes; at most " + std::to_string(limits.max_bytes) +
                                    " are read");
    return std::nullopt;
  }
  const std::size_t errors_before = d.errors.size();
  BoundedBuilder builder(limits, field, d);
  const bool parsed = json::sax_parse(text.begin(), text.end(), &builder);
  if (!parsed || builder.failed()) {
    if (d.errors.size() == errors_before) d.error(std::string(field), "not valid JSON");
    return std::nullopt;
  }
  return builder.take();
}

}  // namespace stagemem
