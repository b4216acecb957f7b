// What "Copy as Markdown" copies (and Module.getMarkdownTable returns): the core's wiki writer
// (report_markdown.h, the same text as `stagemem report --format markdown`) over the report on
// screen, with the page's own link to it.
#include "app.h"
#include "config/url_fragment.h"
#include "render/report_markdown.h"

std::string markdown_text(const AppState& state) {
  const stagemem::MarkdownOptions options{
      .link = platform_link(state, stagemem::encode_fragment(state.reported_config)),
      .terms = false};
  return stagemem::report_markdown(state.report, state.reported_config, options);
}
