// snapshot_command.cpp — see snapshot_command.h. The snapshot's bytes are read here (I/O); the
// decoding, attribution and comparison are the core's (pickle_reader.h, snapshot.h).
#include "snapshot_command.h"

#include <array>
#include <cstdio>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "base/units.h"
#include "bounded_read.h"
#include "command_steps.h"
#include "estimate/estimate.h"
#include "measured/snapshot.h"
#include "measured/snapshot_link.h"
#include "memory/timeline.h"
#include "render/term_text.h"
#include "render/vocabulary.h"
#include "report/report.h"

namespace {

constexpr std::array<stagemem_cli::CommandOption, 2> snapshot_options = {{
    {"--stage", "N", "the pipeline stage the snapshot was taken on (default 0)"},
    {"--json", "",
     "JSON: file, reserved_bytes, active_bytes, buckets[] {name, measured_bytes, block_bytes, "
     "blocks, derived_bytes, gap_bytes, match, derived_terms[], by_module{}}, "
     "optimizer_state_seen, peak {device, event, live_bytes, size, bucket, where}, segments "
     "{measured_segments, derived_segments, measured_reserved_bytes, "
     "derived_peak_reserved_bytes, by_size[] {pool, bytes, measured_count, derived_count}} "
     "(null without a model)"},
}};

std::string bytes_text(std::int64_t bytes) {
  return stagemem::snapshot_bytes_text(bytes);
}

// Per bucket: measured bytes, and with a model (`compared`) the derived bytes and the status;
// under it the bytes per module and the derived terms.
void print_bucket_rows(const stagemem::SnapshotSummary& s,
                       const std::vector<stagemem::SnapshotComparisonRow>& rows, bool compared) {
  std::printf("%-32s %26s %26s  %s\n", "bucket", "measured", compared ? "derived" : "",
              compared ? "status" : "");
  for (const auto& row : rows) {
    const auto& b = s.buckets[static_cast<std::size_t>(row.bucket)];
    const std::string status = compared ? stagemem::snapshot_row_status(row) : std::string();
    std::printf("%-32s %26s %26s  %s\n",
                std::string(stagemem::snapshot_bucket_name(row.bucket)).c_str(),
                bytes_text(b.bytes).c_str(), compared ? bytes_text(row.derived_bytes).c_str() : "",
                status.c_str());
    for (const auto& [module, bytes] : b.by_module) {
      std::printf("  module %-23s %26s\n", module.c_str(), bytes_text(bytes).c_str());
    }
    if (!compared) continue;
    for (const stagemem::Term* t : row.derived_terms) {
      std::printf("  derived: %s  %s\n", stagemem::term_name(*t).c_str(),
                  bytes_text(t->bytes).c_str());
    }
  }
}

// The snapshot's segments next to the replay's at the stage's peak reserved, by pool and size.
void print_segments_text(const stagemem::SegmentComparison& c, const stagemem::StageReport& stage) {
  std::printf("\n%s\n",
              stagemem::segment_comparison_text(c, stagemem::reserved_moment_text(stage)).c_str());
  if (!c.measured || !c.derived) return;
  std::printf("%-6s %30s %10s %10s\n", "pool", "segment size", "measured", "derived");
  constexpr std::size_t shown = 24;
  for (std::size_t i = 0; i < c.rows.size() && i < shown; ++i) {
    const auto& r = c.rows[i];
    std::printf("%-6s %30s %10lld %10lld\n", r.small_pool ? "small" : "large",
                bytes_text(r.segment_bytes).c_str(), static_cast<long long>(r.measured_count),
                static_cast<long long>(r.derived_count));
  }
  if (c.rows.size() > shown) {
    std::printf("... %zu more segment sizes (--json lists them all)\n", c.rows.size() - shown);
  }
}

void print_snapshot_text(const std::string& file, const stagemem::SnapshotSummary& s,
                         const std::vector<stagemem::SnapshotComparisonRow>& rows,
                         const stagemem::StageReport* compared, std::int64_t stage) {
  std::printf("snapshot %s: reserved %s, active %s (requested bytes of active blocks)\n",
              file.c_str(), bytes_text(s.reserved_bytes).c_str(),
              bytes_text(s.active_bytes).c_str());
  if (compared) {
    std::printf("measured next to the derived terms of stage %lld\n\n",
                static_cast<long long>(stage));
  } else {
    std::printf("no model given (--preset, --config, --url ...): measured bytes only\n\n");
  }
  print_bucket_rows(s, rows, compared != nullptr);
  if (compared) {
    // The verdict per bucket, in words: what matches and what is missing on either side.
    std::printf("\n");
    for (const auto& v : stagemem::snapshot_verdicts(rows)) {
      std::printf("%-30s %s\n", std::string(v.title).c_str(), v.buckets.c_str());
    }
    std::printf("%s\n", std::string(stagemem::snapshot_activation_note()).c_str());
  }
  if (const std::string note = stagemem::snapshot_frameless_note(s); !note.empty()) {
    std::printf("\n%s\n", note.c_str());
  }
  if (!s.optimizer_state_seen) {
    std::printf("\nnote: %s\n", std::string(stagemem::snapshot_lazy_state_note()).c_str());
  }
  std::printf("\n%s\n", stagemem::snapshot_peak_text(s).c_str());
  if (compared) {
    const std::string moment = stagemem::moment_name(*compared, stagemem::peak_moment(*compared));
    std::printf("%s\n", stagemem::compare_snapshot_peak(s, *compared, moment).text.c_str());
    print_segments_text(stagemem::compare_segments(s, *compared), *compared);
  }
}

using json = nlohmann::ordered_json;

// One bucket: measured bytes and blocks, by module, and with a model the derived side.
json bucket_json(const stagemem::SnapshotSummary& s, const stagemem::SnapshotComparisonRow& row,
                 bool compared) {
  const auto& b = s.buckets[static_cast<std::size_t>(row.bucket)];
  json entry = {{"name", std::string(stagemem::snapshot_bucket_name(row.bucket))},
                {"measured_bytes", b.bytes},
                {"block_bytes", b.block_bytes},
                {"blocks", b.blocks}};
  if (compared) {
    json terms = json::array();
    for (const stagemem::Term* t : row.derived_terms) {
      terms.push_back({{"name", stagemem::term_name(*t)}, {"bytes", t->bytes}});
    }
    entry["derived_bytes"] = row.derived_bytes;
    entry["gap_bytes"] = row.gap_bytes;
    entry["match"] = std::string(stagemem::snapshot_match_name(row.match));
    entry["derived_transient_only"] = row.derived_transient_only;
    entry["derived_terms"] = terms;
  }
  json modules = json::object();
  for (const auto& [module, bytes] : b.by_module) modules[module] = bytes;
  entry["by_module"] = modules;
  return entry;
}

// The segments by pool and size, measured and derived (null counts: that side has none).
json segments_json(const stagemem::SegmentComparison& c) {
  json rows = json::array();
  for (const auto& r : c.rows) {
    rows.push_back({{"pool", r.small_pool ? "small" : "large"},
                    {"bytes", r.segment_bytes},
                    {"measured_count", c.measured ? json(r.measured_count) : json(nullptr)},
                    {"derived_count", c.derived ? json(r.derived_count) : json(nullptr)}});
  }
  return {
      {"measured_segments", c.measured ? json(c.measured_segments) : json(nullptr)},
      {"derived_segments", c.derived ? json(c.derived_segments) : json(nullptr)},
      {"measured_reserved_bytes", c.measured_reserved_bytes},
      {"derived_peak_reserved_bytes", c.derived ? json(c.derived_reserved_bytes) : json(nullptr)},
      {"by_size", rows}};
}

// The measured peak event of the device trace; null when the snapshot has no trace.
json peak_json(const stagemem::SnapshotSummary& s) {
  if (!s.peak.found) return nullptr;
  return {{"device", s.peak.device},
          {"event", s.peak.event},
          {"live_bytes", s.peak.live_bytes},
          {"size", s.peak.size},
          {"bucket", std::string(stagemem::snapshot_bucket_name(s.peak.attribution.bucket))},
          {"where", s.peak.where}};
}

void print_snapshot_json(const std::string& file, const stagemem::SnapshotSummary& s,
                         const std::vector<stagemem::SnapshotComparisonRow>& rows,
                         const stagemem::StageReport* compared_stage, std::int64_t stage) {
  json buckets = json::array();
  for (const auto& row : rows) buckets.push_back(bucket_json(s, row, compared_stage != nullptr));
  json out = {{"file", file},
              {"stage", compared_stage ? json(stage) : json(nullptr)},
              {"reserved_bytes", s.reserved_bytes},
              {"active_bytes", s.active_bytes},
              {"blocks_without_frames", s.blocks_without_frames},
              {"optimizer_state_seen", s.optimizer_state_seen},
              {"buckets", buckets}};
  if (!s.optimizer_state_seen) {
    out["lazy_state_note"] = std::string(stagemem::snapshot_lazy_state_note());
  }
  out["peak"] = peak_json(s);
  out["segments"] = compared_stage ? segments_json(stagemem::compare_segments(s, *compared_stage))
                                   : json(nullptr);
  stagemem_cli::print_json(out);
}

constexpr const char* snapshot_help =
    "usage: stagemem snapshot FILE [configuration flags] [--stage N] [--json]\n"
    "       stagemem snapshot --url LINK [--stage N] [--json]   (a link with snapshot= "
    "entries)\n\n"
    "Reads a PyTorch allocator snapshot (torch.cuda.memory._dump_snapshot(); only plain\n"
    "values are accepted, nothing in the file is executed), attributes every active block\n"
    "to a bucket by its Python frames, and prints the measured bytes per bucket next to the\n"
    "derived terms of the stage, with the measured peak event of the device trace. A link\n"
    "copied from the app after loading a snapshot carries its summary (snapshot= entries,\n"
    "never the file): given without FILE, the comparison is made from it.\n\n"
    "options:\n";

// The measured side: a snapshot's summary, from its file or from a link's snapshot= entries.
struct SnapshotInput {
  std::string name;  // the file's name, as the output shows it
  stagemem::SnapshotSummary summary;
  bool from_link = false;
};

// Without a FILE, a link's snapshot= entries (the app's Copy link after loading a snapshot)
// stand in for it: the same comparison from the summary the link carries. Every --url LINK (or
// --url=LINK) is read; the last one that carries a summary is used.
std::optional<stagemem::SnapshotLinkSummary> snapshot_in_links(
    const std::vector<std::string_view>& args, stagemem::Diagnostics& d) {
  std::optional<stagemem::SnapshotLinkSummary> from_link;
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string_view url;
    if (args[i] == "--url" && i + 1 < args.size()) url = args[i + 1];
    if (args[i].starts_with("--url=")) url = args[i].substr(6);
    if (url.empty()) continue;
    stagemem::DecodedSnapshotLink decoded = stagemem::decode_snapshot_link(url);
    for (const auto& e : decoded.diagnostics.errors) d.error(e.field, e.message);
    if (decoded.snapshot) from_link = std::move(decoded.snapshot);
  }
  return from_link;
}

// One FILE, or none and a link that carries a snapshot's summary.
void require_one_snapshot(const stagemem_cli::CommandLine& line, bool from_link,
                          stagemem::Diagnostics& d) {
  if (line.positional.size() == 1 || from_link) return;
  d.error("FILE",
          "give exactly one snapshot file, or a --url link that carries a snapshot's "
          "summary (got " +
              std::to_string(line.positional.size()) + " files)");
}

// --stage N (an integer >= 0), or `otherwise` when it is absent.
std::int64_t stage_option(const stagemem_cli::CommandLine& line, std::int64_t otherwise,
                          stagemem::Diagnostics& d) {
  const auto text = line.option("--stage");
  if (!text) return otherwise;
  std::int64_t stage = otherwise;
  try {
    std::size_t used = 0;
    stage = std::stoll(*text, &used);
    if (used != text->size() || stage < 0) throw std::invalid_argument("");
  } catch (const std::exception&) {
    d.error("--stage", "'" + text->substr(0, 32) + "' is not a stage index (an integer >= 0)");
  }
  return stage;
}

// The file's bytes, read up to a snapshot's limit. A pickle of protocol 2 to 5 starts with
// PROTO (0x80) and the protocol: an input that does not (a JSON file given by mistake,
// /dev/zero) is refused after its first bytes with the decoder's own error, not read up to the
// 1 GiB a snapshot may have.
std::optional<std::string> read_snapshot_bytes(const std::string& path, stagemem::Diagnostics& d) {
  std::string head;
  stagemem_io::ReadResult read = stagemem_io::read_file(path, [&](std::string_view first) {
    head = std::string(first);
    const bool pickle = first.size() < 2 || (static_cast<unsigned char>(first[0]) == 0x80 &&
                                             first[1] >= 2 && first[1] <= 5);
    return pickle ? stagemem::PickleLimits{}.max_input_bytes : first.size();
  });
  if (read.status == stagemem_io::ReadStatus::over_limit && read.limit == head.size()) {
    return head;  // only its head: the decoder names what is wrong with it
  }
  if (read.status != stagemem_io::ReadStatus::ok) {
    d.error("FILE", stagemem_io::failure_text(read, stagemem_io::quoted_path(path)));
    return std::nullopt;
  }
  return std::move(read.bytes);
}

// The snapshot file decoded and summarized; errors name the file.
std::optional<stagemem::SnapshotSummary> read_snapshot_file(const std::string& path,
                                                            stagemem::Diagnostics& d) {
  const std::optional<std::string> bytes = read_snapshot_bytes(path, d);
  if (!bytes) return std::nullopt;
  const stagemem::SnapshotDecoded decoded = stagemem::read_snapshot(*bytes);
  if (!decoded.snapshot) {
    d.error(path.substr(0, 200), decoded.error);
    return std::nullopt;
  }
  stagemem::SnapshotSummary summary = stagemem::summarize_snapshot(*decoded.snapshot);
  if (!summary.error.empty()) {
    d.error(path.substr(0, 200), summary.error);
    return std::nullopt;
  }
  return summary;
}

// The summary to compare: the link's when there is no FILE, else the file's.
std::optional<SnapshotInput> read_snapshot_input(
    const stagemem_cli::CommandLine& line, std::optional<stagemem::SnapshotLinkSummary>&& from_link,
    stagemem::Diagnostics& d) {
  if (from_link) return SnapshotInput{from_link->file, std::move(from_link->summary), true};
  const std::string& path = line.positional[0];
  std::optional<stagemem::SnapshotSummary> summary = read_snapshot_file(path, d);
  if (!summary) return std::nullopt;
  return SnapshotInput{path.substr(path.rfind('/') + 1), std::move(*summary), false};
}

// Is `stage` one of the report's stages? An error naming --stage when not.
bool stage_in_report(std::int64_t stage, const stagemem::Report& report, stagemem::Diagnostics& d) {
  if (stage < static_cast<std::int64_t>(report.stages.size())) return true;
  d.error("--stage", std::to_string(stage) + " is not in [0, " +
                         std::to_string(report.stages.size() - 1) + "]");
  return false;
}

void print_snapshot(const SnapshotInput& input,
                    const std::vector<stagemem::SnapshotComparisonRow>& rows,
                    const stagemem::StageReport* compared, std::int64_t stage, bool as_json) {
  if (as_json) {
    print_snapshot_json(input.name, input.summary, rows, compared, stage);
    return;
  }
  if (input.from_link) {
    std::printf("(the summary a link carries, not the file: no block counts, no trace curve)\n");
  }
  print_snapshot_text(input.name, input.summary, rows, compared, stage);
}

}  // namespace

int run_snapshot(const std::vector<std::string_view>& args) {
  stagemem_cli::CommandLine line = stagemem_cli::parse_command_line(
      args, {.options = snapshot_options, .allow_positional = true});
  if (line.help) {
    stagemem_cli::print_command_help(snapshot_help, snapshot_options);
    return stagemem_cli::exit_ok;
  }
  stagemem::Diagnostics& d = line.diagnostics;
  std::optional<stagemem::SnapshotLinkSummary> from_link;
  if (line.positional.empty()) from_link = snapshot_in_links(args, d);
  require_one_snapshot(line, from_link.has_value(), d);
  const std::int64_t stage = stage_option(line, from_link ? from_link->stage : 0, d);
  if (!d.ok()) return stagemem_cli::refuse(d);
  const std::optional<SnapshotInput> input = read_snapshot_input(line, std::move(from_link), d);
  if (!input) return stagemem_cli::refuse(d);

  // The derived side, when a source named a model: the terms of that stage of its report.
  std::optional<stagemem::Report> report;
  if (line.model_given) {
    report = stagemem::estimate(line.config);
    if (!report->diagnostics.ok()) return stagemem_cli::refuse(report->diagnostics);
    if (!stage_in_report(stage, *report, d)) return stagemem_cli::refuse(d);
  }
  // The rows point at the terms they were compared with: the stage must outlive them.
  const stagemem::StageReport no_model;
  const stagemem::StageReport* compared =
      report ? &report->stages[static_cast<std::size_t>(stage)] : nullptr;
  const auto rows = stagemem::compare_snapshot(input->summary, compared ? *compared : no_model);
  print_snapshot(*input, rows, compared, stage, line.option("--json").has_value());
  if (report) stagemem_cli::print_diagnostics(report->diagnostics);
  return stagemem_cli::finish(stagemem_cli::exit_ok, d);
}
