#include "config/repair.h"

#include <algorithm>
#include <functional>
#include <set>
#include <string_view>

#include "base/units.h"
#include "parallel/layout.h"
#include "parallel/schedule.h"

namespace stagemem {
namespace {

bool divides(std::int64_t divisor, std::int64_t value) {
  return divisor > 0 && value % divisor == 0;
}

std::string n(std::int64_t value) {
  return group_digits(value);
}

// One number TP must divide, and how a label names it ("4 KV heads").
struct Requirement {
  std::int64_t value = 0;
  std::string what;
};

struct Uses {
  bool gqa = false, mla = false, kda = false, moe = false, dense = false;
};

Uses uses_of(const Model& model) {
  Uses u;
  const auto note = [&u](const LayerKind& k) {
    u.gqa |= k.attention == AttentionKind::gqa;
    u.mla |= k.attention == AttentionKind::mla;
    u.kda |= k.attention == AttentionKind::kda;
    u.moe |= k.mlp == MlpKind::moe;
    u.dense |= k.mlp == MlpKind::dense;
  };
  for (const LayerKind& k : model.layers) note(k);
  if (model.mtp_layers > 0) note(model.mtp_layer);
  return u;
}

// What validate_layout (parallel/layout.cpp, check_model_divisible) requires TP to divide, plus
// the sequence's share of one CP rank under sequence parallelism (config.cpp).
std::vector<Requirement> tp_requirements(const Config& config, const Model& model) {
  const Uses u = uses_of(model);
  std::vector<Requirement> out;
  if (u.gqa) {
    out.push_back({model.gqa.heads, n(model.gqa.heads) + " attention heads"});
    out.push_back({model.gqa.kv_heads, n(model.gqa.kv_heads) + " KV heads"});
  }
  if (u.mla) out.push_back({model.mla.heads, n(model.mla.heads) + " MLA heads"});
  if (u.kda) out.push_back({model.kda.heads, n(model.kda.heads) + " KDA heads"});
  if (u.dense) {
    out.push_back(
        {model.dense_mlp.intermediate, "the dense MLP width " + n(model.dense_mlp.intermediate)});
  }
  if (u.moe && model.moe.shared_experts > 0) {
    const std::int64_t width = model.moe.shared_experts * model.moe.shared_intermediate;
    out.push_back({width, "the shared experts' width " + n(width)});
  }
  if (model.mtp_layers > 0) out.push_back({model.hidden, "the hidden size " + n(model.hidden)});
  const ParallelLayout& p = config.parallel;
  const std::int64_t cp = std::max<std::int64_t>(1, p.context_parallel);
  if (p.sequence_parallel && divides(cp, config.training.sequence_length)) {
    out.push_back({config.training.sequence_length / cp,
                   "seq " + n(config.training.sequence_length) +
                       (cp > 1 ? " / CP " + n(cp) : std::string()) + " (sequence parallel)"});
  }
  return out;
}

std::string joined(const std::vector<std::string>& parts) {
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) out += i + 1 == parts.size() ? " and " : ", ";
    out += parts[i];
  }
  return out;
}

// The largest value in [1, below) that satisfies `ok`; 0 when none does.
std::int64_t largest_below(std::int64_t below, const std::function<bool(std::int64_t)>& ok) {
  for (std::int64_t v = below - 1; v >= 1; --v) {
    if (ok(v)) return v;
  }
  return 0;
}

// The smallest multiple of `step` that is >= value (and >= step).
std::int64_t round_up(std::int64_t value, std::int64_t step) {
  if (step <= 0) return value;
  return std::max(step, (value + step - 1) / step * step);
}

Repair make(Config repaired, std::string_view name, std::int64_t before, std::int64_t after,
            const std::string& reason) {
  Repair r{
      .config = std::move(repaired), .label = {}, .change = {}, .action = {}, .reason = reason};
  r.action = "Set " + std::string(name) + " to " + n(after);
  r.label = r.action + " (" + reason + ")";
  r.change = std::string(name) + " " + n(before) + " -> " + n(after) + " (" + reason + ")";
  return r;
}

// Whether the layout's DP is fixed (given, or derived from a given world size) rather than
// derived from the expert groups.
bool data_parallel_fixed(const ParallelLayout& p) {
  return p.data_parallel > 0 || p.world_size > 0;
}

std::optional<Repair> repair_tp(const Config& config, const Model& model) {
  const ParallelLayout& p = config.parallel;
  const std::int64_t tp = p.tensor_parallel;
  const auto requirements = tp_requirements(config, model);
  std::vector<std::string> failing;
  for (const Requirement& r : requirements) {
    if (!divides(tp, r.value)) failing.push_back(r.what);
  }
  if (failing.empty() || tp <= 1) return std::nullopt;
  const auto ok = [&](std::int64_t v) {
    return std::all_of(requirements.begin(), requirements.end(),
                       [v](const Requirement& r) { return divides(v, r.value); });
  };
  // Prefer a TP that keeps a given world size whole (TP x PP x CP divides it).
  const std::int64_t rest = p.pipeline_parallel * std::max<std::int64_t>(1, p.context_parallel);
  std::int64_t to = 0;
  if (p.world_size > 0 && p.data_parallel == 0) {
    to =
        largest_below(tp, [&](std::int64_t v) { return ok(v) && divides(v * rest, p.world_size); });
  }
  if (to == 0) to = largest_below(tp, ok);
  if (to == 0) return std::nullopt;
  Config repaired = config;
  repaired.parallel.tensor_parallel = to;
  return make(std::move(repaired), "TP", tp, to, "divides " + joined(failing));
}

// EP must divide the routed experts and, with a fixed DP, lie within TP x CP x DP / ETP.
std::optional<Repair> repair_ep(const Config& config, const Model& model) {
  const ParallelLayout& p = config.parallel;
  const std::int64_t ep = p.expert_parallel;
  const std::int64_t experts = model.moe.routed_experts;
  const std::int64_t inner =
      p.tensor_parallel * std::max<std::int64_t>(1, p.context_parallel) * data_parallel_size(p);
  const std::int64_t etp = std::max<std::int64_t>(1, p.expert_tensor_parallel);
  const bool experts_ok = divides(ep, experts);
  const bool groups_ok = divides(ep * etp, inner);
  if (experts_ok && groups_ok) return std::nullopt;
  if (experts_ok && !groups_ok && p.world_size == 0 && p.data_parallel > 0) {
    // DP was typed: the smallest DP above it whose stage holds the expert groups.
    const std::int64_t tp_cp = p.tensor_parallel * std::max<std::int64_t>(1, p.context_parallel);
    std::int64_t dp = p.data_parallel + 1;
    while (!divides(ep * etp, tp_cp * dp) && dp <= (std::int64_t{1} << 24)) ++dp;
    if (dp > (std::int64_t{1} << 24)) return std::nullopt;
    Config repaired = config;
    repaired.parallel.data_parallel = dp;
    return make(std::move(repaired), "DP", p.data_parallel, dp,
                "TP x CP x DP = " + n(tp_cp * dp) + " ranks hold EP " + n(ep) + " x ETP " + n(etp));
  }
  const bool fixed = data_parallel_fixed(p);
  const std::int64_t to = largest_below(ep, [&](std::int64_t v) {
    return divides(v, experts) && (!fixed || divides(v * etp, inner));
  });
  if (to == 0) return std::nullopt;
  Config repaired = config;
  repaired.parallel.expert_parallel = to;
  std::vector<std::string> why;
  if (!experts_ok) why.push_back(n(experts) + " routed experts");
  if (!groups_ok && fixed) why.push_back("TP x CP x DP / ETP = " + n(inner / etp));
  return make(std::move(repaired), "EP", ep, to, "divides " + joined(why));
}

std::optional<Repair> repair_etp(const Config& config, const Model& model) {
  const ParallelLayout& p = config.parallel;
  const std::int64_t etp = p.expert_tensor_parallel;
  const std::int64_t width = model.moe.expert_intermediate;
  if (divides(etp, width)) return std::nullopt;
  const std::int64_t to = largest_below(etp, [&](std::int64_t v) { return divides(v, width); });
  if (to == 0) return std::nullopt;
  Config repaired = config;
  repaired.parallel.expert_tensor_parallel = to;
  return make(std::move(repaired), "ETP", etp, to,
              "divides the expert intermediate size " + n(width));
}

std::optional<Repair> repair_world_size(const Config& config, const Model& model) {
  const ParallelLayout& p = config.parallel;
  const std::int64_t cp = std::max<std::int64_t>(1, p.context_parallel);
  const std::int64_t fixed = p.tensor_parallel * p.pipeline_parallel * cp;
  if (p.world_size <= 0 || fixed <= 0) return std::nullopt;
  const std::string parts =
      "TP " + n(p.tensor_parallel) + " x PP " + n(p.pipeline_parallel) + " x CP " + n(cp);
  if (p.data_parallel > 0) {
    if (p.world_size == fixed * p.data_parallel) return std::nullopt;
    Config repaired = config;
    if (divides(fixed, p.world_size)) {
      // The world size the user gave decides: DP is derived from it.
      const std::int64_t dp = p.world_size / fixed;
      repaired.parallel.data_parallel = 0;
      return make(std::move(repaired), "DP", p.data_parallel, dp,
                  n(p.world_size) + " GPUs / (" + parts + ")");
    }
    repaired.parallel.world_size = 0;
    return make(std::move(repaired), "world size", p.world_size, fixed * p.data_parallel,
                parts + " x DP " + n(p.data_parallel));
  }
  if (divides(fixed, p.world_size)) return std::nullopt;
  // The nearest multiple of TP x PP x CP (the larger one on a tie) whose DP also holds the expert
  // groups (EP x ETP divides TP x CP x DP), when the model has routed experts.
  const std::int64_t expert =
      p.expert_parallel * std::max<std::int64_t>(1, p.expert_tensor_parallel);
  const bool experts = uses_of(model).moe && expert > 1;
  const auto holds = [&](std::int64_t world) {
    return world >= fixed &&
           (!experts || divides(expert, p.tensor_parallel * cp * (world / fixed)));
  };
  const std::int64_t below = p.world_size / fixed * fixed;
  std::int64_t to = 0;
  for (std::int64_t k = 0; k < max_step_candidates && to == 0; ++k) {
    const std::int64_t up = below + (k + 1) * fixed;
    const std::int64_t down = below - k * fixed;
    const bool down_ok = holds(down);
    const bool up_ok = holds(up);
    if (down_ok && (!up_ok || p.world_size - down < up - p.world_size)) {
      to = down;
    } else if (up_ok) {
      to = up;
    }
  }
  if (to == 0 || to > (std::int64_t{1} << 32)) return std::nullopt;
  Config repaired = config;
  repaired.parallel.world_size = to;
  return make(std::move(repaired), "world size", p.world_size, to,
              "a multiple of " + parts + " = " + n(fixed) +
                  (experts ? " whose DP holds EP " + n(p.expert_parallel) + " x ETP " +
                                 n(std::max<std::int64_t>(1, p.expert_tensor_parallel))
                           : std::string()));
}

// PP (or VPP) larger than the model's layers allow; dualpipev with a VPP it does not run.
std::optional<Repair> repair_pipeline(const Config& config, const Model& model, bool vpp_field) {
  const ParallelLayout& p = config.parallel;
  const auto layers = static_cast<std::int64_t>(model.layers.size());
  const bool v_shape = p.schedule == PipelineSchedule::dualpipev;
  Config repaired = config;
  if (vpp_field && v_shape && p.virtual_stages != 1 && p.virtual_stages != dualpipev_chunks) {
    repaired.parallel.virtual_stages = 1;
    return make(std::move(repaired), "VPP", p.virtual_stages, 1,
                "dualpipev runs its own 2 chunks per rank");
  }
  const std::int64_t chunks = v_shape ? dualpipev_chunks : p.virtual_stages;
  if (layers < 1 || p.pipeline_parallel * chunks <= layers) return std::nullopt;
  if (vpp_field && !v_shape && p.virtual_stages > 1) {
    const std::int64_t to = std::max<std::int64_t>(1, layers / p.pipeline_parallel);
    if (to >= p.virtual_stages) return std::nullopt;
    repaired.parallel.virtual_stages = to;
    return make(std::move(repaired), "VPP", p.virtual_stages, to,
                "PP x VPP within the model's " + n(layers) + " layers");
  }
  const std::int64_t to = std::max<std::int64_t>(1, layers / chunks);
  if (to >= p.pipeline_parallel) return std::nullopt;
  repaired.parallel.pipeline_parallel = to;
  return make(std::move(repaired), "PP", p.pipeline_parallel, to,
              std::string(chunks > 1 ? "PP x " + n(chunks) + " chunks within" : "at most") +
                  " the model's " + n(layers) + " layers");
}

std::optional<Repair> repair_attn_res_aligned(const Config& config, const Model& model) {
  const ParallelLayout& p = config.parallel;
  const std::int64_t block = model.attn_res.block_size;
  const auto layers = static_cast<std::int64_t>(model.layers.size());
  if (block <= 0 || p.virtual_stages != 1 || p.schedule == PipelineSchedule::dualpipev) {
    return std::nullopt;
  }
  const std::int64_t blocks = (layers + block - 1) / block;
  if (p.pipeline_parallel <= blocks) return std::nullopt;
  Config repaired = config;
  repaired.parallel.pipeline_parallel = blocks;
  return make(std::move(repaired), "PP", p.pipeline_parallel, blocks,
              "one whole AttnRes block per stage at least: " + n(blocks) + " blocks");
}

std::optional<Repair> repair_sequence(const Config& config, const Model& model) {
  const ParallelLayout& p = config.parallel;
  const std::int64_t seq = config.training.sequence_length;
  const std::int64_t cp = std::max<std::int64_t>(1, p.context_parallel);
  const std::int64_t tp = std::max<std::int64_t>(1, p.tensor_parallel);
  const std::int64_t split = cp * (p.sequence_parallel ? tp : 1);
  if (seq < 1 || divides(split, seq)) return std::nullopt;
  Config repaired = config;
  const bool needs_sp = uses_of(model).moe && tp > 1;
  if (p.sequence_parallel && cp <= 1 && !needs_sp) {
    repaired.parallel.sequence_parallel = false;
    const std::string reason = "seq " + n(seq) + " does not divide by TP " + n(tp);
    return Repair{.config = std::move(repaired),
                  .label = "Turn sequence parallelism off",
                  .change = "sequence parallelism on -> off (" + reason + ")",
                  .action = "Turn sequence parallelism off",
                  .reason = reason};
  }
  const std::int64_t to = round_up(seq, split);
  if (to > (std::int64_t{1} << 24)) return std::nullopt;
  repaired.training.sequence_length = to;
  return make(std::move(repaired), "seq", seq, to,
              "a multiple of " +
                  std::string(p.sequence_parallel ? (cp > 1 ? "CP x TP" : "TP") : "CP") + " = " +
                  n(split));
}

std::optional<Repair> repair_global_batch(const Config& config) {
  const ParallelLayout& p = config.parallel;
  const TrainingConfig& t = config.training;
  const std::int64_t dp = data_parallel_size(p);
  if (t.micro_batch < 1 || dp < 1 || t.global_batch < 1) return std::nullopt;
  const std::int64_t per_step = t.micro_batch * dp;
  const std::string per_step_text =
      "mbs " + n(t.micro_batch) + " x DP " + n(dp) + " = " + n(per_step);
  const auto result = [&](std::int64_t to, const std::string& reason) -> std::optional<Repair> {
    if (to == t.global_batch || to > (std::int64_t{1} << 30)) return std::nullopt;
    Config repaired = config;
    repaired.training.global_batch = to;
    return make(std::move(repaired), "gbs", t.global_batch, to, reason);
  };
  if (!divides(per_step, t.global_batch)) {
    return result(round_up(t.global_batch, per_step), "a multiple of " + per_step_text);
  }
  const std::int64_t m = t.global_batch / per_step;
  const std::int64_t pp = p.pipeline_parallel;
  if (p.schedule == PipelineSchedule::dualpipev && m < 2 * pp) {
    return result(2 * pp * per_step, "M = " + n(2 * pp) + " micro-batches, 2 x PP for dualpipev");
  }
  if (p.schedule != PipelineSchedule::dualpipev && p.virtual_stages > 1 && pp > 1 &&
      (m < pp || m % pp != 0)) {
    const std::int64_t to = round_up(t.global_batch, per_step * pp);
    return result(to, "M = " + n(to / per_step) + " micro-batches, a multiple of PP " + n(pp) +
                          " for the interleaved schedule");
  }
  return std::nullopt;
}

std::optional<Repair> repair_recompute_layers(const Config& config, const Model& model) {
  const RecomputeConfig& r = config.training.recompute;
  const auto layers = static_cast<std::int64_t>(model.layers.size());
  if (r.policy != RecomputePolicy::full || r.layers <= layers || layers < 1) return std::nullopt;
  Config repaired = config;
  repaired.training.recompute.layers = layers;
  return make(std::move(repaired), "recompute layers", r.layers, layers,
              "the model's " + n(layers) + " layers");
}

// "measurements[3].stage" whose known rank lies on another pipeline stage.
std::optional<Repair> repair_measurement_stage(const Config& config, std::string_view field) {
  constexpr std::string_view prefix = "measurements[";
  const auto close = field.find(']');
  if (!field.starts_with(prefix) || close == std::string_view::npos ||
      field.substr(close) != "].stage") {
    return std::nullopt;
  }
  std::size_t index = 0;
  for (char c : field.substr(prefix.size(), close - prefix.size())) {
    if (c < '0' || c > '9') return std::nullopt;
    index = index * 10 + static_cast<std::size_t>(c - '0');
    if (index > max_measurements) return std::nullopt;
  }
  if (index >= config.measurements.size()) return std::nullopt;
  const Measurement& m = config.measurements[index];
  const std::int64_t per_stage =
      config.parallel.pipeline_parallel > 0
          ? world_size(config.parallel) / config.parallel.pipeline_parallel
          : 0;
  if (m.rank < 0 || per_stage <= 0 || m.rank >= world_size(config.parallel)) return std::nullopt;
  const std::int64_t stage = m.rank / per_stage;
  if (stage == m.stage) return std::nullopt;
  Config repaired = config;
  repaired.measurements[index].stage = stage;
  return make(std::move(repaired), std::string(field.substr(0, close + 1)) + " stage", m.stage,
              stage, "rank " + n(m.rank) + " is on stage " + n(stage));
}

// Whether the diagnostic `name` names `field` (by path, "group.key" or the path's tail), as the
// core's validators spell field names.
bool names_field(std::string_view name, const ConfigField& field) {
  if (name == field.path) return true;
  const std::string_view group = field.path.substr(0, field.path.find('.'));
  if (name.size() == group.size() + 1 + field.key.size() && name.starts_with(group) &&
      name[group.size()] == '.' && name.ends_with(field.key)) {
    return true;
  }
  return name.find('.') != std::string_view::npos && field.path.size() > name.size() &&
         field.path.ends_with(name) && field.path[field.path.size() - name.size() - 1] == '.';
}

}  // namespace

std::optional<Repair> repair_for(const Config& config, const Model& model,
                                 const FieldMessage& error) {
  const std::string_view field = error.field;
  std::optional<Repair> r;
  if (field == "parallel.tp") {
    r = repair_tp(config, model);
  } else if (field == "parallel.ep") {
    if (uses_of(model).moe) r = repair_ep(config, model);
  } else if (field == "parallel.etp") {
    if (uses_of(model).moe) r = repair_etp(config, model);
  } else if (field == "parallel.world_size") {
    r = repair_world_size(config, model);
  } else if (field == "parallel.pp" || field == "parallel.vpp") {
    r = repair_pipeline(config, model, field == "parallel.vpp");
  } else if (field == "parallel.attnres_aligned") {
    r = repair_attn_res_aligned(config, model);
  } else if (field == "parallel.sequence_parallel") {
    if (!config.parallel.sequence_parallel) {
      Config repaired = config;
      repaired.parallel.sequence_parallel = true;
      const std::string reason = "MoE with TP " + n(config.parallel.tensor_parallel) + " needs it";
      r = Repair{.config = std::move(repaired),
                 .label = "Enable sequence parallelism",
                 .change = "sequence parallelism off -> on (" + reason + ")",
                 .action = "Enable sequence parallelism",
                 .reason = reason};
    }
  } else if (field == "training.sequence_length") {
    r = repair_sequence(config, model);
  } else if (field == "training.global_batch") {
    r = repair_global_batch(config);
  } else if (field == "recompute.layers") {
    r = repair_recompute_layers(config, model);
  } else {
    r = repair_measurement_stage(config, field);
  }
  if (r && r->config == config) return std::nullopt;
  return r;
}

NearestLayout nearest_valid_layout(const Config& config, const Model& model) {
  NearestLayout out{.config = config, .changes = {}};
  for (int round = 0; round < 16; ++round) {
    const Diagnostics d = validate(out.config, model);
    if (d.ok()) break;
    bool applied = false;
    for (const FieldMessage& error : d.errors) {
      if (auto r = repair_for(out.config, model, error)) {
        out.config = std::move(r->config);
        out.changes.push_back(std::move(r->change));
        applied = true;
        break;
      }
    }
    if (!applied) break;
  }
  return out;
}

void set_integer_field(Config& config, const ConfigField& field, std::int64_t value) {
  if (field.kind != FieldKind::integer || field.integer == nullptr) return;
  *field.integer(config) = value;
  if (field.key == "world" && value > 0) config.parallel.data_parallel = 0;
  if (field.key == "dp" && value > 0) config.parallel.world_size = 0;
}

std::int64_t step_value(const Config& config, const Model& model, const ConfigField& field,
                        int direction) {
  if (field.kind != FieldKind::integer || field.integer == nullptr) return 0;
  Config scratch = config;
  std::int64_t current = *field.integer(scratch);
  // A derived DP or world size (0) steps from the value it derives to.
  if (field.key == "dp" && current == 0) current = data_parallel_size(config.parallel);
  if (field.key == "world" && current == 0) current = world_size(config.parallel);
  const bool bytes = field.path.ends_with("bytes");
  const std::int64_t step = (bytes ? std::int64_t{1} << 30 : 1) * (direction < 0 ? -1 : 1);
  const auto in_range = [&](std::int64_t v) { return v >= field.min && v <= field.max; };
  if (bytes) return in_range(current + step) ? current + step : current;
  std::set<std::string> had;
  for (const FieldMessage& e : validate(config, model).errors) had.insert(e.field);
  std::int64_t v = current;
  for (int tries = 0; tries < max_step_candidates; ++tries) {
    v += step;
    if (!in_range(v)) return current;
    Config candidate = config;
    set_integer_field(candidate, field, v);
    const Diagnostics d = validate(candidate, model);
    // Skipped: a value the field itself cannot have (TP that does not divide the heads), or one
    // that breaks another field without an obvious repair. A new error that has one (MoE with
    // TP 2 needs sequence parallelism) is shown with its fix instead of making "+" do nothing.
    const bool clean = std::none_of(d.errors.begin(), d.errors.end(), [&](const FieldMessage& e) {
      return names_field(e.field, field) ||
             (!had.contains(e.field) && !repair_for(candidate, model, e).has_value());
    });
    if (clean) return v;
  }
  return current;
}

}  // namespace stagemem
