// The configuration panel, generated from the core's field table (config_fields()): every field
// with the widget its kind needs, grouped by the first part of its JSON path in collapsing
// headers, its help text as tooltip. Values out of a field's range cannot be entered (the widget
// refuses them); what only the whole configuration can check (divisibility, layer counts, ...)
// comes back as the core's Diagnostics and is shown under the field the error names.
// The model group adds the preset list, a Hugging Face config.json import and the custom model
// text; the device group the device list. Measured values have their own panel
// (panel_measurements.cpp), drawn under this one.
// Model, device and parallel layout come first: they answer "does it fit?". Fields that do not
// apply to the model or to other choices (KDA kernels for a Llama, Muon options under Adam, the
// explicit stage list under an even split) are hidden unless "show every field" is ticked or they
// hold an error. An error with an obvious remedy gets a one-click fix under the field.
// The widgets edit a copy of the configuration, emitted as one SetConfig when it changed.
#include <algorithm>
#include <array>
#include <optional>
#include <string>
#include <string_view>

#include "actions.h"
#include "config/config_fields.h"
#include "config/devices.h"
#include "config/repair.h"
#include "config/version_rules.h"
#include "imgui.h"
#include "misc/cpp/imgui_stdlib.h"
#include "model/hf_config.h"
#include "model/model_text.h"
#include "model/presets.h"
#include "render/vocabulary.h"
#include "state.h"
#include "widgets.h"

namespace {

using stagemem::ConfigField;
using stagemem::FieldKind;

constexpr ImVec4 warning_colour(0.95f, 0.80f, 0.35f, 1.0f);

struct Group {
  std::string_view prefix;  // first part of the JSON path
  const char* title;
  bool open;  // at start
};
constexpr std::array<Group, 8> groups = {
    {{"model", "Model", true},
     {"device", "Device", true},
     {"parallel", "Parallel layout", true},
     {"training", "Training, recompute and kernels", true},
     {"precision", "Precision", false},
     {"optimizer", "Optimizer", false},
     {"sharding", "Framework and data-parallel sharding", false},
     {"allocator", "PyTorch caching allocator", false}}};

std::string_view group_of(const ConfigField& field) {
  if (field.path == "custom_model") return "model";
  if (field.path == "stack") return "training";      // the library releases: kernels follow them
  if (field.path == "framework") return "sharding";  // it decides the data-parallel default
  return field.path.substr(0, field.path.find('.'));
}

// Whether a diagnostic's field names `field`. The core names fields by JSON path
// ("training.sequence_length"), by group and key ("parallel.tp"), by the end of the path
// ("recompute.layers", "kernels.kda_chunk"), or by the model's items ("custom_model.h").
bool names_field(std::string_view name, const ConfigField& field) {
  if (name == field.path) return true;
  const std::string_view group = group_of(field);
  if (name.size() == group.size() + 1 + field.key.size() && name.starts_with(group) &&
      name[group.size()] == '.' && name.ends_with(field.key)) {
    return true;
  }
  if (name.find('.') != std::string_view::npos && field.path.size() > name.size() &&
      field.path.ends_with(name) && field.path[field.path.size() - name.size() - 1] == '.') {
    return true;
  }
  if (field.key == "custom") return name.starts_with("custom_model");
  if (field.key == "model") return name == "model" || name.starts_with("model.");
  return false;
}

bool names_any_field(std::string_view name) {
  if (name.starts_with("measurements") || name.starts_with("gaps")) return true;
  for (const ConfigField& field : stagemem::config_fields()) {
    if (names_field(name, field)) return true;
  }
  return false;
}

void show_messages(const std::vector<stagemem::FieldMessage>& messages, const ImVec4& colour,
                   const ConfigField* field) {
  for (const auto& m : messages) {
    if (field != nullptr ? !names_field(m.field, *field) : names_any_field(m.field)) continue;
    ImGui::PushStyleColor(ImGuiCol_Text, colour);
    ImGui::TextWrapped("%s: %s", m.field.c_str(), m.message.c_str());
    ImGui::PopStyleColor();
  }
}

// Errors (red) and warnings (amber) the core names by this field; `field` null: those it names
// by no field this panel has a widget for.
void show_field_errors(const stagemem::Diagnostics& diagnostics, const ConfigField* field) {
  show_messages(diagnostics.errors, error_colour, field);
  show_messages(diagnostics.warnings, warning_colour, field);
}

bool has_error(const stagemem::Diagnostics& diagnostics, const ConfigField& field) {
  for (const auto& e : diagnostics.errors) {
    if (names_field(e.field, field)) return true;
  }
  return false;
}

// Whether a field means anything for this model and these choices.
bool field_applies(const AppState& state, const ConfigField& field) {
  const ModelTraits& m = state.model_traits;
  const stagemem::Config& c = state.config;
  const std::string_view key = field.key;
  const bool muon = c.optimizer.kind == stagemem::OptimizerKind::muon ||
                    c.optimizer.kind == stagemem::OptimizerKind::distributed_muon;
  if (m.known) {
    if (key == "ep" || key == "etp" || key == "imbalance" || key == "expert_weights" ||
        key == "muon_experts" || key == "muon_routers" || key == "moe_unpermute" ||
        key == "router_dtype") {
      if (!m.moe) return false;
    }
    if ((key == "kda_backend" || key == "kda_chunk" || key == "fla_version") && !m.kda)
      return false;
    if (key == "attnres_temps" && !m.attn_res) return false;
  }
  if (key.starts_with("muon_")) return muon;
  // The custom model text: shown once one is in use (the import or "show every field" add one).
  if (key == "custom") return !c.custom_model.empty();
  if (key == "stages") return c.parallel.assignment == stagemem::StageAssignment::explicit_list;
  if (key == "first_layers" || key == "last_layers") {
    return c.parallel.assignment == stagemem::StageAssignment::first_last;
  }
  if (key == "layout") return c.parallel.assignment == stagemem::StageAssignment::layout_string;
  if (key == "recompute_modules") {
    return c.training.recompute.policy == stagemem::RecomputePolicy::selective;
  }
  if (key == "recompute_method" || key == "recompute_layers") {
    return c.training.recompute.policy == stagemem::RecomputePolicy::full;
  }
  if (key == "cp_comm_type") return c.parallel.context_parallel > 1;
  if (key == "ce_chunk") {
    return c.training.kernels.cross_entropy == stagemem::CrossEntropyKernel::fused_chunked;
  }
  if (key == "master") return c.precision.dense_weights != stagemem::WeightDtype::fp32;
  // The quantised recipe's options, under fp8_recipe; kept in view while set away from their
  // default without a recipe (the core's warning stands under them).
  const stagemem::LowPrecisionCompute& lp = c.training.low_precision;
  if (key == "fp8_amax_history_len") {
    return lp.recipe == stagemem::Fp8Recipe::delayed || lp.amax_history_len != 1;
  }
  if (key == "bf16_layers_at_start" || key == "bf16_layers_at_end") {
    return lp.quantised() || lp.bf16_layers_at_start + lp.bf16_layers_at_end > 0;
  }
  if (key == "fp8_attention") return lp.quantised() || lp.fp8_attention;
  // Megatron DDP's buckets size only with --overlap-grad-reduce (kept in view while set).
  const stagemem::DataParallelSharding& dp = c.training.sharding;
  if (key == "ddp_bucket_size") return dp.overlap_grad_reduce || dp.ddp_bucket_size != 0;
  return true;
}

// What the field editors work with in one frame.
struct Edit {
  const AppState& state;
  stagemem::Config& config;  // the copy being edited: one SetConfig after the panel
  ConfigView& view;
  Actions& out;
};

// One-click fixes for errors with an obvious remedy; each says what it will do.
void offer_fixes(Edit& e, const ConfigField& field) {
  const auto& errors = e.state.diagnostics.errors;
  for (std::size_t i = 0; i < errors.size(); ++i) {
    if (!names_field(errors[i].field, field)) continue;
    bool pressed = false;
    const stagemem::Repair* repair = fix_button(e.state, i, pressed);
    if (pressed && repair != nullptr) e.config = repair->config;
  }
}

void help_tooltip(const ConfigField& field) {
  ImGui::SetItemTooltip("%.*s (%.*s)", static_cast<int>(field.help.size()), field.help.data(),
                        static_cast<int>(field.path.size()), field.path.data());
}

// The field's name after its value widget, as ImGui lays out labels (or above it, drawn by
// edit_field, when the panel is too narrow for both: a label is never cut off).
void trailing_label(const FieldEditor& editor, const ConfigField& field) {
  if (editor.label_above) return;
  ImGui::SameLine(0.0f, ImGui::GetStyle().ItemInnerSpacing.x);
  ImGui::AlignTextToFramePadding();
  ImGui::TextUnformatted(editor.label.c_str());
  help_tooltip(field);
}

void record_field_rect(const Edit& e, FieldEditor& editor) {
  editor.rect = last_item_rect(e.out.frame());
}

// An entry of an open list, published as "option_<key>_<name>".
void record_option(Edit& e, const ConfigField& field, std::string_view name) {
  e.view.option_rects.emplace_back(std::string(field.key) + "_" + std::string(name),
                                   last_item_rect(e.out.frame()));
}

// Lists as long as the presets: every entry visible without scrolling.
constexpr ImGuiComboFlags list_flags = ImGuiComboFlags_HeightLargest;

// The "-" and "+" buttons of the fields the first browser tests drive keep their names.
struct StepWidgets {
  Widget minus;
  Widget plus;
};
StepWidgets step_widgets(std::string_view key) {
  if (key == "tp") return {Widget::tp_minus, Widget::tp_plus};
  if (key == "pp") return {Widget::pp_minus, Widget::pp_plus};
  if (key == "ep") return {Widget::ep_minus, Widget::ep_plus};
  return {Widget::count, Widget::count};
}

// "1,024", "1 024" or "1_024" as 1024; nothing for anything else.
std::optional<std::int64_t> parse_typed_integer(std::string_view text) {
  std::int64_t value = 0;
  bool digits = false;
  bool negative = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '-' && !digits && !negative) {
      negative = true;
    } else if (c >= '0' && c <= '9') {
      if (value > (std::int64_t{1} << 56)) return std::nullopt;  // beyond any field's range
      value = value * 10 + (c - '0');
      digits = true;
    } else if (!(c == ',' || c == '_' || c == ' ' || c == '\'')) {
      return std::nullopt;
    }
  }
  if (!digits) return std::nullopt;
  return negative ? -value : value;
}

// An integer with "-" and "+" buttons, built from parts so that the buttons' rectangles can be
// published. A typed number applies on Enter or when the field is left (not per keystroke: TP 16
// is never TP 1 on its way); out of range it is refused and the field says why. The buttons step
// to the next VALID value (config/repair.h step_value: TP 8 -> 4 -> 2 -> 1 for a model with 4 KV
// heads), one click one step. Byte fields step by 1 GiB. DP and the world size derive each other:
// the one set last wins (set_integer_field).
void edit_integer(Edit& e, FieldEditor& editor, const ConfigField& field) {
  const std::int64_t value = *field.integer(e.config);
  const bool bytes = field.path.ends_with("bytes");
  const float button_size = ImGui::GetFrameHeight();
  const float spacing = ImGui::GetStyle().ItemInnerSpacing.x;
  ImGui::SetNextItemWidth(std::max(1.0f, ImGui::CalcItemWidth() - 2.0f * (button_size + spacing)));
  if (!editor.typing) editor.text = std::to_string(value);
  ImGui::InputText("##value", &editor.text);
  editor.typing = ImGui::IsItemActive();
  if (ImGui::IsItemDeactivatedAfterEdit()) {
    const auto typed = parse_typed_integer(editor.text);
    if (typed && *typed >= field.min && *typed <= field.max) {
      stagemem::set_integer_field(e.config, field, *typed);
      editor.error.clear();
    } else {
      editor.error =
          "'" + editor.text.substr(0, 24) + "' is not " + stagemem::allowed_values(field);
    }
    editor.text = std::to_string(*field.integer(e.config));
  }
  record_field_rect(e, editor);
  help_tooltip(field);
  const StepWidgets widgets = step_widgets(field.key);
  const auto step = [&](int direction) {
    const FixIts& f = e.state.fix_its;
    const std::int64_t to =
        f.model && !bytes ? stagemem::step_value(e.config, *f.model, field, direction)
                          : std::clamp(value + direction * (bytes ? std::int64_t{1} << 30 : 1),
                                       field.min, field.max);
    stagemem::set_integer_field(e.config, field, to);
    editor.error.clear();
  };
  ImGui::SameLine(0.0f, spacing);
  if (ImGui::Button("-", ImVec2(button_size, button_size))) step(-1);
  if (widgets.minus != Widget::count) publish(e.out, widgets.minus);
  ImGui::SameLine(0.0f, spacing);
  if (ImGui::Button("+", ImVec2(button_size, button_size))) step(+1);
  if (widgets.plus != Widget::count) publish(e.out, widgets.plus);
  trailing_label(editor, field);
  if (bytes && value > 0) {
    ImGui::TextDisabled("= %s", stagemem::amount_text(value, e.state.display.unit).c_str());
  }
  if (!editor.error.empty()) {
    ImGui::PushStyleColor(ImGuiCol_Text, error_colour);
    ImGui::TextWrapped("%s", editor.error.c_str());
    ImGui::PopStyleColor();
  }
}

// Under a kernel option that is a version question: where its value comes from, and for a value
// set here the way back to the stack's (published as "option_follow_stack_<key>").
void stack_kernel_origin(Edit& e, const ConfigField& field) {
  const std::uint32_t bit =
      stagemem::stack_kernel_bit(static_cast<stagemem::StackKernel>(field.stack_kernel));
  if ((e.config.training.explicit_kernels & bit) == 0) {
    ImGui::TextDisabled("from the stack");
    return;
  }
  ImGui::TextDisabled("set here");
  ImGui::SameLine();
  if (ImGui::SmallButton("follow the stack")) {
    e.config.training.explicit_kernels &= ~bit;
    stagemem::derive_stack_kernels(e.config.training);
  }
  e.view.option_rects.emplace_back("follow_stack_" + std::string(field.key),
                                   last_item_rect(e.out.frame()));
}

void edit_choice(Edit& e, FieldEditor& editor, const ConfigField& field) {
  const int index = field.get_choice(e.config);
  const auto count = static_cast<int>(field.choices.size());
  // The names are string literals (each enum's list, base/enum_names.h): NUL-terminated.
  const char* preview =
      index >= 0 && index < count ? field.choices[static_cast<std::size_t>(index)].data() : "?";
  if (ImGui::BeginCombo("##value", preview, list_flags)) {
    for (int i = 0; i < count; ++i) {
      if (ImGui::Selectable(field.choices[static_cast<std::size_t>(i)].data(), i == index)) {
        field.set_choice(e.config, i);
      }
      record_option(e, field, field.choices[static_cast<std::size_t>(i)]);
    }
    ImGui::EndCombo();
  }
  record_field_rect(e, editor);
  help_tooltip(field);
  trailing_label(editor, field);
  if (field.stack_kernel >= 0) stack_kernel_origin(e, field);
}

void edit_number(Edit& e, FieldEditor& editor, const ConfigField& field) {
  double& value = *field.number(e.config);
  double shown = value;
  if (ImGui::InputDouble("##value", &shown, 0.1, 1.0, "%.3f") &&
      shown >= static_cast<double>(field.min) && shown <= static_cast<double>(field.max)) {
    value = shown;
  }
  record_field_rect(e, editor);
  help_tooltip(field);
  trailing_label(editor, field);
}

void edit_name_set(Edit& e, FieldEditor& editor, const ConfigField& field) {
  ImGui::TextUnformatted(editor.label.c_str());
  help_tooltip(field);
  record_field_rect(e, editor);
  auto* bits = reinterpret_cast<unsigned int*>(field.bits(e.config));
  ImGui::Indent();
  for (std::size_t i = 0; i < field.choices.size(); ++i) {
    if (i % 2 == 1) ImGui::SameLine(ImGui::GetWindowContentRegionMax().x * 0.5f);
    ImGui::CheckboxFlags(field.choices[i].data(), bits, 1u << i);
  }
  ImGui::Unindent();
}

// A field typed as text and parsed as it is typed: each parse that succeeds is applied (`apply`
// copies what the field sets from the parsed scratch configuration), a failing one is shown.
template <typename Apply>
void edit_parsed_text(Edit& e, FieldEditor& editor, const ConfigField& field, Apply apply) {
  if (ImGui::InputText("##value", &editor.text)) {
    stagemem::Config scratch = e.config;
    stagemem::Diagnostics diagnostics;
    if (stagemem::parse_field_text(field, editor.text, scratch, diagnostics, field.path)) {
      apply(scratch);
      editor.error.clear();
    } else {
      editor.error = diagnostics.errors.front().message;
    }
  }
  record_field_rect(e, editor);
  help_tooltip(field);
  trailing_label(editor, field);
  if (!editor.error.empty()) ImGui::TextColored(error_colour, "%s", editor.error.c_str());
}

void edit_integer_list(Edit& e, FieldEditor& editor, const ConfigField& field) {
  edit_parsed_text(e, editor, field, [&](stagemem::Config& parsed) {
    *field.integer_list(e.config) = *field.integer_list(parsed);
  });
}

// The stack: the kernel options that follow it change with it (parse_field_text derives them).
void edit_stack(Edit& e, FieldEditor& editor, const ConfigField& field) {
  edit_parsed_text(e, editor, field,
                   [&](stagemem::Config& parsed) { e.config.training = parsed.training; });
}

void edit_text(Edit& e, FieldEditor& editor, const ConfigField& field) {
  std::string& text = *field.text(e.config);
  if (ImGui::InputText("##value", &text)) {
    const auto limit = static_cast<std::size_t>(field.max_text_length);
    if (text.size() > limit) text.resize(limit);
  }
  record_field_rect(e, editor);
  help_tooltip(field);
  trailing_label(editor, field);
}

void edit_model_preset(Edit& e, FieldEditor& editor, const ConfigField& field) {
  const bool custom = !e.config.custom_model.empty();
  if (ImGui::BeginCombo("##value", custom ? "(custom model below)" : e.config.model.c_str(),
                        list_flags)) {
    for (const std::string& name : e.view.preset_names) {
      if (ImGui::Selectable(name.c_str(), !custom && name == e.config.model)) {
        e.config.model = name;
        e.config.custom_model.clear();
      }
      record_option(e, field, name);
    }
    ImGui::EndCombo();
  }
  record_field_rect(e, editor);
  help_tooltip(field);
  trailing_label(editor, field);
}

// The pasted text is the panel's own until Import parses it: then its model becomes the custom
// model of the configuration being edited.
void import_hugging_face(Edit& e) {
  ConfigView& view = e.view;
  if (ImGui::TreeNode("Paste a Hugging Face config.json")) {
    ImGui::InputTextMultiline("##hf_config", &view.hf_config_text,
                              ImVec2(-1.0f, ImGui::GetTextLineHeight() * 6.0f));
    if (ImGui::Button("Import")) {
      stagemem::HfImport imported = stagemem::import_hf_config(view.hf_config_text);
      view.hf_import_errors = std::move(imported.diagnostics.errors);
      if (imported.model) {
        e.config.custom_model = stagemem::model_to_text(*imported.model);
        view.hf_import_message = "Imported " + imported.model->name + " as the custom model below";
      } else {
        view.hf_import_message.clear();
      }
    }
    publish(e.out, Widget::hf_import);
    ImGui::SetItemTooltip(
        "Reads the model's shapes (stagemem's custom model text replaces the preset)");
    if (!view.hf_import_message.empty()) {
      ImGui::SameLine();
      ImGui::TextDisabled("%s", view.hf_import_message.c_str());
    }
    for (const auto& error : view.hf_import_errors) {
      ImGui::PushStyleColor(ImGuiCol_Text, error_colour);
      ImGui::TextWrapped("%s: %s", error.field.c_str(), error.message.c_str());
      ImGui::PopStyleColor();
    }
    ImGui::TreePop();
  }
}

void edit_custom_model(Edit& e, FieldEditor& editor, const ConfigField& field) {
  ImGui::TextUnformatted(editor.label.c_str());
  help_tooltip(field);
  std::string& text = e.config.custom_model;
  if (ImGui::InputTextMultiline("##value", &text,
                                ImVec2(-1.0f, ImGui::GetTextLineHeight() * 3.5f))) {
    const auto limit = static_cast<std::size_t>(field.max_text_length);
    if (text.size() > limit) text.resize(limit);
  }
  record_field_rect(e, editor);
  help_tooltip(field);
}

void edit_device_preset(Edit& e, FieldEditor& editor, const ConfigField& field) {
  std::string& preset = e.config.device.preset;
  // Each device with its capacity: "h200 (139.8 GiB)", as the verdict states it.
  const auto with_capacity = [](const stagemem::DevicePreset& device) {
    return std::string(device.name) + " (" + stagemem::gib_number(device.bytes, 1) + " GiB)";
  };
  const std::optional<stagemem::DevicePreset> chosen = stagemem::find_device(preset);
  const std::string preview = preset.empty() ? "(none)" : chosen ? with_capacity(*chosen) : preset;
  if (ImGui::BeginCombo("##value", preview.c_str(), list_flags)) {
    if (ImGui::Selectable("(none)", preset.empty())) preset.clear();
    for (const stagemem::DevicePreset& device : stagemem::device_presets()) {
      if (ImGui::Selectable(with_capacity(device).c_str(), preset == device.name)) {
        preset = std::string(device.name);
      }
      record_option(e, field, device.name);
      ImGui::SetItemTooltip("%.*s: %s (%.*s)", static_cast<int>(device.display_name.size()),
                            device.display_name.data(), stagemem::format_gib(device.bytes).c_str(),
                            static_cast<int>(device.source.size()), device.source.data());
    }
    ImGui::EndCombo();
  }
  record_field_rect(e, editor);
  help_tooltip(field);
  trailing_label(editor, field);
}

bool draws_own_label(const ConfigField& field) {
  return field.kind == FieldKind::boolean || field.kind == FieldKind::name_set ||
         field.key == "custom";
}

float label_width(const FieldEditor& editor) {
  return ImGui::CalcTextSize(editor.label.c_str()).x + ImGui::GetStyle().ItemInnerSpacing.x;
}

// `column`: the widest label of the group, so that the group's values line up. The label goes
// beside the value when the value keeps at least 9 em, else above it (never cut off).
void edit_field(Edit& e, FieldEditor& editor, const ConfigField& field, float column) {
  ImGui::PushID(field.key.data(), field.key.data() + field.key.size());
  const float room = ImGui::GetContentRegionAvail().x - ImGui::GetFontSize() * 9.0f;
  const float own = label_width(editor);
  // The stack takes the whole width: its pairs are longer than a number.
  editor.label_above = field.kind == FieldKind::stack || (!draws_own_label(field) && own > room);
  const float width = std::max(own, column);
  // A label that ends past the panel's edge is cut off: counted for the tests (never expected).
  const float right_edge = ImGui::GetWindowPos().x + ImGui::GetWindowContentRegionMax().x + 1.0f;
  if (editor.label_above) {
    ImGui::TextUnformatted(editor.label.c_str());
    help_tooltip(field);
    if (ImGui::GetItemRectMax().x > right_edge) ++e.view.truncated_labels;
  }
  ImGui::PushItemWidth(editor.label_above ? -1.0f : -width);
  if (field.key == "model") {
    edit_model_preset(e, editor, field);
    import_hugging_face(e);
  } else if (field.key == "custom") {
    edit_custom_model(e, editor, field);
  } else if (field.key == "device") {
    edit_device_preset(e, editor, field);
  } else {
    switch (field.kind) {
      case FieldKind::integer:
        edit_integer(e, editor, field);
        break;
      case FieldKind::boolean:
        ImGui::Checkbox(editor.label.c_str(), field.boolean(e.config));
        record_field_rect(e, editor);
        help_tooltip(field);
        break;
      case FieldKind::choice:
        edit_choice(e, editor, field);
        break;
      case FieldKind::number:
        edit_number(e, editor, field);
        break;
      case FieldKind::name_set:
        edit_name_set(e, editor, field);
        break;
      case FieldKind::integer_list:
        edit_integer_list(e, editor, field);
        break;
      case FieldKind::stack:
        edit_stack(e, editor, field);
        break;
      case FieldKind::text:
        edit_text(e, editor, field);
        break;
    }
  }
  if (ImGui::GetItemRectMax().x > right_edge) ++e.view.truncated_labels;
  ImGui::PopItemWidth();
  ImGui::PopID();
}

}  // namespace

void sync_field_texts(ConfigView& view, const stagemem::Config& config) {
  const auto fields = stagemem::config_fields();
  for (std::size_t i = 0; i < fields.size() && i < view.editors.size(); ++i) {
    const ConfigField& field = fields[i];
    if (field.kind != FieldKind::integer_list && field.kind != FieldKind::stack) continue;
    FieldEditor& editor = view.editors[i];
    stagemem::Config scratch = config;
    stagemem::Diagnostics ignored;
    if (stagemem::parse_field_text(field, editor.text, scratch, ignored, field.path) &&
        stagemem::field_equals(field, scratch, config)) {
      continue;  // the text already says this (perhaps spelt differently while being typed)
    }
    editor.text = stagemem::format_field_text(field, config);
    editor.error.clear();
  }
}

void init_config_view(ConfigView& view, const stagemem::Config& config) {
  const auto fields = stagemem::config_fields();
  view.editors.assign(fields.size(), FieldEditor{});
  for (std::size_t i = 0; i < fields.size(); ++i) {
    const ConfigField& field = fields[i];
    // "parallel.tensor_parallel" -> "tensor parallel (tp)"
    std::string name(field.path.substr(field.path.rfind('.') + 1));
    std::replace(name.begin(), name.end(), '_', ' ');
    view.editors[i].label = name + " (" + std::string(field.key) + ")";
  }
  view.preset_names.clear();
  for (std::string_view name : stagemem::preset_names()) view.preset_names.emplace_back(name);
  sync_field_texts(view, config);
}

void draw_config(const AppState& state, ConfigView& view, Actions& out) {
  stagemem::Config edited = state.config;
  Edit e{state, edited, view, out};
  view.option_rects.clear();
  // Problems the core names by a field this panel has no widget for.
  show_field_errors(state.diagnostics, nullptr);
  const auto fields = stagemem::config_fields();
  std::size_t hidden = 0;
  view.truncated_labels = 0;
  for (const Group& group : groups) {
    ImGui::SetNextItemOpen(group.open, ImGuiCond_FirstUseEver);
    const bool open = ImGui::CollapsingHeader(group.title);
    view.option_rects.emplace_back("group_" + std::string(group.prefix),
                                   last_item_rect(out.frame()));
    if (!open) continue;
    const auto shown = [&](std::size_t i) {
      return view.show_all_fields || field_applies(state, fields[i]) ||
             has_error(state.diagnostics, fields[i]);
    };
    // The group's label column: its widest label that leaves the value 9 em (longer labels go
    // above their value).
    const float room = ImGui::GetContentRegionAvail().x - ImGui::GetFontSize() * 9.0f;
    float column = 0.0f;
    for (std::size_t i = 0; i < fields.size(); ++i) {
      if (group_of(fields[i]) == group.prefix && shown(i) && !draws_own_label(fields[i])) {
        const float width = label_width(view.editors[i]);
        if (width <= room) column = std::max(column, width);
      }
    }
    for (std::size_t i = 0; i < fields.size(); ++i) {
      if (group_of(fields[i]) != group.prefix) continue;
      if (!shown(i)) {
        view.editors[i].rect = WidgetRect{};
        ++hidden;
        continue;
      }
      edit_field(e, view.editors[i], fields[i], column);
      show_field_errors(state.diagnostics, &fields[i]);
      offer_fixes(e, fields[i]);
    }
    if (group.prefix == "model" && state.report_valid && !report_stale(state)) {
      ImGui::TextDisabled("%s parameters", state.report_labels.total_parameters.c_str());
    }
  }
  ImGui::Checkbox("show every field", &view.show_all_fields);
  if (hidden > 0) {
    ImGui::TextDisabled("%d fields hidden: they do not apply to this model or these choices",
                        static_cast<int>(hidden));
  }
  if (!(edited == state.config)) out.push(SetConfig{std::move(edited)});
}
