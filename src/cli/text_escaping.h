// text_escaping.h — how the CLI writes a value into a CSV field or a Markdown table cell.
#pragma once

#include <string>

// RFC 4180: quoted (with quotes doubled) only when it holds a comma, a quote or a line break.
std::string csv_field(const std::string& text);
// A '|' would end the cell: escaped as "\|" (GitHub/GitLab Markdown, wiki tables).
std::string markdown_cell(const std::string& text);
