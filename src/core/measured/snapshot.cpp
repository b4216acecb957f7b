// snapshot.cpp — see snapshot.h.
#include "measured/snapshot.h"

#include "base/units.h"
#include "render/term_text.h"
#include "report/formula.h"
#include "report/term_info.h"

namespace stagemem {

namespace {

class Decoder {
 public:
  Decoder(const PickleTree& tree, std::size_t max_frames) : t_(tree), frames_left_(max_frames) {}

  SnapshotDecoded run() {
    SnapshotDecoded out;
    Snapshot s;
    const PickleNode& root = t_.at(t_.root);
    if (root.kind != PickleKind::dict) {
      error_ = "snapshot: expected a dict (torch.cuda.memory._snapshot()), found " +
               std::string(pickle_kind_name(root.kind));
    } else if (const PickleNode* segments = list_field(root, "segments", "segments")) {
      for (std::size_t i = 0; i < segments->items.size() && error_.empty(); ++i) {
        s.segments.push_back(segment(t_.at(segments->items[i]), "segments[" + idx(i) + "]"));
      }
      // device_traces is NotRequired: absent when history recording was never enabled.
      if (error_.empty() && t_.find(root, "device_traces") != nullptr) {
        const PickleNode* traces = list_field(root, "device_traces", "device_traces");
        for (std::size_t d = 0; traces && d < traces->items.size() && error_.empty(); ++d) {
          const std::string path = "device_traces[" + idx(d) + "]";
          const PickleNode& device = t_.at(traces->items[d]);
          if (!is_list(device)) {
            type_error(path, "a list of trace entries", device);
            break;
          }
          s.device_traces.emplace_back();
          for (std::size_t e = 0; e < device.items.size() && error_.empty(); ++e) {
            s.device_traces.back().push_back(
                event(t_.at(device.items[e]), path + "[" + idx(e) + "]"));
          }
        }
      }
    }
    if (error_.empty()) {
      out.snapshot = std::move(s);
    } else {
      out.error = error_;
    }
    return out;
  }

 private:
  const PickleTree& t_;
  std::size_t frames_left_;
  std::string error_;

  static std::string idx(std::size_t i) { return std::to_string(i); }
  static bool is_list(const PickleNode& n) {
    return n.kind == PickleKind::list || n.kind == PickleKind::tuple;
  }
  void type_error(const std::string& path, const char* expected, const PickleNode& found) {
    if (error_.empty()) {
      error_ =
          path + ": expected " + expected + ", found " + std::string(pickle_kind_name(found.kind));
    }
  }
  const PickleNode* required(const PickleNode& dict, std::string_view key,
                             const std::string& path) {
    const PickleNode* n = t_.find(dict, key);
    if (n == nullptr && error_.empty()) error_ = path + ": missing";
    return n;
  }
  const PickleNode* list_field(const PickleNode& dict, std::string_view key,
                               const std::string& path) {
    const PickleNode* n = required(dict, key, path);
    if (n && !is_list(*n)) {
      type_error(path, "a list", *n);
      return nullptr;
    }
    return n;
  }
  std::int64_t int_field(const PickleNode& dict, std::string_view key, const std::string& path,
                         bool optional = false) {
    const PickleNode* n =
        optional ? t_.find(dict, key) : required(dict, key, path + "." + std::string(key));
    if (!n) return 0;
    if (n->kind != PickleKind::integer) {
      type_error(path + "." + std::string(key), "an int", *n);
      return 0;
    }
    return n->integer;
  }
  std::string text_field(const PickleNode& dict, std::string_view key, const std::string& path,
                         bool optional = false) {
    const PickleNode* n =
        optional ? t_.find(dict, key) : required(dict, key, path + "." + std::string(key));
    if (!n) return {};
    if (n->kind != PickleKind::text) {
      type_error(path + "." + std::string(key), "a str", *n);
      return {};
    }
    return n->text;
  }
  bool expect_dict(const PickleNode& n, const std::string& path) {
    if (n.kind == PickleKind::dict) return true;
    type_error(path, "a dict", n);
    return false;
  }
  std::int64_t size_field(const PickleNode& dict, std::string_view key, const std::string& path) {
    const std::int64_t v = int_field(dict, key, path);
    if (v < 0 && error_.empty()) {
      error_ = path + "." + std::string(key) + ": " + std::to_string(v) + " is negative";
    }
    return v;
  }

  // Frames are optional: a block allocated while recording was off has none.
  std::vector<SnapshotFrame> frames(const PickleNode& owner, const std::string& path) {
    std::vector<SnapshotFrame> out;
    const PickleNode* list = t_.find(owner, "frames");
    if (list == nullptr) return out;
    const std::string fpath = path + ".frames";
    if (!is_list(*list)) {
      type_error(fpath, "a list", *list);
      return out;
    }
    for (std::size_t i = 0; i < list->items.size() && error_.empty(); ++i) {
      if (frames_left_ == 0) {
        error_ = fpath + ": more frames in the snapshot than the limit";
        break;
      }
      --frames_left_;
      const PickleNode& f = t_.at(list->items[i]);
      const std::string p = fpath + "[" + idx(i) + "]";
      if (!expect_dict(f, p)) break;
      SnapshotFrame frame;
      frame.filename = text_field(f, "filename", p);
      frame.line = int_field(f, "line", p);
      frame.name = text_field(f, "name", p);
      out.push_back(std::move(frame));
    }
    return out;
  }

  SnapshotBlock block(const PickleNode& n, const std::string& path) {
    SnapshotBlock b;
    if (!expect_dict(n, path)) return b;
    b.address = int_field(n, "address", path);
    b.size = size_field(n, "size", path);
    // requested_size arrived after torch 2.0's snapshots; without it the block size stands in.
    b.requested_size =
        t_.find(n, "requested_size") ? size_field(n, "requested_size", path) : b.size;
    b.state = text_field(n, "state", path);
    b.frames = frames(n, path);
    return b;
  }

  SnapshotSegment segment(const PickleNode& n, const std::string& path) {
    SnapshotSegment s;
    if (!expect_dict(n, path)) return s;
    s.address = int_field(n, "address", path);
    s.total_size = size_field(n, "total_size", path);
    s.allocated_size = size_field(n, "allocated_size", path);
    s.active_size = size_field(n, "active_size", path);
    s.stream = int_field(n, "stream", path);
    s.segment_type = text_field(n, "segment_type", path);
    if (const PickleNode* blocks = list_field(n, "blocks", path + ".blocks")) {
      for (std::size_t i = 0; i < blocks->items.size() && error_.empty(); ++i) {
        s.blocks.push_back(block(t_.at(blocks->items[i]), path + ".blocks[" + idx(i) + "]"));
      }
    }
    return s;
  }

  SnapshotEvent event(const PickleNode& n, const std::string& path) {
    SnapshotEvent e;
    if (!expect_dict(n, path)) return e;
    e.action = text_field(n, "action", path);
    e.addr = int_field(n, "addr", path, /*optional=*/true);  // NotRequired (absent for oom)
    e.size = size_field(n, "size", path);
    e.stream = int_field(n, "stream", path);
    e.time_us = int_field(n, "time_us", path, /*optional=*/true);
    e.frames = frames(n, path);
    return e;
  }
};

bool contains(std::string_view text, std::string_view part) {
  return text.find(part) != std::string_view::npos;
}
bool ends_with(std::string_view text, std::string_view tail) {
  return text.size() >= tail.size() && text.substr(text.size() - tail.size()) == tail;
}

std::string file_stem(std::string_view path) {
  const std::size_t slash = path.find_last_of("/\\");
  std::string_view base = slash == std::string_view::npos ? path : path.substr(slash + 1);
  if (ends_with(base, ".py")) base.remove_suffix(3);
  return std::string(base);
}

bool add(std::int64_t* total, std::int64_t value, std::string* error) {
  if (checked_add(*total, value, total)) return true;
  if (error->empty()) *error = "a byte sum of the snapshot exceeds 2^63 - 1";
  return false;
}

}  // namespace

SnapshotDecoded decode_snapshot(const PickleTree& tree, std::size_t max_frames_total) {
  return Decoder(tree, max_frames_total).run();
}

SnapshotDecoded read_snapshot(std::string_view bytes, const PickleLimits& limits) {
  const PickleResult pickle = read_pickle(bytes, limits);
  if (!pickle.tree) return {std::nullopt, "pickle: " + pickle.error};
  return decode_snapshot(*pickle.tree);
}

std::string_view snapshot_bucket_name(SnapshotBucket bucket) {
  switch (bucket) {
    case SnapshotBucket::parameter_gradient_buffers:
      return "parameter and gradient buffers";
    case SnapshotBucket::optimizer_state:
      return "optimizer state";
    case SnapshotBucket::activations:
      return "activations";
    case SnapshotBucket::all_gather_buffers:
      return "all-gather buffers";
    case SnapshotBucket::moe_dispatch_buffers:
      return "MoE dispatch buffers";
    case SnapshotBucket::other:
      return "other";
  }
  return "other";
}

// The rules, first match wins, each tried over every frame (innermost first). Order matters: an
// all-gather issued by the MoE dispatcher is dispatch, one issued by the optimizer is all-gather,
// and an optimizer step runs inside no forward.
SnapshotAttribution attribute_frames(const std::vector<SnapshotFrame>& frames) {
  using B = SnapshotBucket;
  for (const SnapshotFrame& f : frames) {
    // Megatron megatron/core/transformer/moe/token_dispatcher.py (MoE*TokenDispatcher
    // token_dispatch / dispatch_preprocess), moe/fused_a2a.py (DeepEP buffers), and any
    // all_to_all collective.
    if (contains(f.filename, "moe/token_dispatcher.py") || contains(f.filename, "fused_a2a") ||
        contains(f.name, "all_to_all")) {
      return {B::moe_dispatch_buffers,
              "MoE dispatch: moe/token_dispatcher.py, moe/fused_a2a.py or an all_to_all frame",
              {}};
    }
  }
  for (const SnapshotFrame& f : frames) {
    // torch/distributed/distributed_c10d.py all_gather / all_gather_into_tensor /
    // _all_gather_base: the output tensor of a gather (a parameter all-gather when the optimizer
    // or FSDP issues it).
    if (contains(f.name, "all_gather")) {
      return {B::all_gather_buffers, "all-gather: a frame named all_gather*", {}};
    }
  }
  for (const SnapshotFrame& f : frames) {
    // torch/optim/adam.py and adamw.py _init_group (state["exp_avg"], state["exp_avg_sq"]),
    // torch/optim/sgd.py (momentum_buffer), TransformerEngine
    // transformer_engine/pytorch/optimizers/fused_adam.py _initialize_state, and Megatron
    // megatron/core/optimizer/ (distrib_optimizer.py main-parameter shards, optimizer.py
    // fp32 main params, Muon's momentum).
    if (contains(f.filename, "torch/optim/") || contains(f.filename, "/optimizers/") ||
        contains(f.filename, "megatron/core/optimizer/") || f.name == "_init_group" ||
        f.name == "_initialize_state") {
      return {B::optimizer_state,
              "optimizer: torch/optim/, */optimizers/ or megatron/core/optimizer/ frames",
              {}};
    }
  }
  for (const SnapshotFrame& f : frames) {
    // Megatron megatron/core/distributed/param_and_grad_buffer.py _ParamAndGradBuffer.__init__
    // allocates the contiguous param_data and grad_data buffers.
    if (contains(f.filename, "param_and_grad_buffer.py")) {
      return {B::parameter_gradient_buffers,
              "parameter/gradient buffer: distributed/param_and_grad_buffer.py",
              {}};
    }
  }
  for (const SnapshotFrame& f : frames) {
    // A module's forward (torch.nn.Module.__call__ -> forward): the innermost forward names the
    // module, e.g. megatron/core/transformer/attention.py -> "attention".
    if (f.name == "forward") {
      return {B::activations, "activation: a frame named forward (module = its file)",
              file_stem(f.filename)};
    }
  }
  for (const SnapshotFrame& f : frames) {
    // Parameters created in a module's constructor (torch.nn.Parameter(torch.empty(...)) in
    // __init__ or reset_parameters) when no contiguous buffer holds them.
    if (f.name == "__init__" || f.name == "reset_parameters") {
      return {B::parameter_gradient_buffers,
              "parameter: allocated in a module's __init__ / reset_parameters",
              {}};
    }
  }
  return {B::other, frames.empty() ? "no frames recorded" : "no rule matched", {}};
}

SnapshotSummary summarize_snapshot(const Snapshot& snapshot) {
  SnapshotSummary out;
  for (const SnapshotSegment& segment : snapshot.segments) {
    add(&out.reserved_bytes, segment.total_size, &out.error);
    ++out.segment_sizes[{segment.segment_type == "small", segment.total_size}];
    for (const SnapshotBlock& block : segment.blocks) {
      // active_pending_free: freed by Python but still held for another stream's use.
      if (block.state.rfind("active", 0) != 0) {
        add(&out.inactive_block_bytes, block.size, &out.error);
        continue;
      }
      const SnapshotAttribution a = attribute_frames(block.frames);
      SnapshotBucketBytes& b = out.buckets[static_cast<std::size_t>(a.bucket)];
      add(&b.bytes, block.requested_size, &out.error);
      add(&b.block_bytes, block.size, &out.error);
      ++b.blocks;
      add(&b.by_rule[std::string(a.rule)], block.requested_size, &out.error);
      if (!a.module.empty()) add(&b.by_module[a.module], block.requested_size, &out.error);
      add(&out.active_bytes, block.requested_size, &out.error);
      if (block.frames.empty()) ++out.blocks_without_frames;
      if (a.bucket == SnapshotBucket::optimizer_state) out.optimizer_state_seen = true;
    }
  }
  for (std::size_t d = 0; d < snapshot.device_traces.size(); ++d) {
    const auto& events = snapshot.device_traces[d];
    std::vector<std::int64_t> curve;
    curve.reserve(events.size());
    std::int64_t live = 0;
    for (std::size_t e = 0; e < events.size(); ++e) {
      const SnapshotEvent& ev = events[e];
      // memory_viz's convention: bytes are live from alloc until free_completed (free_requested
      // only marks the block as waiting on other streams).
      if (ev.action == "alloc") {
        add(&live, ev.size, &out.error);
      } else if (ev.action == "free_completed") {
        add(&live, -ev.size, &out.error);
      }
      curve.push_back(live);
      if (ev.action == "alloc" && (!out.peak.found || live > out.peak.live_bytes)) {
        out.peak.found = true;
        out.peak.device = d;
        out.peak.event = e;
        out.peak.live_bytes = live;
        out.peak.attribution = attribute_frames(ev.frames);
        out.peak.action = ev.action;
        out.peak.size = ev.size;
        out.peak.where = ev.frames.empty() ? std::string()
                                           : ev.frames.front().filename + ":" +
                                                 std::to_string(ev.frames.front().line) + " " +
                                                 ev.frames.front().name;
      }
      if (ev.action == "alloc") {
        const SnapshotAttribution a = attribute_frames(ev.frames);
        if (a.bucket == SnapshotBucket::optimizer_state) out.optimizer_state_seen = true;
      }
    }
    out.live_bytes.push_back(std::move(curve));
  }
  if (out.peak.found) {
    out.peak_trace_events = static_cast<std::int64_t>(out.live_bytes[out.peak.device].size());
  }
  return out;
}

std::optional<SnapshotBucket> snapshot_bucket_of(const Term& term) {
  using B = SnapshotBucket;
  if (term.family == Family::gap) return std::nullopt;
  switch (term.info->text) {
    case TermText::weights:
    case TermText::weight_scales:
    case TermText::main_gradient:
      return B::parameter_gradient_buffers;
    case TermText::master_weights:
    case TermText::adam_moments:
    case TermText::muon_momentum:
      return B::optimizer_state;
    case TermText::parameter_all_gather:
      return B::all_gather_buffers;
    default:
      break;
  }
  if (contains(term_name(term), "dispatch")) return B::moe_dispatch_buffers;
  if (term.family == Family::activation) return B::activations;
  return B::other;
}

std::string_view snapshot_match_name(SnapshotMatch match) {
  switch (match) {
    case SnapshotMatch::match:
      return "match";
    case SnapshotMatch::gap:
      return "gap";
    case SnapshotMatch::measured_only:
      return "measured only";
    case SnapshotMatch::derived_only:
      return "derived only";
    case SnapshotMatch::neither:
      return "neither";
  }
  return "neither";
}

std::vector<SnapshotComparisonRow> compare_snapshot(const SnapshotSummary& summary,
                                                    const StageReport& stage) {
  std::vector<SnapshotComparisonRow> rows(snapshot_bucket_count);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    rows[i].bucket = static_cast<SnapshotBucket>(i);
    rows[i].measured_bytes = summary.buckets[i].bytes;
    rows[i].derived_transient_only = true;
  }
  for (const Term& term : stage.terms) {
    const auto bucket = snapshot_bucket_of(term);
    if (!bucket || term.bytes == 0) continue;
    SnapshotComparisonRow& row = rows[static_cast<std::size_t>(*bucket)];
    // Saturate rather than wrap: a derived sum past 2^63 cannot be a real stage.
    if (!checked_add(row.derived_bytes, term.bytes, &row.derived_bytes)) {
      row.derived_bytes = INT64_MAX;
    }
    row.derived_terms.push_back(&term);
    if (term.family != Family::transient) row.derived_transient_only = false;
  }
  for (SnapshotComparisonRow& row : rows) {
    if (row.derived_terms.empty()) row.derived_transient_only = false;
    if (!checked_add(row.measured_bytes, -row.derived_bytes, &row.gap_bytes)) row.gap_bytes = 0;
    const bool m = row.measured_bytes > 0, d = row.derived_bytes > 0;
    row.match = m && d ? (row.gap_bytes == 0 ? SnapshotMatch::match : SnapshotMatch::gap)
                : m    ? SnapshotMatch::measured_only
                : d    ? SnapshotMatch::derived_only
                       : SnapshotMatch::neither;
  }
  return rows;
}

namespace {

std::string exact_amount(std::int64_t bytes) {
  return snapshot_bytes_text(bytes);
}

constexpr std::array<std::string_view, snapshot_bucket_count> bucket_keys = {
    "parameter-gradient-buffers", "optimizer-state",      "activations",
    "all-gather-buffers",         "moe-dispatch-buffers", "other"};

}  // namespace

std::string snapshot_bytes_text(std::int64_t bytes, AmountUnit unit) {
  // Exact bytes, and from one MiB (MB) up the amount in the unit that suits it.
  const std::int64_t small = unit == AmountUnit::gb ? 1'000'000 : std::int64_t{1} << 20;
  if (bytes >= small || bytes <= -small) {
    return group_digits(bytes) + " B (" + compact_amount_text(bytes, unit) + ")";
  }
  return group_digits(bytes) + " B";
}

std::string_view snapshot_bucket_key(SnapshotBucket bucket) {
  const auto i = static_cast<std::size_t>(bucket);
  return i < bucket_keys.size() ? bucket_keys[i] : bucket_keys.back();
}

std::optional<SnapshotBucket> parse_snapshot_bucket_key(std::string_view key) {
  for (std::size_t i = 0; i < bucket_keys.size(); ++i) {
    if (bucket_keys[i] == key) return static_cast<SnapshotBucket>(i);
  }
  return std::nullopt;
}

std::string snapshot_row_status(const SnapshotComparisonRow& row) {
  std::string status(snapshot_match_name(row.match));
  if (row.match == SnapshotMatch::gap) {
    // gap_bytes is measured - derived of two values in [0, 2^63): its negation cannot overflow
    // except at INT64_MIN, which compare_snapshot never produces.
    status += " " + std::string(row.gap_bytes > 0 ? "+" : "-") +
              group_digits(row.gap_bytes > 0 ? row.gap_bytes : -row.gap_bytes) + " B";
  }
  if (row.derived_transient_only && row.match == SnapshotMatch::derived_only) {
    status += " (a transient: alive only during its phase)";
  }
  return status;
}

std::array<SnapshotVerdict, 4> snapshot_verdicts(const std::vector<SnapshotComparisonRow>& rows) {
  std::array<SnapshotVerdict, 4> out = {{{"matches (to the byte)", ""},
                                         {"differs", ""},
                                         {"measured, no derived term", ""},
                                         {"derived, not in the snapshot", ""}}};
  for (const auto& row : rows) {
    const auto k = static_cast<std::size_t>(row.match);
    if (k >= out.size()) continue;
    if (!out[k].buckets.empty()) out[k].buckets += ", ";
    out[k].buckets += std::string(snapshot_bucket_name(row.bucket));
  }
  for (auto& v : out) {
    if (v.buckets.empty()) v.buckets = "-";
  }
  return out;
}

std::string_view snapshot_activation_note() {
  return "(derived activations are the stage's stored activations at its peak, all "
         "micro-batches in flight; a snapshot holds those of the moment it was taken)";
}

std::string_view snapshot_lazy_state_note() {
  return "no optimizer-state allocations in this snapshot: if it was taken before the first "
         "optimizer step, the optimizer state (Adam moments, Muon momentum; master weights with "
         "some optimizers) is not allocated yet: PyTorch optimizers create it lazily in their "
         "first step()";
}

std::string snapshot_frameless_note(const SnapshotSummary& s) {
  if (s.blocks_without_frames <= 0) return {};
  return std::to_string(s.blocks_without_frames) +
         " active blocks carry no Python frames (allocated while recording was off, or on "
         "autograd's thread): counted in other";
}

std::string segment_comparison_text(const SegmentComparison& c, std::string_view reserved_moment,
                                    AmountUnit unit) {
  if (!c.measured) return "segments: the summary lists none (load the snapshot file to compare)";
  const std::string left_out =
      c.measured_segments_left_out > 0
          ? " (" + std::to_string(c.measured_segments_left_out) +
                " of them of sizes the link does not carry: load the file for every size)"
          : "";
  if (!c.derived) {
    return "segments: " + std::to_string(c.measured_segments) + " in the snapshot" + left_out +
           "; the stage was not replayed (no derived ones)";
  }
  return "segments: " + std::to_string(c.measured_segments) + " in the snapshot (reserved " +
         snapshot_bytes_text(c.measured_reserved_bytes, unit) + ")" + left_out + " vs " +
         std::to_string(c.derived_segments) +
         " held by the allocator replay when reserved peaks (" +
         snapshot_bytes_text(c.derived_reserved_bytes, unit) + ", " + std::string(reserved_moment) +
         ")";
}

std::string snapshot_peak_text(const SnapshotSummary& s) {
  if (!s.peak.found) {
    return "no device trace (record with torch.cuda.memory._record_memory_history()): no "
           "measured peak";
  }
  return "measured peak (device trace replay, alloc adds, free_completed removes; counted from "
         "the first recorded event): " +
         exact_amount(s.peak.live_bytes) + " on device " + std::to_string(s.peak.device) +
         " at event " + std::to_string(s.peak.event) + ", an alloc of " +
         exact_amount(s.peak.size) + " (" +
         std::string(snapshot_bucket_name(s.peak.attribution.bucket)) + ") at " +
         (s.peak.where.empty() ? std::string("no frames") : s.peak.where);
}

SnapshotPeakComparison compare_snapshot_peak(const SnapshotSummary& s, const StageReport& stage,
                                             const std::string& derived_moment) {
  SnapshotPeakComparison out;
  out.derived_bytes = stage.peak_bytes;
  if (!s.peak.found) {
    out.text =
        "no measured peak (the snapshot has no device trace) to compare with the derived "
        "peak " +
        exact_amount(stage.peak_bytes) + " at " + derived_moment;
    return out;
  }
  out.measured = true;
  out.measured_bytes = s.peak.live_bytes;
  if (!checked_add(out.measured_bytes, -out.derived_bytes, &out.gap_bytes)) out.gap_bytes = 0;
  std::string where_in_trace = "event " + std::to_string(s.peak.event);
  if (s.peak_trace_events > 0) {
    out.trace_share = static_cast<double>(s.peak.event) / static_cast<double>(s.peak_trace_events);
    where_in_trace += " of " + std::to_string(s.peak_trace_events);
  }
  const std::int64_t magnitude = out.gap_bytes < 0 ? -out.gap_bytes : out.gap_bytes;
  out.text = "measured peak " + exact_amount(out.measured_bytes) + " (" + where_in_trace +
             " on device " + std::to_string(s.peak.device) + ", " +
             std::string(snapshot_bucket_name(s.peak.attribution.bucket)) + ") vs derived peak " +
             exact_amount(out.derived_bytes) + " at " + derived_moment +
             ": gap (measured - derived) " + (out.gap_bytes < 0 ? "-" : "+") +
             exact_amount(magnitude);
  return out;
}

SegmentComparison compare_segments(const SnapshotSummary& summary, const StageReport& stage) {
  SegmentComparison out;
  out.measured = !summary.segment_sizes.empty() || summary.segments_left_out > 0;
  out.measured_segments = summary.segments_left_out;
  out.measured_segments_left_out = summary.segments_left_out;
  out.derived = stage.reserved_replayed;
  out.measured_reserved_bytes = summary.reserved_bytes;
  out.derived_reserved_bytes = stage.reserved_replayed ? stage.peak_reserved_bytes : 0;
  // Key: (small pool, -bytes) so that the map's order is large pool first, largest size first.
  std::map<std::pair<bool, std::int64_t>, SegmentSizeRow> rows;
  const auto row = [&](bool small, std::int64_t bytes) -> SegmentSizeRow& {
    SegmentSizeRow& r = rows[{small, -bytes}];
    r.small_pool = small;
    r.segment_bytes = bytes;
    return r;
  };
  for (const auto& [key, count] : summary.segment_sizes) {
    row(key.first, key.second).measured_count += count;
    out.measured_segments += count;
  }
  if (out.derived) {
    for (const HeldSegment& seg : stage.segments_at_reserved_peak) {
      ++row(seg.small_pool, seg.bytes).derived_count;
      ++out.derived_segments;
    }
  }
  for (auto& [key, r] : rows) out.rows.push_back(r);
  return out;
}

}  // namespace stagemem
