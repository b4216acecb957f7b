// Tests of text_escaping.h: CSV text cells (RFC 4180 quoting, formula-injection prefixes) and
// Markdown table cells (pipes, backslashes, inline Markdown, HTML-significant characters, line
// breaks), with worked examples and properties over a hostile alphabet.
#include <random>
#include <string>
#include <vector>

#include "base/text_escaping.h"
#include "catch.h"

using namespace stagemem;

namespace {

// Reads one RFC 4180 field back (the whole string is one field); false if it is malformed.
bool read_csv_field(const std::string& field, std::string& out) {
  out.clear();
  if (field.empty() || field[0] != '"') {
    if (field.find_first_of(",\"\n\r") != std::string::npos) return false;
    out = field;
    return true;
  }
  if (field.size() < 2 || field.back() != '"') return false;
  for (std::size_t i = 1; i + 1 < field.size(); ++i) {
    if (field[i] == '"') {
      if (i + 2 >= field.size() || field[i + 1] != '"') return false;  // a lone quote inside
      ++i;
    }
    out += field[i];
  }
  return true;
}

}  // namespace

TEST_CASE("CSV: plain text passes unchanged - separators and quotes are quoted") {
  CHECK(csv_field("weights (bf16)") == "weights (bf16)");
  CHECK(csv_field("0-7") == "0-7");
  CHECK(csv_field("") == "");
  CHECK(csv_field("-") == "-");  // the tables' "none" placeholder
  CHECK(csv_field("a,b") == "\"a,b\"");
  CHECK(csv_field("say \"hi\"") == "\"say \"\"hi\"\"\"");
  CHECK(csv_field("two\nlines") == "\"two\nlines\"");
}

TEST_CASE("CSV: a text cell that a spreadsheet would run as a formula gets an apostrophe") {
  // The four prefixes, tab and CR, also after leading spaces: quoted, apostrophe first.
  CHECK(csv_field("=cmd|' /C calc'!A0") == "\"'=cmd|' /C calc'!A0\"");
  CHECK(csv_field("+1+1") == "\"'+1+1\"");
  CHECK(csv_field("-2+3") == "\"'-2+3\"");
  CHECK(csv_field("@SUM(A1)") == "\"'@SUM(A1)\"");
  CHECK(csv_field("\t=1") == "\"'\t=1\"");
  CHECK(csv_field("\r=1") == "\"'\r=1\"");
  CHECK(csv_field("  =1") == "\"'  =1\"");
  // Inside the text they are harmless.
  CHECK(csv_field("a=b") == "a=b");
  CHECK(csv_field("x@host") == "x@host");
  // Quotes still doubled after the apostrophe.
  CHECK(csv_field("=\"x\"") == "\"'=\"\"x\"\"\"");
}

TEST_CASE("Markdown: the worked hostile cells") {
  CHECK(markdown_cell("weights (bf16)") == "weights (bf16)");
  CHECK(markdown_cell("a|b") == "a\\|b");
  // A backslash before a pipe would otherwise escape our escape and end the cell.
  CHECK(markdown_cell("a\\|b") == "a\\\\\\|b");
  CHECK(markdown_cell("<img src=x onerror=alert(1)>") == "&lt;img src=x onerror=alert(1)&gt;");
  CHECK(markdown_cell("R&D \"q\" 'p'") == "R&amp;D &quot;q&quot; &#39;p&#39;");
  CHECK(markdown_cell("&lt;") == "&amp;lt;");  // an entity the user typed is shown, not decoded
  CHECK(markdown_cell("row\nnext") == "row<br>next");
  CHECK(markdown_cell("row\r\nnext\rlast") == "row<br>next<br>last");
  CHECK(markdown_cell("[x](javascript:alert(1))") == "\\[x\\](javascript:alert(1))");
  CHECK(markdown_cell("`code` *b* _i_") == "\\`code\\` \\*b\\* \\_i\\_");
}

TEST_CASE("Properties over random hostile text: nothing structural survives") {
  // An alphabet of every character either format treats specially, plus letters.
  const std::string alphabet = "|\\`*_[]<>&\"',\n\r\t=+-@ aZ0;:/()!#%";
  std::mt19937 random(20261201);  // fixed seed: a failure replays
  for (int n = 0; n < 20000; ++n) {
    std::string text;
    const int length = static_cast<int>(random() % 24);
    for (int i = 0; i < length; ++i) text += alphabet[random() % alphabet.size()];
    INFO("case " << n << ": '" << text << "'");

    // Markdown: no raw HTML-significant character, no line break, and every '|' is preceded by
    // an odd number of backslashes (so it is escaped).
    const std::string md = markdown_cell(text);
    CHECK(md.find_first_of("<>\"'\n\r") == md.find("<br>"));
    std::string without_breaks = md;
    for (auto at = without_breaks.find("<br>"); at != std::string::npos;
         at = without_breaks.find("<br>"))
      without_breaks.erase(at, 4);
    CHECK(without_breaks.find_first_of("<>\"'\n\r") == std::string::npos);
    for (std::size_t i = 0; i < md.size(); ++i) {
      if (md[i] != '|') continue;
      std::size_t slashes = 0;
      while (slashes < i && md[i - 1 - slashes] == '\\') ++slashes;
      CHECK(slashes % 2 == 1);
    }
    // An '&' is always the start of one of our entities.
    for (auto at = md.find('&'); at != std::string::npos; at = md.find('&', at + 1)) {
      const std::string tail = md.substr(at, 6);
      CHECK((tail.starts_with("&amp;") || tail.starts_with("&lt;") || tail.starts_with("&gt;") ||
             tail.starts_with("&quot;") || tail.starts_with("&#39;")));
    }

    // CSV: the field reads back (RFC 4180) to the text, with one apostrophe in front exactly
    // when the text starts a formula; the value a spreadsheet sees never starts a formula.
    const std::string csv = csv_field(text);
    std::string back;
    REQUIRE(read_csv_field(csv, back));
    const auto first = back.find_first_not_of(' ');
    if (first != std::string::npos && back != "-") {
      CHECK(std::string("=+-@\t\r").find(back[first]) == std::string::npos);
    }
    CHECK((back == text || back == "'" + text));
  }
}
