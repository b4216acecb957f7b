#include "render/table.h"

#include <algorithm>
#include <string_view>

#include "base/text_escaping.h"

namespace stagemem {
namespace {

// A missing cell reads as "".
std::string_view cell_at(const std::vector<std::string>& row, std::size_t c) {
  return c < row.size() ? std::string_view(row[c]) : std::string_view();
}

// A code span's text is shown literally (no entity, no escape but the table's "\|"), so it is
// not markdown_cell's: '|' is escaped for the table, a backquote (which would end the span)
// becomes ' and a line break (which would end the row) a space.
std::string code_span(std::string_view text) {
  std::string out = "`";
  for (const char c : text) {
    if (c == '|') {
      out += "\\|";
    } else if (c == '`') {
      out += '\'';
    } else if (c == '\n' || c == '\r') {
      out += ' ';
    } else {
      out += c;
    }
  }
  return out + '`';
}

std::string markdown_line(const std::vector<std::string>& cells) {
  std::string out = "|";
  for (const std::string& cell : cells) out += ' ' + cell + " |";
  return out + '\n';
}

}  // namespace

std::string markdown_table(const Table& table) {
  std::vector<std::string> header, rule;
  for (const TableColumn& column : table.columns) {
    header.push_back(markdown_cell(column.header));
    rule.push_back(column.align == Align::right ? "---:" : "---");
  }
  std::string out = markdown_line(header) + markdown_line(rule);
  std::vector<std::string> cells(table.columns.size());
  for (const auto& row : table.rows) {
    for (std::size_t c = 0; c < table.columns.size(); ++c) {
      const std::string_view cell = cell_at(row, c);
      const bool code = table.columns[c].kind == CellKind::code && !cell.empty();
      cells[c] = code ? code_span(cell) : markdown_cell(cell);
    }
    out += markdown_line(cells);
  }
  return out;
}

std::string text_table(const Table& table) {
  const std::size_t n = table.columns.size();
  std::vector<std::size_t> widths(n, 0);
  for (std::size_t c = 0; c < n; ++c) {
    widths[c] = table.columns[c].header.size();
    for (const auto& row : table.rows) widths[c] = std::max(widths[c], cell_at(row, c).size());
  }
  const auto line = [&](const auto& cell_of) {
    std::string out;
    for (std::size_t c = 0; c < n; ++c) {
      const std::string_view cell = cell_of(c);
      const std::string pad(widths[c] - cell.size(), ' ');
      if (c > 0) out += "  ";
      if (table.columns[c].align == Align::right) out += pad;
      out += cell;
      if (table.columns[c].align == Align::left) out += pad;
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out + '\n';
  };
  std::string out = line([&](std::size_t c) { return std::string_view(table.columns[c].header); });
  for (const auto& row : table.rows) out += line([&](std::size_t c) { return cell_at(row, c); });
  return out;
}

std::string csv_table(const Table& table) {
  std::string out;
  for (std::size_t c = 0; c < table.columns.size(); ++c) {
    out += (c > 0 ? "," : "") + csv_field(table.columns[c].header);
  }
  out += '\n';
  for (const auto& row : table.rows) {
    for (std::size_t c = 0; c < table.columns.size(); ++c) {
      const std::string_view cell = cell_at(row, c);
      if (c > 0) out += ',';
      if (table.columns[c].kind == CellKind::number) {
        out += cell;
      } else {
        out += csv_field(cell);
      }
    }
    out += '\n';
  }
  return out;
}

}  // namespace stagemem
