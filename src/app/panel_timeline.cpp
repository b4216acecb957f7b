// The timeline panel: one stage's memory over one training step (timeline.h), pass by pass in
// the schedule's order: every forward and backward of every micro-batch on every virtual chunk,
// then the optimizer step. Each pass is a column stacked by family (resident, measured gaps,
// stored activations, transients); the peak moment is marked and named. Hovering a column shows
// its event, its bytes by family and the terms alive then. The timeline is rebuilt by the frame's
// refresh only when the report or the chosen stage changes (AppState::timeline).
// A loaded allocator snapshot of the same stage (AppState::snapshot) is drawn over it: its
// replayed live-bytes curve in its own colour, with its peak event marked and compared with the
// derived peak. The x axes differ in kind (allocator events vs schedule passes); both are spread
// over the chart's width and the chart says so. The y axis is shared unless the measured peak is
// under 5% of it (a proxy run on a production configuration): then the curve gets its own bytes
// axis on the right, labelled as such.
#include <algorithm>
#include <string>
#include <vector>

#include "actions.h"
#include "base/units.h"
#include "imgui.h"
#include "measured/snapshot.h"
#include "memory/timeline.h"
#include "render/term_text.h"
#include "render/vocabulary.h"
#include "state.h"
#include "widgets.h"

namespace {

// Family order of TimelineEvent::live_by_family, drawn bottom to top in this order.
constexpr stagemem::Family stack_order[] = {stagemem::Family::resident, stagemem::Family::gap,
                                            stagemem::Family::activation,
                                            stagemem::Family::transient};
constexpr ImU32 family_colours[] = {
    IM_COL32(90, 130, 200, 255),   // resident
    IM_COL32(240, 170, 70, 255),   // activation
    IM_COL32(220, 90, 160, 255),   // transient
    IM_COL32(150, 150, 150, 255),  // gap
};
constexpr ImU32 peak_colour = IM_COL32(255, 80, 70, 255);
constexpr ImU32 capacity_colour = IM_COL32(235, 90, 80, 160);
constexpr ImU32 axis_colour = IM_COL32(170, 172, 180, 255);
constexpr ImU32 measured_colour = IM_COL32(90, 230, 140, 255);
// Below this share of the derived axis the measured curve gets its own axis (it would be flat).
constexpr double own_scale_share = 0.05;
constexpr float chart_height_px = 300.0f;

// A measured level in a unit that suits it (test proxies are MiB, real runs GiB; MB and GB when
// the page shows decimal units).
std::string short_amount(std::int64_t bytes, stagemem::AmountUnit unit) {
  return stagemem::compact_amount_text(bytes, unit);
}

ImU32 colour_of(stagemem::Family f) {
  return family_colours[static_cast<std::size_t>(f)];
}

// Terms listed in an event's tooltip, the largest first; the rest are summed in one line so the
// tooltip stays inside the window.
constexpr std::size_t tooltip_terms = 12;

// Is term `i` of the stage alive at event `e`? Stored activations are itemised at the peak only.
bool term_live_at(const stagemem::StageTimeline& t, std::int64_t e, const stagemem::Term& term,
                  std::size_t i) {
  const stagemem::TimelineEvent& ev = t.events[static_cast<std::size_t>(e)];
  if (term.family == stagemem::Family::resident || term.family == stagemem::Family::gap) {
    return term.bytes > 0;
  }
  if (term.family == stagemem::Family::activation) {
    return ev.phase != stagemem::StepPhase::optimizer_step && e == t.peak_event;
  }
  if (ev.phase == stagemem::StepPhase::optimizer_step) {
    return term.allocated_at == stagemem::AllocationPoint::optimizer_step;
  }
  return static_cast<std::int64_t>(i) == ev.transient ||
         static_cast<std::int64_t>(i) == ev.enclosing;
}

// The event's live bytes, in total and by family, in the monospaced font.
void event_bytes_lines(const AppState& state, const stagemem::TimelineEvent& ev) {
  ImGui::PushFont(state.mono_font);
  const stagemem::AmountUnit unit = state.display.unit;
  ImGui::Text("live       %s", stagemem::amount_text(ev.live_bytes, unit).c_str());
  for (const stagemem::Family f : stack_order) {
    ImGui::Text(
        "%-10s %s", std::string(stagemem::family_name(f)).c_str(),
        stagemem::amount_text(ev.live_by_family[static_cast<std::size_t>(f)], unit).c_str());
  }
  ImGui::PopFont();
}

// How many micro-batches' stored activations each chunk holds at a pass (none at the optimizer).
void alive_line(const stagemem::StageTimeline& t, std::int64_t e) {
  if (t.events[static_cast<std::size_t>(e)].phase == stagemem::StepPhase::optimizer_step) return;
  std::string alive;
  for (std::int64_t c = 0; c < t.chunks; ++c) {
    alive +=
        (c == 0 ? "" : ", ") + std::to_string(t.alive[static_cast<std::size_t>(e * t.chunks + c)]);
  }
  ImGui::Text("stored activations of the micro-batches alive per chunk: %s", alive.c_str());
}

// The terms alive at event `e`, the largest first: the first tooltip_terms by name, the rest
// summed.
void live_term_lines(const stagemem::StageReport& stage, const stagemem::StageTimeline& t,
                     std::int64_t e, stagemem::AmountUnit unit) {
  const auto& terms = stage.terms;
  std::vector<std::size_t> live_terms;
  for (std::size_t i = 0; i < terms.size(); ++i) {
    if (term_live_at(t, e, terms[i], i)) live_terms.push_back(i);
  }
  std::stable_sort(live_terms.begin(), live_terms.end(),
                   [&](std::size_t a, std::size_t b) { return terms[a].bytes > terms[b].bytes; });
  ImGui::Text("live terms (%zu), the largest first:", live_terms.size());
  std::int64_t rest_bytes = 0;
  for (std::size_t k = 0; k < live_terms.size(); ++k) {
    const stagemem::Term& term = terms[live_terms[k]];
    if (k >= tooltip_terms) {
      rest_bytes += term.bytes;  // each fits in int64 and so does the event's sum of them
      continue;
    }
    ImGui::Bullet();
    ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(colour_of(term.family)), "%s  %s",
                       stagemem::amount_text(term.bytes, unit).c_str(),
                       stagemem::term_name(term).c_str());
  }
  if (live_terms.size() > tooltip_terms) {
    ImGui::TextDisabled("... and %zu more terms, %s (the Stages tab lists them all)",
                        live_terms.size() - tooltip_terms,
                        stagemem::amount_text(rest_bytes, unit).c_str());
  }
}

// What is alive at event `e`, as tooltip lines.
void event_tooltip(const AppState& state, const TimelineView& view,
                   const stagemem::StageReport& stage, std::int64_t e) {
  const stagemem::StageTimeline& t = state.timeline.timeline;
  const stagemem::TimelineEvent& ev = t.events[static_cast<std::size_t>(e)];
  // Long term names wrap at a width that fits beside the cursor on either side.
  ImGui::PushTextWrapPos(
      std::min(ImGui::GetFontSize() * 34.0f, ImGui::GetIO().DisplaySize.x * 0.45f));
  ImGui::TextUnformatted(view.hovered_name.c_str());
  if (e == t.peak_event) ImGui::TextColored(ImVec4(1.0f, 0.4f, 0.35f, 1.0f), "the stage's peak");
  ImGui::Separator();
  event_bytes_lines(state, ev);
  ImGui::Separator();
  alive_line(t, e);
  live_term_lines(stage, t, e, state.display.unit);
  if (e != t.peak_event && ev.phase != stagemem::StepPhase::optimizer_step) {
    ImGui::TextDisabled("(stored activation terms are itemised at the peak event)");
  }
  ImGui::PopTextWrapPos();
}

// The snapshot shown over this stage's timeline: its device's curve and peak, or nothing.
struct Measured {
  bool shown = false;
  const std::vector<std::int64_t>* curve = nullptr;  // null from a link
  std::size_t device = 0;
  std::int64_t peak_bytes = 0;
  std::int64_t peak_event = -1;  // index in the curve; -1 unknown
  double peak_share = -1.0;      // (peak event + 0.5) / events of its trace; -1 unknown
};

Measured measured_for(const AppState& state, std::int64_t stage) {
  Measured m;
  const SnapshotTab& snap = state.snapshot;
  if (!snap.loaded || snap.stage != stage) return m;
  const stagemem::SnapshotSummary& s = snap.summary;
  m.device = s.peak.found ? s.peak.device : 0;
  if (m.device < s.live_bytes.size() && !s.live_bytes[m.device].empty()) {
    m.curve = &s.live_bytes[m.device];
  }
  if (s.peak.found) {
    m.peak_bytes = s.peak.live_bytes;
    m.peak_event = m.curve ? static_cast<std::int64_t>(s.peak.event) : -1;
  } else if (m.curve) {
    const auto top = std::max_element(m.curve->begin(), m.curve->end());
    m.peak_bytes = *top;
    m.peak_event = top - m.curve->begin();
  }
  const std::int64_t events =
      m.curve ? static_cast<std::int64_t>(m.curve->size()) : s.peak_trace_events;
  const std::int64_t event = m.curve ? m.peak_event : static_cast<std::int64_t>(s.peak.event);
  if (s.peak.found && events > 0 && event >= 0 && event < events) {
    m.peak_share = (static_cast<double>(event) + 0.5) / static_cast<double>(events);
  }
  m.shown = m.curve != nullptr || s.peak.found;
  return m;
}

// The stage the tab shows: the chosen one; none yet (or gone): the binding stage, as the frame's
// refresh will choose.
std::int64_t shown_stage(const AppState& state) {
  const stagemem::Report& report = state.report;
  const auto stages = static_cast<std::int64_t>(report.stages.size());
  const std::int64_t chosen = state.timeline.stage;
  return chosen >= 0 && chosen < stages ? chosen
         : report.binding_stage >= 0    ? report.binding_stage
                                        : 0;
}

void draw_stage_selector(const AppState& state, std::int64_t shown, Actions& out) {
  const auto stages = static_cast<std::int64_t>(state.report.stages.size());
  ImGui::SetNextItemWidth(160.0f * state.ui_scale);
  const std::string preview = "stage " + std::to_string(shown);
  if (ImGui::BeginCombo("##timeline_stage", preview.c_str())) {
    for (std::int64_t s = 0; s < stages; ++s) {
      const std::string label = "stage " + std::to_string(s);
      if (ImGui::Selectable(label.c_str(), s == shown)) out.push(SelectTimelineStage{s});
    }
    ImGui::EndCombo();
  }
  publish(out, Widget::timeline_stage);
}

// The frame's refresh has built the timeline of the shown stage from this report.
bool timeline_built(const AppState& state, std::int64_t shown) {
  const TimelineTab& tab = state.timeline;
  return tab.built_stage == shown && tab.stage == shown &&
         tab.built_generation == state.report_generation;
}

// A new timeline: the event under the mouse is looked up again.
void forget_old_hover(const TimelineTab& tab, TimelineView& view) {
  if (view.hovered_build == tab.builds) return;
  view.hovered_build = tab.builds;
  view.hovered_event = -1;
  view.hovered_name.clear();
}

// The families' colours, then the measured curve's entry when a snapshot is drawn over the chart.
void draw_legend(const AppState& state, const Measured& measured, MeasuredOverlay& overlay) {
  for (const stagemem::Family f : stack_order) {
    const ImVec2 p = ImGui::GetCursorScreenPos();
    const float size = ImGui::GetTextLineHeight();
    ImGui::GetWindowDrawList()->AddRectFilled(p, ImVec2(p.x + size, p.y + size), colour_of(f));
    ImGui::Dummy(ImVec2(size, size));
    ImGui::SameLine();
    ImGui::TextUnformatted(std::string(stagemem::family_name(f)).c_str());
    ImGui::SameLine();
  }
  if (measured.shown) {
    const ImVec2 p = ImGui::GetCursorScreenPos();
    const float size = ImGui::GetTextLineHeight();
    ImGui::GetWindowDrawList()->AddLine(ImVec2(p.x, p.y + size * 0.5f),
                                        ImVec2(p.x + size * 1.5f, p.y + size * 0.5f),
                                        measured_colour, 3.0f * state.ui_scale);
    ImGui::Dummy(ImVec2(size * 1.5f, size));
    ImGui::SameLine();
    overlay.legend = measured.curve ? "measured live bytes: " + state.snapshot.file + ", device " +
                                          std::to_string(measured.device)
                                    : "measured peak: " + state.snapshot.file + " (from the link)";
    ImGui::TextUnformatted(overlay.legend.c_str());
  }
  ImGui::NewLine();
}

// The chart on screen (ImGui pixels) and its bytes axis. The band above the plot holds the peak's
// label; the bytes axis's labels sit left of the plot.
struct Plot {
  ImVec2 origin;  // the chart's top left
  float width = 0.0f, height = 0.0f;
  float x0 = 0.0f, x1 = 0.0f, top = 0.0f, bottom = 0.0f;  // the plot area
  float column = 0.0f;                                    // one event's width
  float scale = 1.0f;                                     // AppState::ui_scale
  std::int64_t top_bytes = 1;                             // the bytes at the plot's top
  double per_byte = 0.0;                                  // pixels per byte
  bool own_scale = false;  // the measured curve gets its own axis (this one does not fit it)
  stagemem::AmountUnit unit = stagemem::AmountUnit::gib;  // of its labels (AppState::display)

  float y_of(std::int64_t bytes) const {
    return bottom - static_cast<float>(static_cast<double>(bytes) * per_byte);
  }
};

// The chart at the cursor, as wide as the window, its axis up to the peak, the device and (when it
// shares the axis) the measured peak.
Plot place_plot(const AppState& state, const stagemem::StageReport& stage, const Measured& measured,
                std::int64_t events) {
  Plot plot;
  plot.scale = state.ui_scale;
  plot.unit = state.display.unit;
  plot.origin = ImGui::GetCursorScreenPos();
  plot.width = std::max(ImGui::GetContentRegionAvail().x, 100.0f * plot.scale);
  plot.height = chart_height_px * plot.scale;
  const float axis = ImGui::CalcTextSize("0000.0 GiB").x + 6.0f * plot.scale;
  plot.x0 = plot.origin.x + axis;
  plot.x1 = plot.origin.x + plot.width;
  plot.top = plot.origin.y + ImGui::GetTextLineHeightWithSpacing();
  plot.bottom = plot.origin.y + plot.height;
  std::int64_t top = std::max<std::int64_t>(stage.peak_bytes, 1);
  const std::int64_t device = state.report.device.bytes;
  if (device > 0) top = std::max(top, device);
  // The measured curve shares the axis when it is big enough to be read on it.
  plot.own_scale = measured.shown && static_cast<double>(measured.peak_bytes) <
                                         own_scale_share * static_cast<double>(top);
  if (measured.shown && !plot.own_scale) top = std::max(top, measured.peak_bytes);
  plot.top_bytes = top;
  plot.per_byte = static_cast<double>(plot.bottom - plot.top) / static_cast<double>(top);
  plot.column = (plot.x1 - plot.x0) / static_cast<float>(std::max<std::int64_t>(events, 1));
  return plot;
}

void draw_axes(ImDrawList* draw, const Plot& plot) {
  draw->AddLine(ImVec2(plot.x0, plot.bottom), ImVec2(plot.x1, plot.bottom), axis_colour);
  draw->AddLine(ImVec2(plot.x0, plot.top), ImVec2(plot.x0, plot.bottom), axis_colour);
  draw->AddText(ImVec2(plot.origin.x, plot.top), axis_colour,
                stagemem::amount_text(plot.top_bytes, plot.unit, 1).c_str());
  draw->AddText(ImVec2(plot.origin.x, plot.bottom - ImGui::GetTextLineHeight()), axis_colour, "0");
}

// One column per event, stacked by family; the hovered one outlined.
void draw_columns(ImDrawList* draw, const Plot& plot, const stagemem::StageTimeline& t,
                  std::int64_t hovered_event) {
  const auto n = static_cast<std::int64_t>(t.events.size());
  const float scale = plot.scale;
  for (std::int64_t e = 0; e < n; ++e) {
    const stagemem::TimelineEvent& ev = t.events[static_cast<std::size_t>(e)];
    const float x0 = plot.x0 + plot.column * static_cast<float>(e);
    const float x1 =
        std::max(x0 + 1.0f, x0 + plot.column - (plot.column > 4.0f * scale ? scale : 0.0f));
    std::int64_t below = 0;
    for (const stagemem::Family f : stack_order) {
      const std::int64_t bytes = ev.live_by_family[static_cast<std::size_t>(f)];
      if (bytes <= 0) continue;
      draw->AddRectFilled(ImVec2(x0, plot.y_of(below + bytes)), ImVec2(x1, plot.y_of(below)),
                          colour_of(f));
      below += bytes;
    }
    if (e == hovered_event) {
      draw->AddRect(ImVec2(x0, plot.y_of(ev.live_bytes)), ImVec2(x1, plot.bottom), IM_COL32_WHITE);
    }
  }
}

// The device's capacity across the plot, labelled.
void draw_capacity(ImDrawList* draw, const Plot& plot, std::int64_t device_bytes) {
  const float scale = plot.scale;
  const float y = plot.y_of(device_bytes);
  draw->AddLine(ImVec2(plot.x0, y), ImVec2(plot.x1, y), capacity_colour, 1.5f * scale);
  // Above its line, or under it when the line is the plot's top (the band above holds the
  // peak's label).
  const float text_y =
      y - ImGui::GetTextLineHeight() < plot.top ? y + 2.0f * scale : y - ImGui::GetTextLineHeight();
  draw->AddText(ImVec2(plot.x0 + 4.0f * scale, text_y), capacity_colour,
                ("device " + stagemem::amount_text(device_bytes, plot.unit, 1)).c_str());
}

// The peak event's column marked top to bottom, its bytes in the band above the plot.
void draw_peak(ImDrawList* draw, const Plot& plot, std::int64_t peak_event,
               std::int64_t peak_bytes) {
  const float scale = plot.scale;
  const float x = plot.x0 + plot.column * (static_cast<float>(peak_event) + 0.5f);
  draw->AddLine(ImVec2(x, plot.top), ImVec2(x, plot.bottom), peak_colour, 2.0f * scale);
  const std::string label = "peak " + stagemem::amount_text(peak_bytes, plot.unit);
  const float label_x = std::min(x + 4.0f * scale, plot.x1 - ImGui::CalcTextSize(label.c_str()).x);
  draw->AddText(ImVec2(label_x, plot.origin.y), peak_colour, label.c_str());
}

// The measured curve's axis: the chart's, or its own with the curve's peak at 90% of the plot's
// height.
Plot measured_axis(const Plot& plot, const Measured& measured) {
  Plot axis = plot;
  axis.top_bytes = plot.own_scale
                       ? std::max<std::int64_t>(1, measured.peak_bytes + measured.peak_bytes / 9)
                       : plot.top_bytes;
  axis.per_byte = static_cast<double>(plot.bottom - plot.top) / static_cast<double>(axis.top_bytes);
  return axis;
}

// An own axis: a line on the plot's right edge, its top labelled in the band above the plot,
// right-aligned (the curve tops out at 90% of it).
void draw_own_axis(ImDrawList* draw, const Plot& axis) {
  const std::string label = short_amount(axis.top_bytes, axis.unit) + " (measured, own axis)";
  const float w = ImGui::CalcTextSize(label.c_str()).x;
  draw->AddLine(ImVec2(axis.x1 - 1.0f, axis.top), ImVec2(axis.x1 - 1.0f, axis.bottom),
                measured_colour);
  draw->AddText(ImVec2(axis.x1 - w, axis.origin.y), measured_colour, label.c_str());
}

// The replayed live bytes over the plot's width; returns the vertices drawn. Event i of N at
// (i + 0.5) / N of the width; more events than pixels: each pixel column draws the largest level
// of its events, so the peak is never averaged away.
std::int64_t draw_measured_curve(ImDrawList* draw, const Plot& axis,
                                 const std::vector<std::int64_t>& curve) {
  const float plot_width = axis.x1 - axis.x0;
  const auto events = static_cast<std::int64_t>(curve.size());
  std::vector<ImVec2> points;
  const auto columns = static_cast<std::int64_t>(std::max(1.0f, plot_width));
  if (events <= 2 * columns) {
    points.reserve(static_cast<std::size_t>(events));
    for (std::int64_t i = 0; i < events; ++i) {
      const float x =
          axis.x0 + plot_width * (static_cast<float>(i) + 0.5f) / static_cast<float>(events);
      points.emplace_back(x, axis.y_of(curve[static_cast<std::size_t>(i)]));
    }
  } else {
    points.reserve(static_cast<std::size_t>(columns));
    for (std::int64_t c = 0; c < columns; ++c) {
      const std::int64_t first = c * events / columns;
      const std::int64_t last = std::max(first + 1, (c + 1) * events / columns);
      std::int64_t level = 0;
      for (std::int64_t i = first; i < last; ++i)
        level = std::max(level, curve[static_cast<std::size_t>(i)]);
      points.emplace_back(axis.x0 + static_cast<float>(c) + 0.5f, axis.y_of(level));
    }
  }
  draw->AddPolyline(points.data(), static_cast<int>(points.size()), measured_colour,
                    ImDrawFlags_None, 2.0f * axis.scale);
  return static_cast<std::int64_t>(points.size());
}

// From a link: the peak's level only, dashed across the chart.
void draw_measured_level(ImDrawList* draw, const Plot& axis, std::int64_t peak_bytes) {
  const float scale = axis.scale;
  const float y = axis.y_of(peak_bytes);
  for (float x = axis.x0; x < axis.x1; x += 10.0f * scale) {
    draw->AddLine(ImVec2(x, y), ImVec2(std::min(x + 6.0f * scale, axis.x1), y), measured_colour,
                  2.0f * scale);
  }
}

// The measured peak's dot (where its place among the events is known) and its label.
void draw_measured_peak(ImDrawList* draw, const Plot& axis, const Measured& measured,
                        const MeasuredOverlay& overlay) {
  const float scale = axis.scale;
  if (measured.peak_share >= 0.0) {
    draw->AddCircleFilled(ImVec2(overlay.peak_x, overlay.peak_y), 4.5f * scale, measured_colour);
  }
  const std::string label = "measured peak " + short_amount(measured.peak_bytes, axis.unit);
  const float label_w = ImGui::CalcTextSize(label.c_str()).x;
  // Right of the marker, or left of it where the plot ends; just above the level it marks.
  float label_x = overlay.peak_x + 8.0f * scale;
  if (label_x + label_w > axis.x1)
    label_x = std::max(axis.x0, overlay.peak_x - 8.0f * scale - label_w);
  const float label_y = std::max(axis.top, overlay.peak_y - ImGui::GetTextLineHeight() - 2.0f);
  draw->AddText(ImVec2(label_x, label_y), measured_colour, label.c_str());
}

// The snapshot over the chart: its axis, its curve (or the link's peak level) and its peak; what
// was drawn is kept in `overlay` for the tests.
void draw_measured(ImDrawList* draw, const Plot& plot, const Measured& measured,
                   MeasuredOverlay& overlay, std::uint64_t frame) {
  const Plot axis = measured_axis(plot, measured);
  overlay.own_scale = plot.own_scale;
  overlay.axis_top_bytes = axis.top_bytes;
  overlay.from_link = measured.curve == nullptr;
  if (plot.own_scale) draw_own_axis(draw, axis);
  if (measured.peak_share >= 0.0) {
    overlay.peak_x = plot.x0 + (plot.x1 - plot.x0) * static_cast<float>(measured.peak_share);
  }
  if (measured.curve) {
    overlay.points = draw_measured_curve(draw, axis, *measured.curve);
  } else {
    draw_measured_level(draw, axis, measured.peak_bytes);
    if (measured.peak_share < 0.0) overlay.peak_x = plot.x0 + 4.0f * plot.scale;
  }
  overlay.peak_y = axis.y_of(measured.peak_bytes);
  draw_measured_peak(draw, axis, measured, overlay);
  overlay.drawn = true;
  overlay.frame = frame;
}

// How the measured curve's axes map onto the chart's, as printed under it.
std::string measured_axis_note(std::int64_t events, const Measured& measured,
                               const MeasuredOverlay& overlay, stagemem::AmountUnit unit) {
  std::string note;
  if (measured.curve) {
    note = "X axes: the columns are this stage's " + std::to_string(events) +
           " passes of one step in schedule order; the green curve spreads the snapshot's " +
           std::to_string(measured.curve->size()) + " recorded allocator events (device " +
           std::to_string(measured.device) +
           ", trace order, not time) over the same width. The two are not aligned in time: "
           "only both span the chart.";
  } else {
    note =
        "The dashed green line is the snapshot's measured peak from the link, its dot the "
        "peak's place among the trace's events spread over the width (the curve stays in the "
        "file: load it to see the curve)";
  }
  if (overlay.own_scale) {
    note += " Y axis: the measured curve has its own scale (right, 0 to " +
            short_amount(overlay.axis_top_bytes, unit) +
            "): its peak is under 5% of the derived axis.";
  }
  return note;
}

// Under the chart: what its columns are; with a snapshot, how its axes map and its peak against
// the derived one (or which stage it belongs to).
void draw_notes(const AppState& state, const stagemem::StageReport& stage, const Measured& measured,
                MeasuredOverlay& overlay) {
  const stagemem::StageTimeline& t = state.timeline.timeline;
  const auto n = static_cast<std::int64_t>(t.events.size());
  ImGui::TextDisabled(
      "%lld events: %lld micro-batches x %lld chunk(s), forward and backward, then the optimizer "
      "step",
      static_cast<long long>(n), static_cast<long long>(state.report.micro_batches),
      static_cast<long long>(t.chunks));
  const SnapshotTab& snap = state.snapshot;
  if (measured.shown) {
    overlay.axis_note = measured_axis_note(n, measured, overlay, state.display.unit);
    ImGui::PushTextWrapPos(0.0f);
    ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(measured_colour), "%s",
                       overlay.axis_note.c_str());
    ImGui::TextUnformatted(
        stagemem::compare_snapshot_peak(snap.summary, stage, state.timeline.peak_name)
            .text.c_str());
    ImGui::PopTextWrapPos();
  } else if (snap.loaded) {
    ImGui::TextDisabled(
        "The loaded snapshot %s is compared with stage %lld: choose that stage to "
        "see its measured curve here.",
        snap.file.c_str(), static_cast<long long>(snap.stage));
  }
}

// The event under the mouse (its name looked up only when it changes), and its tooltip.
void hover_event(const AppState& state, TimelineView& view, const stagemem::StageReport& stage,
                 const Plot& plot, bool hovered) {
  const stagemem::StageTimeline& t = state.timeline.timeline;
  const auto n = static_cast<std::int64_t>(t.events.size());
  std::int64_t under_mouse = -1;
  if (hovered && n > 0) {
    const float mx = ImGui::GetIO().MousePos.x;
    if (mx >= plot.x0 && mx < plot.x1) {
      under_mouse =
          std::min<std::int64_t>(n - 1, static_cast<std::int64_t>((mx - plot.x0) / plot.column));
    }
  }
  if (under_mouse != view.hovered_event) {
    view.hovered_event = under_mouse;
    view.hovered_name =
        under_mouse >= 0
            ? stagemem::event_name(stage, t.events[static_cast<std::size_t>(under_mouse)])
            : std::string();
  }
  if (view.hovered_event >= 0 && ImGui::BeginTooltip()) {
    event_tooltip(state, view, stage, view.hovered_event);
    ImGui::EndTooltip();
  }
}

}  // namespace

void draw_timeline(const AppState& state, TimelineView& view, Actions& out) {
  const stagemem::Report& report = state.report;
  if (!report.diagnostics.ok() || report.stages.empty()) {
    ImGui::TextWrapped("Fix the highlighted fields to see the step timeline.");
    return;
  }
  const std::int64_t shown = shown_stage(state);
  draw_stage_selector(state, shown, out);
  if (!timeline_built(state, shown)) {
    // The tab has just opened: the frame's refresh builds the timeline before the next frame.
    view.hovered_event = -1;
    return;
  }
  const TimelineTab& tab = state.timeline;
  forget_old_hover(tab, view);
  const stagemem::StageReport& stage = report.stages[static_cast<std::size_t>(tab.stage)];
  ImGui::SameLine();
  // What makes the peak, largest part first (not only the transient alive at that moment).
  ImGui::TextWrapped("%s", tab.peak_headline.c_str());
  const Measured measured = measured_for(state, tab.stage);
  view.measured = MeasuredOverlay{};
  draw_legend(state, measured, view.measured);

  const Plot plot =
      place_plot(state, stage, measured, static_cast<std::int64_t>(tab.timeline.events.size()));
  ImGui::InvisibleButton("##timeline_chart", ImVec2(plot.width, plot.height));
  const bool hovered = ImGui::IsItemHovered();
  publish(out, Widget::timeline_chart);
  ImDrawList* draw = ImGui::GetWindowDrawList();
  draw_axes(draw, plot);
  draw_columns(draw, plot, tab.timeline, view.hovered_event);
  if (report.device.bytes > 0) draw_capacity(draw, plot, report.device.bytes);
  if (tab.timeline.peak_event >= 0) {
    draw_peak(draw, plot, tab.timeline.peak_event, stage.peak_bytes);
  }
  if (measured.shown) draw_measured(draw, plot, measured, view.measured, out.frame());
  draw_notes(state, stage, measured, view.measured);
  hover_event(state, view, stage, plot, hovered);
}
