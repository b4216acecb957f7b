// What "Copy as Markdown" copies (and Module.getMarkdownTable returns): the core's wiki writer
// (report_markdown.h, the same text as `stagemem report --format markdown`) over the report on
// screen, with the page's own link to it.
#include "app.h"
#include "report_markdown.h"
#include "url_fragment.h"

std::string markdown_text(const AppState& state) {
  const stagemem::MarkdownOptions options{
      .link = platform_link(state, stagemem::encode_fragment(state.reported_config)),
      .terms = false};
  return stagemem::report_markdown(state.report, state.reported_config, options);
}
