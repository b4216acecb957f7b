// share.h — the texts the app shares of the report on screen, built only when asked for (a
// toolbar button, a page call): the core's writers over the last valid report and its
// configuration, with the link that reproduces it.
#pragma once

#include <string>

struct AppState;
class Platform;

// What "Copy as Markdown" copies (and Module.getMarkdownTable returns): report_markdown.h's text
// (the same as `stagemem report --format markdown`) with the page's own link.
std::string markdown_text(const AppState& state, const Platform& platform);
// What "Copy as Markdown" copies: with a baseline pinned, the comparison (render/comparison.h
// comparison_markdown, the same as `stagemem diff --format markdown`) with the link of the
// comparison and of each side; else markdown_text.
std::string copied_markdown(const AppState& state, const Platform& platform);
// What "Download JSON" saves (and Module.getReportJson returns): report_json.h's document.
std::string report_json_text(const AppState& state);
