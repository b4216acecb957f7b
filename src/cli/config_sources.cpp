#include "config_sources.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <initializer_list>
#include <optional>

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
constexpr std::array<Alias, 40> aliases = {{
    // Megatron's low-precision flags that are one field each (the others: megatron_precision).
    {"fp4_recipe", "fp8_recipe"},
    {"fp8_dot_product_attention", "fp8_attention", "1"},
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
    "Megatron's data-parallel sharding flags (applied after every other flag):\n"
    "  --use-megatron-fsdp        Megatron-FSDP (dp_impl megatron-fsdp; strategy\n"
    "                             optim_grads_params unless given)\n"
    "  --data-parallel-sharding-strategy no_shard|optim|optim_grads|optim_grads_params\n"
    "  --num-distributed-optimizer-instances N   the state is sharded over DP / N ranks, N\n"
    "                             copies (HSDP; dp_shard = DP / N)\n"
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
    "            math-library-workspaces\n"
    "Megatron's low-precision flags (applied after every other flag, whatever their order):\n"
    "  --fp8-format e4m3|hybrid   quantised compute: --fp8-recipe, or Megatron's default\n"
    "                             recipe `delayed` when none is given\n"
    "  --fp4-format e2m1          NVFP4 compute (--fp4-recipe nvfp4 is the default)\n"
    "  --fp8-param-gather, --fp4-param-gather   primary weights stored in the recipe's\n"
    "                             format (weights and expert_weights: fp8-tensor, fp8-block,\n"
    "                             mxfp8 or nvfp4)\n"
    "  --first-last-layers-bf16   the first and last layers compute in bf16: 1 each unless\n"
    "      --num-layers-at-start-in-bf16 N / --num-layers-at-end-in-bf16 N say otherwise\n"
    "      (ignored without --first-last-layers-bf16, as Megatron does)\n";

bool whole_integer(std::string_view text, std::int64_t& out) {
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), out);
  return !text.empty() && error == std::errc() && end == text.data() + text.size();
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
    case FieldKind::stack:
      return "PAIRS";
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

std::vector<std::string> CommandLine::option_values(std::string_view name) const {
  std::vector<std::string> values;
  for (const auto& [given, text] : options) {
    if (given == name) values.push_back(text);
  }
  return values;
}

std::string flag_key(std::string_view flag) {
  std::string out(flag.substr(2));
  for (char& c : out) c = c == '-' ? '_' : c;
  return out;
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
  const Config defaults = stagemem::default_config();
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

// The text of one --memory-log input: the file at `path`, or standard input for "-" (once).
std::optional<std::string> memory_log_text(const std::string& path, bool& stdin_read,
                                           Diagnostics& d) {
  if (path != "-") return read_text_file(path, "--memory-log", stagemem::max_log_bytes, d);
  if (stdin_read) {
    d.error("--memory-log", "standard input (-) can be read once");
    return std::nullopt;
  }
  stdin_read = true;
  stagemem_io::ReadResult read = stagemem_io::read_descriptor(0, stagemem::max_log_bytes);
  if (read.status != stagemem_io::ReadStatus::ok) {
    d.error("--memory-log", stagemem_io::failure_text(read, "standard input (-)"));
    return std::nullopt;
  }
  return std::move(read.bytes);
}

// Each --memory-log FILE ("-": standard input) as measurements of `config`'s layout.
void add_memory_logs(const std::vector<std::string>& paths, Config& config, Diagnostics& d) {
  bool stdin_read = false;
  for (const std::string& path : paths) {
    const std::optional<std::string> text = memory_log_text(path, stdin_read, d);
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

// A field flag as typed: the field it sets and, for an alias switch or `--no-KEY`, the value it
// means by itself ("" when it takes the next argument).
struct FieldFlag {
  const ConfigField* field = nullptr;
  std::string_view fixed_value;
};

// A table field, an alias of one, or `--no-KEY` for a boolean field; no field when none.
FieldFlag find_field_flag(const std::string& name) {
  if (const ConfigField* field = stagemem::find_field_by_key(name)) return {field, {}};
  for (const Alias& alias : aliases) {
    if (alias.name == name) return {stagemem::find_field_by_key(alias.key), alias.value};
  }
  if (name.starts_with("no_")) {
    const ConfigField* field = stagemem::find_field_by_key(std::string_view(name).substr(3));
    if (field && field->kind == FieldKind::boolean) return {field, "0"};
  }
  return {};
}

// One pass over the arguments, left to right: each is --help, a positional word, a command
// option, a source (--config, --url, --preset, ...) or a field flag.
struct Parser {
  std::span<const std::string_view> args;
  const ParseRules& rules;
  // Sources and flags apply over the one default configuration (config.h), as a link does.
  CommandLine line = [] {
    CommandLine start;
    start.config = stagemem::default_config();
    return start;
  }();
  std::size_t at = 0;                      // the argument being read
  std::vector<std::string> memory_logs{};  // read once the whole layout is known
  // What each field and command option was set to on this command line, to refuse a second
  // setting (`--pp 4 --pp 8`, or a flag and its alias) instead of silently taking the last.
  // Sources (--config, --url) may still be layered: they are files and links, not repeats.
  std::vector<std::pair<const void*, std::string>> given{};

  Config& config() { return line.config; }
  Diagnostics& diagnostics() { return line.diagnostics; }

  CommandLine parse();
  void read_argument(std::string_view flag);
  void read_positional(std::string_view word);
  bool read_command_option(std::string_view flag);
  void read_field_flag(const std::string& name, std::string_view flag);
  std::optional<std::string_view> next_value(std::string_view flag);
  bool given_once(const void* what, std::string_view flag, std::string_view value);
  void set_field(const ConfigField& field, std::string_view value, std::string_view flag);
  bool set_sweep_axis(const ConfigField& field, std::string_view value, std::string_view flag);

  // The sources, one per flag (sources below): each reads its own value, if it takes one.
  void read_config_file(std::string_view flag);
  void read_link(std::string_view flag);
  void select_preset(std::string_view flag);
  void import_hf_config(std::string_view flag);
  void apply_production_layout(std::string_view flag);
  void use_distributed_optimizer(std::string_view flag);
  void add_memory_log(std::string_view flag);
  void add_measured(std::string_view flag);
  void add_gap(std::string_view flag);

  // Megatron's low-precision flags, read as given and applied once every flag is known.
  struct MegatronPrecision {
    std::optional<std::string> fp8_format;
    std::optional<std::string> fp4_format;
    bool fp8_param_gather = false;
    bool fp4_param_gather = false;
    bool first_last_layers_bf16 = false;
    std::optional<std::int64_t> layers_at_start;
    std::optional<std::int64_t> layers_at_end;
  };
  MegatronPrecision megatron_precision{};
  // Megatron's data-parallel sharding flags, applied once the layout is known.
  struct MegatronSharding {
    bool use_megatron_fsdp = false;
    std::optional<std::string> strategy;
    std::optional<std::int64_t> optimizer_instances;
  };
  MegatronSharding megatron_sharding{};
  void read_use_megatron_fsdp(std::string_view flag);
  void read_sharding_strategy(std::string_view flag);
  void read_optimizer_instances(std::string_view flag);
  void apply_megatron_sharding();
  void read_fp8_format(std::string_view flag);
  void read_fp4_format(std::string_view flag);
  void read_fp8_param_gather(std::string_view flag);
  void read_fp4_param_gather(std::string_view flag);
  void read_first_last_layers_bf16(std::string_view flag);
  void read_layers_at_start_in_bf16(std::string_view flag);
  void read_layers_at_end_in_bf16(std::string_view flag);
  void apply_megatron_precision();
  void read_megatron_switch(std::string_view flag, bool& target);
  void read_megatron_format(std::string_view flag, std::optional<std::string>& target,
                            std::initializer_list<std::string_view> allowed, std::string_view note);
  void read_megatron_layer_count(std::string_view flag, std::optional<std::int64_t>& target);
};

// The source flags by key (flag_key), and the member that reads each.
struct SourceFlag {
  std::string_view name;
  void (Parser::*read)(std::string_view flag);
};
constexpr std::array<SourceFlag, 19> sources = {{
    {"use_megatron_fsdp", &Parser::read_use_megatron_fsdp},
    {"data_parallel_sharding_strategy", &Parser::read_sharding_strategy},
    {"num_distributed_optimizer_instances", &Parser::read_optimizer_instances},
    {"fp8_format", &Parser::read_fp8_format},
    {"fp4_format", &Parser::read_fp4_format},
    {"fp8_param_gather", &Parser::read_fp8_param_gather},
    {"fp4_param_gather", &Parser::read_fp4_param_gather},
    {"first_last_layers_bf16", &Parser::read_first_last_layers_bf16},
    {"num_layers_at_start_in_bf16", &Parser::read_layers_at_start_in_bf16},
    {"num_layers_at_end_in_bf16", &Parser::read_layers_at_end_in_bf16},
    {"config", &Parser::read_config_file},
    {"url", &Parser::read_link},
    {"preset", &Parser::select_preset},
    {"hf_config", &Parser::import_hf_config},
    {"production_layout", &Parser::apply_production_layout},
    {"use_distributed_optimizer", &Parser::use_distributed_optimizer},
    {"memory_log", &Parser::add_memory_log},
    {"measured", &Parser::add_measured},
    {"gap", &Parser::add_gap},
}};

CommandLine Parser::parse() {
  for (at = 0; at < args.size(); ++at) read_argument(args[at]);
  apply_megatron_precision();
  apply_megatron_sharding();
  if (!memory_logs.empty() && diagnostics().ok())
    add_memory_logs(memory_logs, config(), diagnostics());
  return std::move(line);
}

void Parser::read_argument(std::string_view flag) {
  if (flag == "--help" || flag == "-h") {
    line.help = true;
    return;
  }
  if (!flag.starts_with("--") || flag.size() == 2) return read_positional(flag);
  if (read_command_option(flag)) return;
  const std::string name = flag_key(flag);
  for (const SourceFlag& source : sources) {
    if (source.name == name) return (this->*source.read)(flag);
  }
  read_field_flag(name, flag);
}

void Parser::read_positional(std::string_view word) {
  if (rules.allow_positional) {
    line.positional.emplace_back(word);
  } else {
    diagnostics().error(std::string(word.substr(0, 64)),
                        "unexpected argument; flags start with --");
  }
}

// A command option (rules.options): false when `flag` is none.
bool Parser::read_command_option(std::string_view flag) {
  const auto option = std::find_if(rules.options.begin(), rules.options.end(),
                                   [&](const CommandOption& o) { return o.name == flag; });
  if (option == rules.options.end()) return false;
  if (option->value_name.empty()) {
    if (given_once(&*option, flag, "")) line.options.emplace_back(option->name, "");
  } else if (const auto value = next_value(flag)) {
    if (option->repeatable || given_once(&*option, flag, *value))
      line.options.emplace_back(option->name, std::string(*value));
  }
  return true;
}

void Parser::read_field_flag(const std::string& name, std::string_view flag) {
  const FieldFlag found = find_field_flag(name);
  if (!found.field) {
    diagnostics().error(std::string(flag.substr(0, 64)), "unknown option; see `--help`");
    return;
  }
  if (!found.fixed_value.empty()) return set_field(*found.field, found.fixed_value, flag);
  if (found.field->kind != FieldKind::boolean) {
    if (const auto value = next_value(flag)) set_field(*found.field, *value, flag);
    return;
  }
  // `--sp` alone means true; a following 0/1/true/false is its value (with lists, a list of them).
  const std::string_view next = at + 1 < args.size() ? args[at + 1] : std::string_view{};
  const bool has_value = next == "0" || next == "1" || next == "true" || next == "false" ||
                         (rules.allow_lists && next.find(',') != std::string_view::npos);
  set_field(*found.field, has_value ? args[++at] : std::string_view("1"), flag);
}

std::optional<std::string_view> Parser::next_value(std::string_view flag) {
  if (at + 1 >= args.size()) {
    diagnostics().error(std::string(flag), "needs a value");
    return std::nullopt;
  }
  return args[++at];
}

bool Parser::given_once(const void* what, std::string_view flag, std::string_view value) {
  const std::string shown = std::string(flag.substr(0, 64)) +
                            (value.empty() ? "" : " " + std::string(value.substr(0, 64)));
  for (const auto& [earlier, text] : given) {
    if (earlier != what) continue;
    diagnostics().error(std::string(flag.substr(0, 64)),
                        "given twice, first `" + text + "`, then `" + shown + "`; give it once");
    return false;
  }
  given.emplace_back(what, shown);
  return true;
}

// Applies `value` to `field`, or records a sweep axis; `flag` names errors.
void Parser::set_field(const ConfigField& field, std::string_view value, std::string_view flag) {
  if (!given_once(&field, flag, value)) return;
  std::erase_if(line.axes, [&](const stagemem::SweepAxis& axis) { return axis.field == &field; });
  const bool list =
      rules.allow_lists && stagemem::sweepable(field) && value.find(',') != std::string_view::npos;
  if (list ? !set_sweep_axis(field, value, flag)
           : !stagemem::parse_field_text(field, value, config(), diagnostics(), flag)) {
    return;
  }
  if (field.key == "model" || field.key == "custom") line.model_given = true;
  if (const std::string_view split = implied_split(field.key); !split.empty()) {
    stagemem::parse_field_text(*stagemem::find_field_by_key("split"), split, config(),
                               diagnostics(), flag);
  }
}

// A comma-separated value as a sweep axis; the configuration takes its first value.
bool Parser::set_sweep_axis(const ConfigField& field, std::string_view value,
                            std::string_view flag) {
  std::optional<stagemem::SweepAxis> axis =
      stagemem::parse_sweep_axis(field, value, config(), max_sweep_values, flag, diagnostics());
  if (!axis) return false;
  stagemem::parse_field_text(field, axis->values.front(), config(), diagnostics(), flag);
  line.axes.push_back(std::move(*axis));
  return true;
}

void Parser::read_config_file(std::string_view flag) {
  const auto path = next_value(flag);
  if (!path) return;
  const auto text =
      read_text_file(std::string(*path), flag, stagemem::max_config_json_bytes, diagnostics());
  if (!text) return;
  stagemem::DecodedConfig decoded = stagemem::config_from_json(*text, config());
  if (decoded.diagnostics.ok()) config() = std::move(decoded.config);
  append(diagnostics(), std::move(decoded.diagnostics));
  line.model_given = true;
}

void Parser::read_link(std::string_view flag) {
  const auto link = next_value(flag);
  if (!link) return;
  stagemem::DecodedFragment decoded = stagemem::decode_fragment(*link, config());
  if (decoded.diagnostics.ok()) config() = std::move(decoded.config);
  append(diagnostics(), std::move(decoded.diagnostics));
  line.model_given = true;
}

void Parser::select_preset(std::string_view flag) {
  const auto preset = next_value(flag);
  if (!preset) return;
  // --preset and --model set the same field.
  if (!given_once(stagemem::find_field_by_key("model"), flag, *preset)) return;
  if (!stagemem::find_preset(*preset)) {
    diagnostics().error(std::string(flag), "unknown preset '" + std::string(preset->substr(0, 64)) +
                                               "': expected one of: " + preset_list());
    return;
  }
  config().model = std::string(*preset);
  config().custom_model.clear();
  line.model_given = true;
}

void Parser::import_hf_config(std::string_view flag) {
  const auto path = next_value(flag);
  if (!path) return;
  const auto text =
      read_text_file(std::string(*path), flag, stagemem::max_hf_config_bytes, diagnostics());
  if (!text) return;
  // The file names the model when the config has no _name_or_path.
  stagemem::HfImport imported = stagemem::import_hf_config(*text, *path);
  if (imported.model) config().custom_model = stagemem::model_to_text(*imported.model);
  append(diagnostics(), std::move(imported.diagnostics));
  line.model_given = true;
}

void Parser::apply_production_layout(std::string_view flag) {
  const auto production = config().custom_model.empty()
                              ? stagemem::preset_production_layout(config().model)
                              : std::nullopt;
  if (!production) {
    diagnostics().error(std::string(flag), "model '" + config().model.substr(0, 64) +
                                               "' has no production layout (kimi-k3 has one)");
    return;
  }
  config().parallel = production->layout;
  config().optimizer = production->optimizer;
}

void Parser::use_distributed_optimizer(std::string_view /*flag*/) {
  using stagemem::OptimizerKind;
  OptimizerKind& kind = config().optimizer.kind;
  if (kind == OptimizerKind::adam) kind = OptimizerKind::distributed_adam;
  if (kind == OptimizerKind::muon) kind = OptimizerKind::distributed_muon;
}

void Parser::read_megatron_switch(std::string_view flag, bool& target) {
  if (given_once(&target, flag, "")) target = true;
}

void Parser::read_megatron_format(std::string_view flag, std::optional<std::string>& target,
                                  std::initializer_list<std::string_view> allowed,
                                  std::string_view note) {
  const auto value = next_value(flag);
  if (!value || !given_once(&target, flag, *value)) return;
  if (std::find(allowed.begin(), allowed.end(), *value) == allowed.end()) {
    std::string names;
    for (std::string_view name : allowed) names += (names.empty() ? "" : ", ") + std::string(name);
    diagnostics().error(std::string(flag), "'" + std::string(value->substr(0, 40)) +
                                               "' is not one of: " + names + " (" +
                                               std::string(note) + ")");
    return;
  }
  target = std::string(*value);
}

void Parser::read_megatron_layer_count(std::string_view flag, std::optional<std::int64_t>& target) {
  const auto value = next_value(flag);
  std::int64_t n = 0;
  if (!value || !given_once(&target, flag, *value)) return;
  if (!whole_integer(*value, n) || n < 0 || n > (1 << 20)) {
    diagnostics().error(std::string(flag), "must be an integer in [0, 1048576]");
    return;
  }
  target = n;
}

void Parser::read_fp8_format(std::string_view flag) {
  read_megatron_format(flag, megatron_precision.fp8_format, {"e4m3", "hybrid"},
                       "Megatron's --fp8-format; both store 1 B per value");
}
void Parser::read_fp4_format(std::string_view flag) {
  read_megatron_format(flag, megatron_precision.fp4_format, {"e2m1"}, "Megatron's --fp4-format");
}
void Parser::read_fp8_param_gather(std::string_view flag) {
  read_megatron_switch(flag, megatron_precision.fp8_param_gather);
}
void Parser::read_fp4_param_gather(std::string_view flag) {
  read_megatron_switch(flag, megatron_precision.fp4_param_gather);
}
void Parser::read_first_last_layers_bf16(std::string_view flag) {
  read_megatron_switch(flag, megatron_precision.first_last_layers_bf16);
}
void Parser::read_layers_at_start_in_bf16(std::string_view flag) {
  read_megatron_layer_count(flag, megatron_precision.layers_at_start);
}
void Parser::read_layers_at_end_in_bf16(std::string_view flag) {
  read_megatron_layer_count(flag, megatron_precision.layers_at_end);
}

// Megatron's semantics: --fp8-format turns quantised compute on with --fp8-recipe's value
// (default delayed); --fp4-format with --fp4-recipe's (default nvfp4); the param-gather flags
// store the primary weights in the recipe's format; bf16 layer counts need the switch.
void Parser::apply_megatron_precision() {
  using stagemem::Fp8Recipe;
  using stagemem::WeightDtype;
  const MegatronPrecision& m = megatron_precision;
  stagemem::LowPrecisionCompute& lp = config().training.low_precision;
  const ConfigField* recipe_field = stagemem::find_field_by_key("fp8_recipe");
  const bool recipe_given = std::any_of(given.begin(), given.end(),
                                        [&](const auto& g) { return g.first == recipe_field; });
  if (m.fp8_format && m.fp4_format) {
    diagnostics().error("--fp4-format", "give --fp8-format or --fp4-format, not both");
    return;
  }
  if (m.fp8_format && !recipe_given) lp.recipe = Fp8Recipe::delayed;
  if (m.fp4_format && !recipe_given) lp.recipe = Fp8Recipe::nvfp4;
  if (m.fp4_format && lp.recipe != Fp8Recipe::nvfp4) {
    diagnostics().error("--fp4-format", "--fp4-format takes --fp4-recipe nvfp4");
  }
  if (m.fp8_format && lp.recipe == Fp8Recipe::nvfp4) {
    diagnostics().error("--fp8-format", "nvfp4 is an fp4 recipe: give --fp4-format e2m1");
  }
  if (m.fp8_param_gather || m.fp4_param_gather) {
    const char* flag = m.fp4_param_gather ? "--fp4-param-gather" : "--fp8-param-gather";
    std::optional<WeightDtype> dtype;
    switch (lp.recipe) {
      case Fp8Recipe::delayed:
      case Fp8Recipe::tensor:
        dtype = WeightDtype::fp8_tensor_scaled;
        break;
      case Fp8Recipe::block:
        dtype = WeightDtype::fp8_block_scaled;
        break;
      case Fp8Recipe::mxfp8:
        dtype = WeightDtype::mxfp8;
        break;
      case Fp8Recipe::nvfp4:
        dtype = WeightDtype::nvfp4;
        break;
      case Fp8Recipe::none:
        break;
    }
    if (!dtype) {
      diagnostics().error(flag, "needs quantised compute: give --fp8-format (or --fp8-recipe)");
    } else if ((*dtype == WeightDtype::nvfp4) != m.fp4_param_gather) {
      diagnostics().error(flag, m.fp4_param_gather
                                    ? "--fp4-param-gather goes with the nvfp4 recipe"
                                    : "the nvfp4 recipe's primary weights: --fp4-param-gather");
    } else {
      config().precision.dense_weights = *dtype;
      config().precision.expert_weights = *dtype;
    }
  }
  if (m.first_last_layers_bf16) {
    lp.bf16_layers_at_start = m.layers_at_start.value_or(1);
    lp.bf16_layers_at_end = m.layers_at_end.value_or(1);
  } else if (m.layers_at_start || m.layers_at_end) {
    diagnostics().warn("--num-layers-at-start-in-bf16",
                       "ignored without --first-last-layers-bf16 (as Megatron does)");
  }
}

void Parser::read_use_megatron_fsdp(std::string_view flag) {
  read_megatron_switch(flag, megatron_sharding.use_megatron_fsdp);
}
void Parser::read_sharding_strategy(std::string_view flag) {
  read_megatron_format(flag, megatron_sharding.strategy,
                       {"no_shard", "optim", "optim_grads", "optim_grads_params"},
                       "Megatron-FSDP's --data-parallel-sharding-strategy");
}
void Parser::read_optimizer_instances(std::string_view flag) {
  const auto value = next_value(flag);
  std::int64_t n = 0;
  if (!value || !given_once(&megatron_sharding.optimizer_instances, flag, *value)) return;
  if (!whole_integer(*value, n) || n < 1 || n > (1 << 20)) {
    diagnostics().error(std::string(flag), "must be an integer in [1, 1048576]");
    return;
  }
  megatron_sharding.optimizer_instances = n;
}

// Megatron's semantics: --use-megatron-fsdp wraps the model in Megatron-FSDP with
// --data-parallel-sharding-strategy (Megatron's default optim_grads_params); the strategy names
// are stagemem's `sharding` values; N distributed-optimizer instances shard over DP / N ranks.
void Parser::apply_megatron_sharding() {
  using stagemem::DataParallelImpl;
  const MegatronSharding& m = megatron_sharding;
  stagemem::DataParallelSharding& sharding = config().training.sharding;
  if (m.use_megatron_fsdp) sharding.implementation = DataParallelImpl::megatron_fsdp;
  if (m.strategy) {
    if (!m.use_megatron_fsdp && *m.strategy != "no_shard" && *m.strategy != "optim") {
      diagnostics().error("--data-parallel-sharding-strategy",
                          "'" + *m.strategy + "' needs --use-megatron-fsdp");
      return;
    }
    const ConfigField& field = *stagemem::find_field_by_key("sharding");
    stagemem::parse_field_text(field, *m.strategy, config(), diagnostics(),
                               "--data-parallel-sharding-strategy");
  }
  if (m.optimizer_instances && *m.optimizer_instances > 1) {
    const std::int64_t dp = stagemem::data_parallel_size(config().parallel);
    if (dp <= 0 || dp % *m.optimizer_instances != 0) {
      diagnostics().error("--num-distributed-optimizer-instances",
                          "must divide the data-parallel size " + std::to_string(dp));
      return;
    }
    sharding.shard_group = dp / *m.optimizer_instances;
  }
}

void Parser::add_memory_log(std::string_view flag) {
  if (const auto path = next_value(flag)) memory_logs.emplace_back(*path);
}

void Parser::add_measured(std::string_view flag) {
  const auto text = next_value(flag);
  if (!text) return;
  if (auto m = stagemem::parse_measurement_text(*text, diagnostics(), std::string(flag)))
    config().measurements.push_back(std::move(*m));
}

void Parser::add_gap(std::string_view flag) {
  const auto text = next_value(flag);
  if (!text) return;
  if (auto g = stagemem::parse_gap_text(*text, diagnostics(), std::string(flag)))
    config().gaps.push_back(std::move(*g));
}

}  // namespace

CommandLine parse_command_line(std::span<const std::string_view> args, const ParseRules& rules) {
  Parser parser{.args = args, .rules = rules};
  if (rules.start != nullptr) {
    parser.line.config = *rules.start;
    parser.line.model_given = true;
  }
  return parser.parse();
}

}  // namespace stagemem_cli
