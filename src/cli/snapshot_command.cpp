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
#include "config_sources.h"
#include "estimate/estimate.h"
#include "measured/snapshot.h"
#include "measured/snapshot_link.h"
#include "memory/timeline.h"
#include "render/term_text.h"
#include "render/vocabulary.h"
#include "report/report.h"

namespace {

using stagemem_cli::exit_bad_input;

constexpr std::array<stagemem_cli::CommandOption, 2> snapshot_options = {{
    {"--stage", "N", "the pipeline stage the snapshot was taken on (default 0)"},
    {"--json", "",
     "JSON: file, reserved_bytes, active_bytes, buckets[] {name, measured_bytes, block_bytes, "
     "blocks, derived_bytes, gap_bytes, match, derived_terms[], by_module{}}, "
     "optimizer_state_seen, peak {device, event, live_bytes, size, bucket, where}"},
}};

std::string bytes_text(std::int64_t bytes) {
  return stagemem::snapshot_bytes_text(bytes);
}

void print_text(const std::string& file, const stagemem::SnapshotSummary& s,
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
    if (compared) {
      for (const stagemem::Term* t : row.derived_terms) {
        std::printf("  derived: %s  %s\n", stagemem::term_name(*t).c_str(),
                    bytes_text(t->bytes).c_str());
      }
    }
  }
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
  }
}

void print_json(const std::string& file, const stagemem::SnapshotSummary& s,
                const std::vector<stagemem::SnapshotComparisonRow>& rows, bool compared,
                std::int64_t stage) {
  using json = nlohmann::ordered_json;
  json buckets = json::array();
  for (const auto& row : rows) {
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
    buckets.push_back(entry);
  }
  json out = {{"file", file},
              {"stage", compared ? json(stage) : json(nullptr)},
              {"reserved_bytes", s.reserved_bytes},
              {"active_bytes", s.active_bytes},
              {"blocks_without_frames", s.blocks_without_frames},
              {"optimizer_state_seen", s.optimizer_state_seen},
              {"buckets", buckets}};
  if (!s.optimizer_state_seen) {
    out["lazy_state_note"] = std::string(stagemem::snapshot_lazy_state_note());
  }
  if (s.peak.found) {
    out["peak"] = {
        {"device", s.peak.device},
        {"event", s.peak.event},
        {"live_bytes", s.peak.live_bytes},
        {"size", s.peak.size},
        {"bucket", std::string(stagemem::snapshot_bucket_name(s.peak.attribution.bucket))},
        {"where", s.peak.where}};
  } else {
    out["peak"] = nullptr;
  }
  std::printf("%s\n", out.dump(2, ' ', false, json::error_handler_t::replace).c_str());
}

}  // namespace

int run_snapshot(const std::vector<std::string_view>& args) {
  stagemem_cli::CommandLine line = stagemem_cli::parse_command_line(
      args, {.options = snapshot_options, .allow_positional = true});
  if (line.help) {
    std::printf(
        "usage: stagemem snapshot FILE [configuration flags] [--stage N] [--json]\n"
        "       stagemem snapshot --url LINK [--stage N] [--json]   (a link with snapshot= "
        "entries)\n\n"
        "Reads a PyTorch allocator snapshot (torch.cuda.memory._dump_snapshot(); only plain\n"
        "values are accepted, nothing in the file is executed), attributes every active block\n"
        "to a bucket by its Python frames, and prints the measured bytes per bucket next to the\n"
        "derived terms of the stage, with the measured peak event of the device trace. A link\n"
        "copied from the app after loading a snapshot carries its summary (snapshot= entries,\n"
        "never the file): given without FILE, the comparison is made from it.\n\n"
        "options:\n%s%s",
        stagemem_cli::command_options_help(snapshot_options).c_str(),
        stagemem_cli::configuration_flags_help().c_str());
    return 0;
  }
  stagemem::Diagnostics& d = line.diagnostics;
  // Without a FILE, a link's snapshot= entries (the app's Copy link after loading a snapshot)
  // stand in for it: the same comparison from the summary the link carries.
  std::optional<stagemem::SnapshotLinkSummary> from_link;
  if (line.positional.empty()) {
    for (std::size_t i = 0; i < args.size(); ++i) {
      std::string_view url;
      if (args[i] == "--url" && i + 1 < args.size()) url = args[i + 1];
      if (args[i].starts_with("--url=")) url = args[i].substr(6);
      if (url.empty()) continue;
      stagemem::DecodedSnapshotLink decoded = stagemem::decode_snapshot_link(url);
      for (const auto& e : decoded.diagnostics.errors) d.error(e.field, e.message);
      if (decoded.snapshot) from_link = std::move(decoded.snapshot);
    }
  }
  if (line.positional.size() != 1 && !from_link) {
    d.error("FILE",
            "give exactly one snapshot file, or a --url link that carries a snapshot's "
            "summary (got " +
                std::to_string(line.positional.size()) + " files)");
  }
  std::int64_t stage = from_link ? from_link->stage : 0;
  if (const auto text = line.option("--stage")) {
    try {
      std::size_t used = 0;
      stage = std::stoll(*text, &used);
      if (used != text->size() || stage < 0) throw std::invalid_argument("");
    } catch (const std::exception&) {
      d.error("--stage", "'" + text->substr(0, 32) + "' is not a stage index (an integer >= 0)");
    }
  }
  if (!d.ok()) {
    stagemem_cli::print_diagnostics(d);
    return exit_bad_input;
  }
  stagemem::SnapshotSummary summary;
  std::string path;
  if (from_link) {
    path = from_link->file;
    summary = std::move(from_link->summary);
  } else {
    path = line.positional[0];
    // A pickle of protocol 2 to 5 starts with PROTO (0x80) and the protocol: an input that does
    // not (a JSON file given by mistake, /dev/zero) is refused after its first bytes with the
    // decoder's own error, not read up to the 1 GiB a snapshot may have.
    std::string head;
    stagemem_io::ReadResult read = stagemem_io::read_file(path, [&](std::string_view first) {
      head = std::string(first);
      const bool pickle = first.size() < 2 || (static_cast<unsigned char>(first[0]) == 0x80 &&
                                               first[1] >= 2 && first[1] <= 5);
      return pickle ? stagemem::PickleLimits{}.max_input_bytes : first.size();
    });
    if (read.status == stagemem_io::ReadStatus::over_limit && read.limit == head.size()) {
      read.status = stagemem_io::ReadStatus::ok;
      read.bytes = head;  // only its head: the decoder names what is wrong with it
    }
    if (read.status != stagemem_io::ReadStatus::ok) {
      d.error("FILE", stagemem_io::failure_text(read, stagemem_io::quoted_path(path)));
      stagemem_cli::print_diagnostics(d);
      return exit_bad_input;
    }
    const stagemem::SnapshotDecoded decoded = stagemem::read_snapshot(read.bytes);
    if (!decoded.snapshot) {
      d.error(path.substr(0, 200), decoded.error);
      stagemem_cli::print_diagnostics(d);
      return exit_bad_input;
    }
    summary = stagemem::summarize_snapshot(*decoded.snapshot);
    if (!summary.error.empty()) {
      d.error(path.substr(0, 200), summary.error);
      stagemem_cli::print_diagnostics(d);
      return exit_bad_input;
    }
  }
  std::optional<stagemem::Report> report;
  std::vector<stagemem::SnapshotComparisonRow> rows;
  if (line.model_given) {
    report = stagemem::estimate(line.config);
    if (!report->diagnostics.ok()) {
      stagemem_cli::print_diagnostics(report->diagnostics);
      return exit_bad_input;
    }
    if (stage >= static_cast<std::int64_t>(report->stages.size())) {
      d.error("--stage", std::to_string(stage) + " is not in [0, " +
                             std::to_string(report->stages.size() - 1) + "]");
      stagemem_cli::print_diagnostics(d);
      return exit_bad_input;
    }
    rows = stagemem::compare_snapshot(summary, report->stages[static_cast<std::size_t>(stage)]);
  } else {
    rows = stagemem::compare_snapshot(summary, stagemem::StageReport{});
  }
  const std::string name = from_link ? path : path.substr(path.rfind('/') + 1);
  if (from_link && !line.option("--json")) {
    std::printf("(the summary a link carries, not the file: no block counts, no trace curve)\n");
  }
  if (line.option("--json")) {
    print_json(name, summary, rows, line.model_given, stage);
  } else {
    print_text(name, summary, rows,
               report ? &report->stages[static_cast<std::size_t>(stage)] : nullptr, stage);
  }
  if (report) stagemem_cli::print_diagnostics(report->diagnostics);
  stagemem_cli::print_diagnostics(d);
  return 0;
}
