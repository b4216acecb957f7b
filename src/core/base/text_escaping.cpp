#include "base/text_escaping.h"

namespace stagemem {
namespace {

// What Excel, LibreOffice and Google Sheets start a formula with (tab and CR too: some
// importers drop them and read what follows).
// A lone "-" (the tables' placeholder for "none") is no formula and stays as it is.
bool starts_formula(std::string_view text) {
  if (text == "-") return false;
  const auto first = text.find_first_not_of(' ');
  if (first == std::string_view::npos) return false;
  const char c = text[first];
  return c == '=' || c == '+' || c == '-' || c == '@' || c == '\t' || c == '\r';
}

}  // namespace

std::string csv_field(std::string_view text) {
  const bool formula = starts_formula(text);
  if (!formula && text.find_first_of(",\"\n\r") == std::string_view::npos) return std::string(text);
  std::string out = formula ? "\"'" : "\"";
  for (char ch : text) {
    if (ch == '"') out += '"';
    out += ch;
  }
  return out + "\"";
}

std::string markdown_cell(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char ch = text[i];
    switch (ch) {
      case '|':
      case '\\':
      case '`':
      case '*':
      case '_':
      case '[':
      case ']':
        out += '\\';
        out += ch;
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '&':
        out += "&amp;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      case '\r':
        if (i + 1 < text.size() && text[i + 1] == '\n') ++i;  // CRLF is one break
        out += "<br>";
        break;
      case '\n':
        out += "<br>";
        break;
      default:
        out += ch;
    }
  }
  return out;
}

}  // namespace stagemem
