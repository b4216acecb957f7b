#include "parallel/pipeline_layout_string.h"

#include <string>

namespace stagemem {
namespace {

bool is_item(char c) {
  return c == 'E' || c == 't' || c == 'm' || c == 'L' || c == '|';
}
bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

std::string describe(char c) {
  if (c >= 0x21 && c <= 0x7e) return std::string("'") + c + "'";
  return "byte " + std::to_string(static_cast<int>(static_cast<unsigned char>(c)));
}

class Parser {
 public:
  Parser(std::string_view text, Diagnostics& d, std::string_view field)
      : text_(text), d_(d), field_(field) {}

  std::optional<std::string> expand() {
    std::string out;
    while (position_ < text_.size()) {
      const char c = text_[position_];
      if (c == ',') {
        ++position_;
      } else if (c == '(') {
        std::string body;
        if (!group(body)) return std::nullopt;
        if (!repeat_into(out, body, /*required=*/true)) return std::nullopt;
      } else if (is_item(c)) {
        ++position_;
        if (!repeat_into(out, std::string(1, c), /*required=*/false)) return std::nullopt;
      } else if (c == ')') {
        return fail("')' at position " + std::to_string(position_) + " closes no group");
      } else if (c == '*') {
        return fail("'*' at position " + std::to_string(position_) +
                    " must follow a layer letter, '|' or a parenthesised group");
      } else {
        return fail("invalid character " + describe(c) + " at position " +
                    std::to_string(position_) + "; expected E, t, m, L, |, (, ), *N or ','");
      }
    }
    return out;
  }

 private:
  // Reads "(...)" into body (inner repetitions expanded); position_ ends after ')'.
  bool group(std::string& body) {
    const std::size_t open = position_++;
    while (position_ < text_.size() && text_[position_] != ')') {
      const char c = text_[position_];
      if (c == ',') {
        ++position_;
      } else if (c == '(') {
        fail("nested '(' at position " + std::to_string(position_) +
             ": Megatron's layout syntax has no nested groups");
        return false;
      } else if (is_item(c)) {
        ++position_;
        if (!repeat_into(body, std::string(1, c), /*required=*/false)) return false;
      } else if (c == '*') {
        fail("'*' at position " + std::to_string(position_) + " must follow a layer letter or '|'");
        return false;
      } else {
        fail("invalid character " + describe(c) + " at position " + std::to_string(position_) +
             "; expected E, t, m, L, |, *N or ','");
        return false;
      }
    }
    if (position_ >= text_.size()) {
      fail("'(' at position " + std::to_string(open) + " is never closed");
      return false;
    }
    if (position_ == open + 1) {
      fail("empty group '()' at position " + std::to_string(open));
      return false;
    }
    ++position_;  // ')'
    return true;
  }

  // Appends `unit` once, or N times when "*N" follows. A group must be followed by "*N".
  bool repeat_into(std::string& out, const std::string& unit, bool required) {
    std::int64_t count = 1;
    if (position_ < text_.size() && text_[position_] == '*') {
      const std::size_t star = position_++;
      const std::size_t digits_start = position_;
      count = 0;
      while (position_ < text_.size() && is_digit(text_[position_])) {
        count = count * 10 + (text_[position_] - '0');
        if (count > max_layout_entries) {
          fail("repetition count at position " + std::to_string(digits_start) + " exceeds " +
               std::to_string(max_layout_entries));
          return false;
        }
        ++position_;
      }
      if (position_ == digits_start) {
        fail("'*' at position " + std::to_string(star) + " must be followed by a count (digits)");
        return false;
      }
      if (position_ < text_.size() && text_[position_] == '*') {
        fail("second repetition '*' at position " + std::to_string(position_) +
             "; wrap the repeated part in parentheses instead");
        return false;
      }
    } else if (required) {
      fail("a group must be followed by '*N' (at position " + std::to_string(position_) + ")");
      return false;
    }
    const auto unit_size = static_cast<std::int64_t>(unit.size());
    if (static_cast<std::int64_t>(out.size()) + count * unit_size > max_layout_entries) {
      fail("the layout expands to more than " + std::to_string(max_layout_entries) +
           " entries (at position " + std::to_string(position_) + ")");
      return false;
    }
    for (std::int64_t i = 0; i < count; ++i) out += unit;
    return true;
  }

  std::nullopt_t fail(std::string message) {
    d_.error(std::string(field_), std::move(message));
    return std::nullopt;
  }

  std::string_view text_;
  Diagnostics& d_;
  std::string_view field_;
  std::size_t position_ = 0;
};

}  // namespace

std::optional<ParsedPipelineLayout> parse_pipeline_layout_string(std::string_view text,
                                                                 Diagnostics& diagnostics,
                                                                 std::string_view field) {
  if (text.empty()) {
    diagnostics.error(std::string(field),
                      "the layout string is empty; expected e.g. 'Et*3|t*4|t*3L'");
    return std::nullopt;
  }
  if (static_cast<std::int64_t>(text.size()) > max_layout_entries) {
    diagnostics.error(std::string(field), "the layout string is longer than " +
                                              std::to_string(max_layout_entries) + " characters");
    return std::nullopt;
  }
  Parser parser(text, diagnostics, field);
  const std::optional<std::string> expanded = parser.expand();
  if (!expanded) return std::nullopt;
  ParsedPipelineLayout parsed;
  std::vector<LayoutStageEntry>& stages = parsed.stages;
  stages.emplace_back();
  char first_letter = 0, last_letter = 0;
  bool seen_mtp = false;
  for (const char c : *expanded) {
    if (c != '|') {
      if (first_letter == 0) first_letter = c;
      last_letter = c;
    }
    if (c == 'm') seen_mtp = true;
    if (c == 't' && seen_mtp) parsed.decoder_after_mtp = true;
    switch (c) {
      case '|':
        stages.emplace_back();
        break;
      case 'E':
        stages.back().embedding += 1;
        break;
      case 't':
        stages.back().decoder += 1;
        break;
      case 'm':
        stages.back().mtp += 1;
        break;
      case 'L':
        stages.back().loss += 1;
        break;
      default:
        break;
    }
  }
  parsed.starts_with_embedding = first_letter == 'E';
  parsed.ends_with_loss = last_letter == 'L';
  return parsed;
}

}  // namespace stagemem
