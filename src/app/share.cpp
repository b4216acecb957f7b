#include "share.h"

#include "config/url_fragment.h"
#include "platform.h"
#include "render/report_json.h"
#include "render/report_markdown.h"
#include "state.h"

std::string markdown_text(const AppState& state, const Platform& platform) {
  const stagemem::MarkdownOptions options{
      .link = platform.link(stagemem::encode_fragment(state.reported_config)),
      .terms = false,
      .unit = state.display.unit};
  return stagemem::report_markdown(state.report, state.reported_config, options);
}

std::string report_json_text(const AppState& state) {
  return stagemem::report_json(state.report, state.reported_config,
                               "#" + stagemem::encode_fragment(state.reported_config), {});
}
