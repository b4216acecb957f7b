// text_escaping.h — how every front end writes a value into a CSV field or a Markdown table cell.
//
// Purpose: one escaping rule per format, shared by the CLI and the app (pure text in, text out),
// so text that came from a user (a measurement's source, a gap's source, an error quoting what
// was typed) can never change the structure of the output or be run by whatever opens it.
//
// The rule for tables: a column holds either numbers that stagemem computed (bytes, GiB, stage
// indices; written as numbers, never through these functions, so -5 stays the number -5) or
// text (names, formulas, sources, layer ranges, values as the user typed them, errors), and
// every text cell goes through csv_field or markdown_cell.
//
// Limitations: Markdown has no single standard; markdown_cell targets CommonMark/GFM tables as
// rendered by GitHub, GitLab and wikis that pass inline HTML through (the dangerous case).
#pragma once

#include <string>
#include <string_view>

namespace stagemem {

// A CSV text cell (RFC 4180): quoted, with quotes doubled, when it holds a comma, a quote or a
// line break. A cell that a spreadsheet would read as a formula — first character, after any
// spaces, one of = + - @ or a tab or carriage return — gets a leading apostrophe (and quotes),
// so "=cmd|'/c calc'!A1" is shown as text instead of run ("formula injection"). A lone "-"
// (the tables' placeholder for "none") stays as it is.
std::string csv_field(std::string_view text);

// A Markdown table cell: '|' (which would end the cell) and '\' (which would escape the
// next character, e.g. a following '|') are backslash-escaped; the inline-Markdown characters
// ` * _ [ ] are backslash-escaped so a value cannot add emphasis, code spans or links; the
// HTML-significant characters < > & " ' become entities, so "<img src=x onerror=...>" is text,
// not an element; a line break (which would end the row) becomes "<br>".
std::string markdown_cell(std::string_view text);

}  // namespace stagemem
