// The Snapshot tab: a PyTorch allocator snapshot (torch.cuda.memory._dump_snapshot()), dropped
// on the page or opened with the button, read in the page by the core's decoder (snapshot.h; the
// file never leaves the page), or its summary from a link (snapshot_link.h). It shows what
// `stagemem snapshot` prints, from the same core functions: the measured bytes per bucket next to
// the derived terms of the chosen stage, each bucket's status, the verdict (what matches, what is
// missing on either side), the lazy-state note, the measured peak against the derived one, and
// the snapshot's segments by pool and size next to those the allocator replay holds.
// The measured curve itself is drawn over the step timeline of the same stage (panel_timeline).
#include <algorithm>
#include <string>

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

constexpr ImVec4 warning_colour(1.0f, 0.75f, 0.35f, 1.0f);
constexpr ImVec4 match_colour(0.45f, 0.85f, 0.50f, 1.0f);

std::string amount(std::int64_t bytes, stagemem::AmountUnit unit) {
  return stagemem::snapshot_bytes_text(bytes, unit);
}

ImVec4 status_colour(stagemem::SnapshotMatch match) {
  switch (match) {
    case stagemem::SnapshotMatch::match:
      return match_colour;
    case stagemem::SnapshotMatch::gap:
    case stagemem::SnapshotMatch::measured_only:
    case stagemem::SnapshotMatch::derived_only:
      return warning_colour;
    case stagemem::SnapshotMatch::neither:
      break;
  }
  return ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled);
}

void mono_cell(const AppState& state, const std::string& text) {
  ImGui::TableNextColumn();
  mono_text(state.mono_font, text);
}

void draw_comparison(const AppState& state, std::int64_t stage_index,
                     const stagemem::StageReport& stage) {
  const SnapshotTab& snap = state.snapshot;
  const stagemem::SnapshotSummary& s = snap.summary;
  const auto rows = stagemem::compare_snapshot(s, stage);
  constexpr ImGuiTableFlags flags =
      ImGuiTableFlags_Borders | ImGuiTableFlags_RowBg | ImGuiTableFlags_SizingFixedFit;
  if (ImGui::BeginTable("snapshot_buckets", 4, flags)) {
    ImGui::TableSetupColumn("bucket");
    ImGui::TableSetupColumn("measured (requested bytes)");
    ImGui::TableSetupColumn("derived (the stage's terms)");
    ImGui::TableSetupColumn("status");
    ImGui::TableHeadersRow();
    for (const auto& row : rows) {
      const auto& b = s.buckets[static_cast<std::size_t>(row.bucket)];
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(std::string(stagemem::snapshot_bucket_name(row.bucket)).c_str());
      mono_cell(state, amount(b.bytes, state.display.unit));
      mono_cell(state, amount(row.derived_bytes, state.display.unit));
      ImGui::TableNextColumn();
      ImGui::TextColored(status_colour(row.match), "%s",
                         stagemem::snapshot_row_status(row).c_str());
      for (const auto& [module, bytes] : b.by_module) {
        ImGui::TableNextRow();
        ImGui::TableNextColumn();
        ImGui::TextDisabled("  module %s", module.c_str());
        mono_cell(state, amount(bytes, state.display.unit));
        ImGui::TableNextColumn();
        ImGui::TableNextColumn();
      }
    }
    ImGui::EndTable();
  }
  // The verdict, in the CLI's words.
  if (ImGui::BeginTable("snapshot_verdict", 2, ImGuiTableFlags_SizingFixedFit)) {
    for (const auto& v : stagemem::snapshot_verdicts(rows)) {
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(std::string(v.title).c_str());
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(v.buckets.c_str());
    }
    ImGui::EndTable();
  }
  ImGui::PushTextWrapPos(0.0f);
  ImGui::TextDisabled("%s", std::string(stagemem::snapshot_activation_note()).c_str());
  ImGui::PopTextWrapPos();
  if (ImGui::TreeNode("derived_terms", "the derived terms of stage %lld per bucket",
                      static_cast<long long>(stage_index))) {
    for (const auto& row : rows) {
      if (row.derived_terms.empty()) continue;
      ImGui::TextUnformatted(std::string(stagemem::snapshot_bucket_name(row.bucket)).c_str());
      for (const stagemem::Term* t : row.derived_terms) {
        ImGui::BulletText("%s  %s", amount(t->bytes, state.display.unit).c_str(),
                          stagemem::term_name(*t).c_str());
      }
    }
    ImGui::TreePop();
  }
}

// The snapshot's segments by pool and size next to those the allocator replay holds when the
// stage's reserved bytes peak (the CLI's segments table). A size whose counts differ is marked.
void draw_segments(const AppState& state, const stagemem::SnapshotSummary& s,
                   const stagemem::StageReport& stage) {
  const stagemem::SegmentComparison c = stagemem::compare_segments(s, stage);
  ImGui::PushTextWrapPos(0.0f);
  ImGui::TextUnformatted(stagemem::segment_comparison_text(c, stagemem::reserved_moment_text(stage),
                                                           state.display.unit)
                             .c_str());
  ImGui::PopTextWrapPos();
  if (!c.measured || !c.derived || c.rows.empty()) return;
  constexpr ImGuiTableFlags flags = ImGuiTableFlags_Borders | ImGuiTableFlags_RowBg |
                                    ImGuiTableFlags_SizingFixedFit | ImGuiTableFlags_ScrollY;
  // A dozen rows, then it scrolls: a replay can hold segments of a hundred sizes.
  const float row_height = ImGui::GetTextLineHeight() + 2.0f * ImGui::GetStyle().CellPadding.y;
  const float rows = static_cast<float>(std::min<std::size_t>(c.rows.size(), 12) + 1);
  if (!ImGui::BeginTable("snapshot_segments", 4, flags,
                         ImVec2(0.0f, rows * row_height + 2.0f * ImGui::GetStyle().CellPadding.y)))
    return;
  ImGui::TableSetupScrollFreeze(0, 1);
  ImGui::TableSetupColumn("pool");
  ImGui::TableSetupColumn("segment size");
  ImGui::TableSetupColumn("in the snapshot");
  ImGui::TableSetupColumn("in the replay");
  ImGui::TableHeadersRow();
  for (const stagemem::SegmentSizeRow& r : c.rows) {
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(r.small_pool ? "small" : "large");
    mono_cell(state, amount(r.segment_bytes, state.display.unit));
    const ImVec4 colour = r.measured_count == r.derived_count
                              ? match_colour
                              : ImGui::GetStyleColorVec4(ImGuiCol_Text);
    for (const std::int64_t count : {r.measured_count, r.derived_count}) {
      ImGui::TableNextColumn();
      ImGui::PushStyleColor(ImGuiCol_Text, colour);
      mono_text(state.mono_font, std::to_string(count));
      ImGui::PopStyleColor();
    }
  }
  ImGui::EndTable();
}

}  // namespace

void draw_snapshot(const AppState& state, Actions& out) {
  const stagemem::Report& report = state.report;
  const SnapshotTab& snap = state.snapshot;
  if (ImGui::Button("Open an allocator snapshot (.pickle)...")) out.push(OpenSnapshot{});
  publish(out, Widget::snapshot_open);
  ImGui::SameLine();
  ImGui::TextWrapped(
      "or drop one anywhere on the page: torch.cuda.memory._dump_snapshot()'s pickle, read here "
      "in the page (nothing is uploaded; nothing in it is executed).");
  if (!snap.error.empty()) {
    ImGui::TextColored(error_colour, "%s was not read:", snap.error_file.c_str());
    ImGui::PushTextWrapPos(0.0f);
    ImGui::TextColored(error_colour, "%s", snap.error.c_str());
    ImGui::PopTextWrapPos();
  }
  if (!snap.loaded) {
    ImGui::Spacing();
    ImGui::TextWrapped(
        "No snapshot loaded. Record one on the GPU run with "
        "torch.cuda.memory._record_memory_history() and save it with "
        "torch.cuda.memory._dump_snapshot(\"snap.pickle\"); every active block is attributed to "
        "a bucket by its Python frames and shown next to the derived terms of a stage, and the "
        "replayed trace is drawn over the stage's step timeline.");
    return;
  }
  const stagemem::SnapshotSummary& s = snap.summary;
  ImGui::SeparatorText(snap.file.c_str());
  if (snap.from_link) {
    ImGui::TextColored(warning_colour,
                       "summary from the link (the file is not in it): per-bucket bytes and the "
                       "peak, not the trace's curve");
  } else {
    ImGui::TextDisabled("%s read in the page", amount(snap.file_bytes, state.display.unit).c_str());
  }
  ImGui::Text("reserved %s, active %s (requested bytes of active blocks)",
              amount(s.reserved_bytes, state.display.unit).c_str(),
              amount(s.active_bytes, state.display.unit).c_str());
  if (!report.diagnostics.ok() || report.stages.empty()) {
    ImGui::TextWrapped("Fix the highlighted fields to compare it with the derived terms.");
    return;
  }
  const auto stages = static_cast<std::int64_t>(report.stages.size());
  // The frame's refresh keeps the stage in range while the tab is open (this frame may be the
  // tab's first).
  const std::int64_t shown = std::clamp<std::int64_t>(snap.stage, 0, stages - 1);
  ImGui::TextUnformatted("taken on");
  ImGui::SameLine();
  ImGui::SetNextItemWidth(140.0f * state.ui_scale);
  const std::string preview = "stage " + std::to_string(shown);
  if (ImGui::BeginCombo("##snapshot_stage", preview.c_str())) {
    for (std::int64_t k = 0; k < stages; ++k) {
      const std::string label = "stage " + std::to_string(k);
      if (ImGui::Selectable(label.c_str(), k == shown)) out.push(SetSnapshotStage{k});
    }
    ImGui::EndCombo();
  }
  publish(out, Widget::snapshot_stage);
  ImGui::SameLine();
  if (ImGui::SmallButton("Show over its timeline")) {
    out.push(SelectTimelineStage{shown});
    out.push(OpenTab{MainTab::timeline});
  }
  const stagemem::StageReport& stage = report.stages[static_cast<std::size_t>(shown)];
  draw_comparison(state, shown, stage);
  ImGui::PushTextWrapPos(0.0f);
  if (const std::string note = stagemem::snapshot_frameless_note(s); !note.empty()) {
    ImGui::TextDisabled("%s", note.c_str());
  }
  if (!s.optimizer_state_seen) {
    ImGui::TextColored(warning_colour, "note: %s",
                       std::string(stagemem::snapshot_lazy_state_note()).c_str());
  }
  ImGui::Spacing();
  ImGui::TextUnformatted(stagemem::snapshot_peak_text(s).c_str());
  const std::string moment = stagemem::moment_name(stage, stagemem::peak_moment(stage));
  ImGui::TextUnformatted(stagemem::compare_snapshot_peak(s, stage, moment).text.c_str());
  ImGui::PopTextWrapPos();
  ImGui::Spacing();
  draw_segments(state, s, stage);
}
