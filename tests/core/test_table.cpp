// Tests of table.h: one table, written as Markdown, aligned plain text and CSV.
#include <string>

#include "catch.h"
#include "render/table.h"

using namespace stagemem;

namespace {

// Two stages as `stagemem check` shows them: a right-aligned number column and text.
Table two_stages() {
  return Table{.columns = {{"stage", Align::right, CellKind::number},
                           {"layers"},
                           {"headroom GiB", Align::right, CellKind::number},
                           {"fits"}},
               .rows = {{"0", "0-7,16-23", "-15.90", "no"}, {"10", "8-15", "1.41", "yes"}}};
}

}  // namespace

TEST_CASE("Table: Markdown rule follows the alignment, cells are escaped") {
  CHECK(markdown_table(two_stages()) ==
        "| stage | layers | headroom GiB | fits |\n"
        "| ---: | --- | ---: | --- |\n"
        "| 0 | 0-7,16-23 | -15.90 | no |\n"
        "| 10 | 8-15 | 1.41 | yes |\n");
  // Text a user typed can neither end a cell nor become HTML or emphasis (markdown_cell).
  const Table hostile{.columns = {{"name_x"}}, .rows = {{"a|b <i>c</i> *d*"}}};
  CHECK(markdown_table(hostile) ==
        "| name\\_x |\n| --- |\n| a\\|b &lt;i&gt;c&lt;/i&gt; \\*d\\* |\n");
}

TEST_CASE("Table: a code cell is a code span, shown literally") {
  // Inside a code span an entity or a backslash escape would be shown as typed, so only what
  // would break the span or the table changes: '|' (escaped for the table), '`' and breaks.
  const Table t{.columns = {{"link", Align::left, CellKind::code}},
                .rows = {{"#v=1&tp=2&layout=E|t*4`x\ny"}, {""}}};
  CHECK(markdown_table(t) == "| link |\n| --- |\n| `#v=1&tp=2&layout=E\\|t*4'x y` |\n|  |\n");
}

TEST_CASE("Table: plain text pads to the widest cell, two spaces apart, no trailing space") {
  // Widths: stage 5 ("stage"), layers 9 ("0-7,16-23"), headroom GiB 12, fits 4.
  CHECK(text_table(two_stages()) ==
        "stage  layers     headroom GiB  fits\n"
        "    0  0-7,16-23        -15.90  no\n"
        "   10  8-15               1.41  yes\n");
  // A missing cell is empty; a left-aligned last column is not padded.
  const Table ragged{.columns = {{"a"}, {"b"}, {"c"}}, .rows = {{"xx"}, {"1", "2", "3"}}};
  CHECK(text_table(ragged) == "a   b  c\nxx\n1   2  3\n");
}

TEST_CASE("Table: CSV writes numbers as numbers and escapes text") {
  // -15.90 is a number (not the text '-15.90 that a formula guard would make of it); a text
  // cell with a comma is quoted, one starting with '=' is guarded against formulas (a lone "-",
  // the tables' "none", stays).
  CHECK(csv_table(two_stages()) ==
        "stage,layers,headroom GiB,fits\n0,\"0-7,16-23\",-15.90,no\n10,8-15,1.41,yes\n");
  const Table text{.columns = {{"name"}, {"bytes", Align::left, CellKind::number}},
                   .rows = {{"=cmd|' /c calc'!A1", "-5"}, {"-", "0"}, {"a \"b\"", "1"}}};
  CHECK(csv_table(text) == "name,bytes\n\"'=cmd|' /c calc'!A1\",-5\n-,0\n\"a \"\"b\"\"\",1\n");
}
