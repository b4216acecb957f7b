#include "fixes.h"

#include <utility>

#include "config/config_fields.h"
#include "state.h"

void refresh_fix_its(AppState& state) {
  FixIts& f = state.fix_its;
  stagemem::Diagnostics ignored;
  f.model = stagemem::resolve_model(state.config, ignored);
  f.repairs.clear();
  for (const stagemem::FieldMessage& error : state.diagnostics.errors) {
    f.repairs.push_back(f.model ? stagemem::repair_for(state.config, *f.model, error)
                                : std::nullopt);
  }
}

const stagemem::Repair* repair_of(const AppState& state, std::size_t index) {
  // Only for the configuration the repairs were computed for (refresh_report keeps them in step).
  if (!state.checked || !(state.checked_config == state.config)) return nullptr;
  if (index >= state.fix_its.repairs.size() || !state.fix_its.repairs[index]) return nullptr;
  return &*state.fix_its.repairs[index];
}

bool apply_fix(AppState& state, std::size_t index) {
  const stagemem::Repair* repair = repair_of(state, index);
  if (repair == nullptr) return false;
  stagemem::Config repaired = repair->config;
  state.config = std::move(repaired);
  return true;
}

bool model_changed(const stagemem::Config& before, const stagemem::Config& after) {
  return before.custom_model != after.custom_model ||
         (after.custom_model.empty() && before.model != after.model);
}

namespace {

// A setting a model change carries over that is not the default (the model and the device are
// chosen, not carried).
bool is_kept(const stagemem::ConfigField& field, const stagemem::Config& config,
             bool beyond_layout = false) {
  if (field.key == "model" || field.key == "custom" || field.key == "device" ||
      field.key == "device_bytes" || (beyond_layout && field.path.starts_with("parallel."))) {
    return false;
  }
  return stagemem::field_is_written(field, config, stagemem::default_config());
}

}  // namespace

std::string kept_settings(const stagemem::Config& config, bool beyond_layout) {
  std::string out;
  for (const stagemem::ConfigField& field : stagemem::config_fields()) {
    if (!is_kept(field, config, beyond_layout)) continue;
    out += (out.empty() ? "" : ", ") + std::string(field.key) + "=" +
           stagemem::format_field_text(field, config);
  }
  return out;
}

stagemem::Config defaults_for_model(const stagemem::Config& config) {
  stagemem::Config out = stagemem::default_config();
  out.model = config.model;
  out.custom_model = config.custom_model;
  out.device = config.device;
  return out;
}

std::string settle_model_change(AppState& state) {
  FixIts& f = state.fix_its;
  stagemem::Diagnostics d;
  const auto model = stagemem::resolve_model(state.config, d);
  f.model_changed.clear();
  f.kept = kept_settings(state.config);
  if (!model) return "";
  stagemem::NearestLayout nearest = stagemem::nearest_valid_layout(state.config, *model);
  if (nearest.changes.empty()) return "";
  // What the repair changed is named in model_changed; kept names only what stayed as it was.
  const stagemem::Config before = state.config;
  state.config = std::move(nearest.config);
  f.kept.clear();
  for (const stagemem::ConfigField& field : stagemem::config_fields()) {
    if (!stagemem::field_equals(field, before, state.config)) continue;
    if (!is_kept(field, state.config)) continue;
    f.kept += (f.kept.empty() ? "" : ", ") + std::string(field.key) + "=" +
              stagemem::format_field_text(field, state.config);
  }
  std::string changes;
  for (const std::string& change : nearest.changes) {
    changes += (changes.empty() ? "" : "; ") + change;
  }
  f.model_changed = "Changed for " + model->name + ": " + changes;
  return changes;
}
