// table.h — one table type and its three writers: every table stagemem prints, as a Markdown
// (GFM) table, as aligned plain text or as CSV, is a Table written by one of these.
//
// Purpose: the report's stage and term tables, `check`, `sweep`, `plan` and `layout` (CLI) and
// the app's Copy as Markdown build rows of cells and hand them here, so a table rule, an escape
// or an alignment is decided once. A cell holds finished text (vocabulary.h spells it); a column
// says how it is aligned and what its cells are:
//   text    a name, a range, a sentence, a value as typed: escaped for its format
//           (markdown_cell / csv_field, text_escaping.h), so it can never change the structure;
//   number  a number stagemem computed: written as it is in CSV, so -5 stays the number -5
//           (csv_field would make it the text '-5); still escaped in Markdown, where it is inert;
//   code    text shown as a Markdown code span (a link, command-line arguments): shown
//           literally, so only '|' (for the table), '`' (becomes ') and line breaks (become
//           spaces) are changed; text in CSV.
// Units: none (cells are text); widths count bytes, so plain text aligns ASCII exactly.
// Limitations: plain-text alignment counts bytes, not display columns (a multi-byte character
// pushes its row one column right); a row with fewer cells than columns is padded with "".
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace stagemem {

enum class Align : std::uint8_t { left, right };
enum class CellKind : std::uint8_t { text, number, code };

struct TableColumn {
  std::string header{};
  Align align = Align::left;
  CellKind kind = CellKind::text;
};

struct Table {
  std::vector<TableColumn> columns{};
  std::vector<std::vector<std::string>> rows{};  // cells in column order
};

// "| a | b |\n| --- | ---: |\n| x | 1 |\n": every cell escaped by markdown_cell but a code cell,
// "`...`" (nothing when the cell is empty); a right-aligned column's rule is "---:".
std::string markdown_table(const Table& table);
// Header and rows, each column as wide as its widest cell, columns two spaces apart; a left-
// aligned last column is not padded and no line ends in a space.
std::string text_table(const Table& table);
// RFC 4180: the header line, then one line per row; text and code cells through csv_field,
// number cells as they are.
std::string csv_table(const Table& table);

}  // namespace stagemem
