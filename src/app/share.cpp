#include "share.h"

#include "config/url_fragment.h"
#include "estimate/compare.h"
#include "link.h"
#include "platform.h"
#include "render/comparison.h"
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

std::string copied_markdown(const AppState& state, const Platform& platform) {
  const BaselineState& b = state.baseline;
  if (!b.pinned || !state.report_valid) return markdown_text(state, platform);
  const stagemem::Comparison comparison = stagemem::compare_reports(b.report, state.report);
  if (!comparison.diagnostics.ok()) return markdown_text(state, platform);
  const std::string b_fragment = stagemem::encode_fragment(state.reported_config);
  const stagemem::ComparisonMarkdownOptions options{
      .a_link = platform.link(stagemem::encode_fragment(b.config)),
      .b_link = platform.link(b_fragment),
      .comparison_link = platform.link(b_fragment + view_fragment(state)),
      .all_stages = false};
  return stagemem::comparison_markdown({.a_config = b.config,
                                        .a = b.report,
                                        .b_config = state.reported_config,
                                        .b = state.report,
                                        .comparison = comparison,
                                        .unit = state.display.unit},
                                       options);
}
