#include "config_sources.h"

#include <array>
#include <cstdio>

#include "bounded_read.h"
#include "config/config_json.h"
#include "config/measurement_text.h"
#include "config/production_layouts.h"
#include "config/url_fragment.h"
#include "measured/memory_log.h"
#include "model/hf_config.h"
#include "model/model_text.h"
#include "model/presets.h"

namespace stagemem_cli {
namespace {

using stagemem::Config;
using stagemem::ConfigField;
using stagemem::Diagnostics;
using stagemem::FieldKind;

// Megatron-style and earlier stagemem spellings of table fields. `value`, when set, is what the
// alias means by itself (a switch); otherwise it takes the field's value.
struct Alias {
  std::string_view name;  // normalized: without "--", '-' as '_'
  std::string_view key;
  std::string_view value = {};
};
constexpr std::array<Alias, 38> aliases = {{
    {"tensor_model_parallel_size", "tp"},
    {"pipeline_model_parallel_size", "pp"},
    {"virtual_pipeline_model_parallel_size", "vpp"},
    {"context_parallel_size", "cp"},
    {"expert_model_parallel_size", "ep"},
    {"expert_tensor_parallel_size", "etp"},
    {"data_parallel_size", "dp"},
    {"world_size", "world"},
    {"sequence_parallel", "sp"},
    {"make_vocab_size_divisible_by", "vocab_multiple"},
    {"layers_per_stage", "stages"},
    {"first_stage_layers", "first_layers"},
    {"decoder_first_pipeline_num_layers", "first_layers"},
    {"last_stage_layers", "last_layers"},
    {"decoder_last_pipeline_num_layers", "last_layers"},
    {"layout_string", "layout"},
    {"pipeline_model_parallel_layout", "layout"},
    {"attnres_aligned", "split", "attnres-aligned"},
    {"seq_length", "seq"},
    {"sequence_length", "seq"},
    {"micro_batch_size", "mbs"},
    {"global_batch_size", "gbs"},
    {"recompute_granularity", "recompute"},
    {"recompute_num_layers", "recompute_layers"},
    {"moe_router_dtype", "router_dtype"},
    {"weights_dtype", "weights"},
    {"expert_weights_dtype", "expert_weights"},
    {"grad_dtype", "grads"},
    {"master_dtype", "master"},
    {"main_params_dtype", "master"},
    {"moment_dtype", "moments"},
    {"exp_avg_dtype", "moments"},
    {"muon_skip_routers", "muon_routers", "0"},
    {"muon_skip_experts", "muon_experts", "0"},
    {"muon_embedding_and_head", "muon_embedding", "1"},
    {"custom_model", "custom"},
    {"device_preset", "device"},
    // Ascend MindSpeed's flag for the same schedule (docs/features/dualpipev.md).
    {"schedules_method", "schedule"},
}};

constexpr const char* sources_help =
    "configuration sources (applied left to right; later ones override earlier ones):\n"
    "  --config FILE.json       a stagemem JSON configuration (`stagemem url decode` writes one)\n"
    "  --url LINK               a whole stagemem link or its fragment, e.g. '#v=1&pp=8'\n"
    "  --preset NAME            a built-in model (see `stagemem presets`)\n"
    "  --hf-config FILE         a Hugging Face config.json (becomes the custom model)\n"
    "  --production-layout      the preset's production parallel layout and its optimizer\n"
    "                           (kimi-k3: TP 1, PP 8, EP 28, DP 28, distributed-muon); a later\n"
    "                           --optimizer overrides the optimizer\n"
    "  --use-distributed-optimizer  adam -> distributed-adam, muon -> distributed-muon\n"
    "measured values (never inputs of the model; compared in cross-checks), repeatable:\n"
    "  --measured [FIGURE:]POINT[/STAGE][/rRANK]=AMOUNT@SOURCE\n"
    "      POINT: after-model-init | after-optimizer-init | after-first-step |\n"
    "             steady-state-peak | term:NAME (a term as the report names it); STAGE default 0\n"
    "      FIGURE: allocated | max-allocated | reserved | max-reserved; RANK: global rank\n"
    "      AMOUNT: bytes, or a number with B, KiB, MiB, GiB, TiB, KB, MB, GB, TB\n"
    "      e.g. --measured 'after-first-step/0=141.1GiB@torch.cuda.memory_allocated, run 17'\n"
    "  --memory-log FILE   Megatron's memory report lines ('[Rank r] (after N iterations) memory\n"
    "      (MB) | allocated: ...'), '-' for standard input: each rank's figures become readings\n"
    "      on its stage (Megatron's rank order): allocated -> after-first-step, max allocated ->\n"
    "      steady-state-peak; reserved figures beside them\n"
    "  --gap KIND[/STAGE]=AMOUNT@SOURCE   a MEASURED named gap (every stage without /STAGE)\n"
    "      KIND: allocator-fragmentation | communication-buffers | runtime-context |\n"
    "            math-library-workspaces\n";

std::string normalized(std::string_view flag) {
  std::string out(flag.substr(2));
  for (char& c : out) c = c == '-' ? '_' : c;
  return out;
}

std::string dashed(std::string_view key) {
  std::string out(key);
  for (char& c : out) c = c == '_' ? '-' : c;
  return out;
}

std::string_view value_name(const ConfigField& field) {
  switch (field.kind) {
    case FieldKind::integer:
      return "N";
    case FieldKind::boolean:
      return "[0|1]";
    case FieldKind::text:
      return "TEXT";
    case FieldKind::choice:
      return "NAME";
    case FieldKind::integer_list:
      return "LIST";
    case FieldKind::number:
      return "X";
    case FieldKind::name_set:
      return "SET";
  }
  return "VALUE";
}

// The split a layer-assignment field implies: giving its value means using it.
std::string_view implied_split(std::string_view key) {
  if (key == "stages") return "explicit";
  if (key == "first_layers" || key == "last_layers") return "first-last";
  if (key == "layout") return "layout-string";
  return {};
}

void append(Diagnostics& into, Diagnostics&& from) {
  for (auto& e : from.errors) into.errors.push_back(std::move(e));
  for (auto& w : from.warnings) into.warnings.push_back(std::move(w));
}

std::string preset_list() {
  std::string names;
  for (std::string_view n : stagemem::preset_names())
    names += (names.empty() ? "" : ", ") + std::string(n);
  return names;
}

constexpr std::size_t max_sweep_values = 1000;

}  // namespace

std::optional<std::string> CommandLine::option(std::string_view name) const {
  std::optional<std::string> value;
  for (const auto& [given, text] : options) {
    if (given == name) value = text;
  }
  return value;
}

void print_diagnostics(const Diagnostics& d) {
  for (const auto& e : d.errors)
    std::fprintf(stderr, "error: %s: %s\n", e.field.c_str(), e.message.c_str());
  for (const auto& w : d.warnings)
    std::fprintf(stderr, "warning: %s: %s\n", w.field.c_str(), w.message.c_str());
}

std::optional<std::string> read_text_file(const std::string& path, std::string_view flag,
                                          std::size_t limit, Diagnostics& d) {
  stagemem_io::ReadResult read = stagemem_io::read_file(path, limit);
  if (read.status != stagemem_io::ReadStatus::ok) {
    d.error(std::string(flag), stagemem_io::failure_text(read, stagemem_io::quoted_path(path)));
    return std::nullopt;
  }
  return std::move(read.bytes);
}

std::string command_options_help(std::span<const CommandOption> options) {
  std::string out;
  for (const CommandOption& o : options) {
    std::string head =
        std::string(o.name) + (o.value_name.empty() ? "" : " " + std::string(o.value_name));
    if (head.size() < 23) head.resize(23, ' ');
    out += "  " + head + "  " + std::string(o.help) + "\n";
  }
  return out;
}

std::string configuration_flags_help() {
  std::string out = sources_help;
  out += "configuration fields (the keys of links and of `--config` files' JSON paths):\n";
  const Config defaults;
  for (const ConfigField& field : stagemem::config_fields()) {
    std::string head = "--" + dashed(field.key) + " " + std::string(value_name(field));
    if (head.size() < 23) head.resize(23, ' ');
    std::string shown_default = stagemem::format_field_text(field, defaults);
    if (shown_default.empty()) shown_default = "(none)";
    out += "  " + head + "  " + std::string(field.help) + "\n";
    out += "      " + stagemem::allowed_values(field) + "; default " + shown_default + "; JSON " +
           std::string(field.path) + "\n";
  }
  out += "aliases (Megatron-LM spellings, MindSpeed's --schedules-method and earlier flags):\n";
  for (const Alias& alias : aliases) {
    out += "  --" + dashed(alias.name) + " = --" + dashed(alias.key) +
           (alias.value.empty() ? "" : " " + std::string(alias.value)) + "\n";
  }
  return out;
}

namespace {

// Each --memory-log FILE ("-": standard input) as measurements of `config`'s layout.
void add_memory_logs(const std::vector<std::string>& paths, Config& config, Diagnostics& d) {
  bool stdin_read = false;
  for (const std::string& path : paths) {
    std::optional<std::string> text;
    if (path == "-") {
      if (stdin_read) {
        d.error("--memory-log", "standard input (-) can be read once");
        continue;
      }
      stdin_read = true;
      stagemem_io::ReadResult read = stagemem_io::read_descriptor(0, stagemem::max_log_bytes);
      if (read.status == stagemem_io::ReadStatus::ok) {
        text = std::move(read.bytes);
      } else {
        d.error("--memory-log", stagemem_io::failure_text(read, "standard input (-)"));
      }
    } else {
      text = read_text_file(path, "--memory-log", stagemem::max_log_bytes, d);
    }
    if (!text) continue;
    const std::string name = path == "-" ? "stdin" : path.substr(path.rfind('/') + 1);
    const std::string field = "--memory-log " + name.substr(0, 60);
    const auto readings = stagemem::parse_memory_log(*text, field, d);
    if (readings.empty() && d.ok()) {
      d.error(field,
              "no Megatron memory report line (\"[Rank r] (after N iterations) memory "
              "(MB) | allocated: ... | max allocated: ...\") in it");
      continue;
    }
    const std::size_t room = stagemem::max_measurements -
                             std::min(stagemem::max_measurements, config.measurements.size());
    for (auto& m :
         stagemem::memory_log_measurements(readings, config.parallel, name, field, room, d))
      config.measurements.push_back(std::move(m));
  }
}

}  // namespace

CommandLine parse_command_line(std::span<const std::string_view> args, const ParseRules& rules) {
  CommandLine line;
  std::vector<std::string> memory_logs;
  Config& config = line.config;
  Diagnostics& d = line.diagnostics;
  // What each field and command option was set to on this command line, to refuse a second
  // setting (`--pp 4 --pp 8`, or a flag and its alias) instead of silently taking the last.
  // Sources (--config, --url) may still be layered: they are files and links, not repeats.
  std::vector<std::pair<const void*, std::string>> given;
  const auto given_once = [&](const void* what, std::string_view flag, std::string_view value) {
    const std::string shown = std::string(flag.substr(0, 64)) +
                              (value.empty() ? "" : " " + std::string(value.substr(0, 64)));
    for (const auto& [earlier, text] : given) {
      if (earlier != what) continue;
      d.error(std::string(flag.substr(0, 64)),
              "given twice, first `" + text + "`, then `" + shown + "`; give it once");
      return false;
    }
    given.emplace_back(what, shown);
    return true;
  };

  // Applies `value` to `field`, or records a sweep axis; `flag` names errors.
  const auto set_field = [&](const ConfigField& field, std::string_view value,
                             std::string_view flag) {
    if (!given_once(&field, flag, value)) return;
    std::erase_if(line.axes, [&](const stagemem::SweepAxis& axis) { return axis.field == &field; });
    if (rules.allow_lists && stagemem::sweepable(field) &&
        value.find(',') != std::string_view::npos) {
      std::optional<stagemem::SweepAxis> axis =
          stagemem::parse_sweep_axis(field, value, config, max_sweep_values, flag, d);
      if (!axis) return;
      stagemem::parse_field_text(field, axis->values.front(), config, d, flag);
      line.axes.push_back(std::move(*axis));
    } else if (!stagemem::parse_field_text(field, value, config, d, flag)) {
      return;
    }
    if (field.key == "model" || field.key == "custom") line.model_given = true;
    if (const std::string_view split = implied_split(field.key); !split.empty()) {
      stagemem::parse_field_text(*stagemem::find_field_by_key("split"), split, config, d, flag);
    }
  };

  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string_view flag = args[i];
    const auto next_value = [&]() -> std::optional<std::string_view> {
      if (i + 1 >= args.size()) {
        d.error(std::string(flag), "needs a value");
        return std::nullopt;
      }
      return args[++i];
    };
    if (flag == "--help" || flag == "-h") {
      line.help = true;
      continue;
    }
    if (!flag.starts_with("--") || flag.size() == 2) {
      if (rules.allow_positional) {
        line.positional.emplace_back(flag);
      } else {
        d.error(std::string(flag.substr(0, 64)), "unexpected argument; flags start with --");
      }
      continue;
    }
    bool command_option = false;
    for (const CommandOption& o : rules.options) {
      if (o.name != flag) continue;
      command_option = true;
      if (o.value_name.empty()) {
        if (given_once(&o, flag, "")) line.options.emplace_back(o.name, "");
      } else if (const auto value = next_value()) {
        if (given_once(&o, flag, *value)) line.options.emplace_back(o.name, std::string(*value));
      }
    }
    if (command_option) continue;

    const std::string name = normalized(flag);
    if (name == "config") {
      const auto path = next_value();
      if (!path) continue;
      if (const auto text =
              read_text_file(std::string(*path), flag, stagemem::max_config_json_bytes, d)) {
        stagemem::DecodedConfig decoded = stagemem::config_from_json(*text, config);
        if (decoded.diagnostics.ok()) config = std::move(decoded.config);
        append(d, std::move(decoded.diagnostics));
        line.model_given = true;
      }
    } else if (name == "url") {
      const auto link = next_value();
      if (!link) continue;
      stagemem::DecodedFragment decoded = stagemem::decode_fragment(*link, config);
      if (decoded.diagnostics.ok()) config = std::move(decoded.config);
      append(d, std::move(decoded.diagnostics));
      line.model_given = true;
    } else if (name == "preset") {
      const auto preset = next_value();
      if (!preset) continue;
      // --preset and --model set the same field.
      if (!given_once(stagemem::find_field_by_key("model"), flag, *preset)) continue;
      if (!stagemem::find_preset(*preset)) {
        d.error(std::string(flag), "unknown preset '" + std::string(preset->substr(0, 64)) +
                                       "': expected one of: " + preset_list());
        continue;
      }
      config.model = std::string(*preset);
      config.custom_model.clear();
      line.model_given = true;
    } else if (name == "hf_config") {
      const auto path = next_value();
      if (!path) continue;
      if (const auto text =
              read_text_file(std::string(*path), flag, stagemem::max_hf_config_bytes, d)) {
        stagemem::HfImport imported = stagemem::import_hf_config(*text);
        if (imported.model) config.custom_model = stagemem::model_to_text(*imported.model);
        append(d, std::move(imported.diagnostics));
        line.model_given = true;
      }
    } else if (name == "production_layout") {
      const auto production = config.custom_model.empty()
                                  ? stagemem::preset_production_layout(config.model)
                                  : std::nullopt;
      if (!production) {
        d.error(std::string(flag), "model '" + config.model.substr(0, 64) +
                                       "' has no production layout (kimi-k3 has one)");
        continue;
      }
      config.parallel = production->layout;
      config.optimizer = production->optimizer;
    } else if (name == "use_distributed_optimizer") {
      using stagemem::OptimizerKind;
      if (config.optimizer.kind == OptimizerKind::adam)
        config.optimizer.kind = OptimizerKind::distributed_adam;
      if (config.optimizer.kind == OptimizerKind::muon)
        config.optimizer.kind = OptimizerKind::distributed_muon;
    } else if (name == "memory_log") {
      // Read once the whole layout is known (the ranks map to stages through it).
      if (const auto path = next_value()) memory_logs.emplace_back(*path);
    } else if (name == "measured" || name == "gap") {
      const auto text = next_value();
      if (!text) continue;
      if (name == "measured") {
        if (auto m = stagemem::parse_measurement_text(*text, d, std::string(flag))) {
          config.measurements.push_back(std::move(*m));
        }
      } else if (auto g = stagemem::parse_gap_text(*text, d, std::string(flag))) {
        config.gaps.push_back(std::move(*g));
      }
    } else {
      // A table field, an alias of one, or `--no-KEY` for a boolean field.
      const ConfigField* field = stagemem::find_field_by_key(name);
      std::string_view fixed_value;
      for (const Alias& alias : aliases) {
        if (!field && alias.name == name) {
          field = stagemem::find_field_by_key(alias.key);
          fixed_value = alias.value;
        }
      }
      if (!field && name.starts_with("no_")) {
        field = stagemem::find_field_by_key(std::string_view(name).substr(3));
        if (field && field->kind == FieldKind::boolean) {
          fixed_value = "0";
        } else {
          field = nullptr;
        }
      }
      if (!field) {
        d.error(std::string(flag.substr(0, 64)), "unknown option; see `--help`");
        continue;
      }
      if (!fixed_value.empty()) {
        set_field(*field, fixed_value, flag);
      } else if (field->kind == FieldKind::boolean) {
        // `--sp` alone means true; a following 0/1/true/false is its value.
        const bool has_value =
            i + 1 < args.size() &&
            (args[i + 1] == "0" || args[i + 1] == "1" || args[i + 1] == "true" ||
             args[i + 1] == "false" ||
             (rules.allow_lists && args[i + 1].find(',') != std::string_view::npos));
        set_field(*field, has_value ? args[++i] : std::string_view("1"), flag);
      } else if (const auto value = next_value()) {
        set_field(*field, *value, flag);
      }
    }
  }
  if (!memory_logs.empty() && d.ok()) add_memory_logs(memory_logs, config, d);
  return line;
}

}  // namespace stagemem_cli
