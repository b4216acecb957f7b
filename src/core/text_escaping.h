// text_escaping.h — how every front end writes a value into a CSV field or a Markdown table cell.
//
// Purpose: one escaping rule per format, shared by the CLI and the app (pure text in, text out).
// Limitations: see each function.
#pragma once

#include <string>

namespace stagemem {

// RFC 4180: quoted (with quotes doubled) only when it holds a comma, a quote or a line break.
std::string csv_field(const std::string& text);
// A '|' would end the cell: escaped as "\|" (GitHub/GitLab Markdown, wiki tables).
std::string markdown_cell(const std::string& text);

}  // namespace stagemem
