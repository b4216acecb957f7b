#include "report/term_names.h"

#include <string>

#include "config/config.h"
#include "model/parameters.h"
#include "report/formula.h"

namespace stagemem {
namespace {

std::string_view group_label(TermGroup group) {
  switch (group) {
    case TermGroup::none:
      return "";
    case TermGroup::gqa:
      return "GQA";
    case TermGroup::mla:
      return "MLA";
    case TermGroup::kda:
      return "KDA";
    case TermGroup::dense_mlp:
      return "dense MLP";
    case TermGroup::moe:
      return "MoE";
    case TermGroup::mtp:
      return "MTP";
    case TermGroup::mtp_gqa:
      return "MTP GQA";
    case TermGroup::mtp_mla:
      return "MTP MLA";
    case TermGroup::mtp_kda:
      return "MTP KDA";
    case TermGroup::mtp_dense_mlp:
      return "MTP dense MLP";
    case TermGroup::mtp_moe:
      return "MTP MoE";
    case TermGroup::all_layers:
      return "all layers";
    case TermGroup::embedding:
      return "embedding";
    case TermGroup::attn_res:
      return "AttnRes";
    case TermGroup::output:
      return "output";
    case TermGroup::mtp_output:
      return "MTP output";
  }
  return "";
}

std::string_view weight_dtype_label(WeightDtype dtype) {
  switch (dtype) {
    case WeightDtype::bf16:
      return "bf16";
    case WeightDtype::fp32:
      return "fp32";
    case WeightDtype::fp8_tensor_scaled:
      return "fp8 e4m3, per-tensor scale";
    case WeightDtype::fp8_block_scaled:
      return "fp8 e4m3, 128x128 block scales";
    case WeightDtype::mxfp8:
      return "mxfp8";
    case WeightDtype::mxfp4:
      return "mxfp4";
    case WeightDtype::nvfp4:
      return "nvfp4";
  }
  return "unknown";
}

std::string roles_text(std::int64_t roles) {
  std::string out;
  for (int r = 0; r < tensor_role_count; ++r) {
    if ((roles & (std::int64_t{1} << r)) == 0) continue;
    if (!out.empty()) out += ", ";
    out += tensor_role_name(static_cast<TensorRole>(r));
  }
  return out;
}

std::string group_text(std::int64_t expert) {
  return expert != 0 ? "routed experts" : "dense parameters";
}

// The kind-specific templates read their numbers in the order report/term_info.h lists them.
std::int64_t n(const Term& t, int i) {
  return i < t.formula.size() ? t.formula.factor(i) : 0;
}

}  // namespace

std::string_view gap_label(GapKind kind) {
  switch (kind) {
    case GapKind::allocator_fragmentation:
      return "allocator fragmentation";
    case GapKind::communication_buffers:
      return "communication-library buffers";
    case GapKind::runtime_context:
      return "runtime context";
    case GapKind::math_library_workspaces:
      return "math-library workspaces";
  }
  return "unknown gap";
}

std::string term_name(const Term& t) {
  const TermInfo& info = *t.info;
  switch (info.text) {
    case TermText::weights:
    case TermText::weight_scales: {
      const auto dtype = static_cast<WeightDtype>(n(t, 0));
      const std::int64_t roles = n(t, info.text == TermText::weights ? 2 : 3);
      const std::string suffix = roles == 0 ? "" : ": " + roles_text(roles);
      if (info.text == TermText::weights) {
        return "weights (" + std::string(weight_dtype_name(dtype)) + ")" + suffix;
      }
      return "weight scales (" + std::string(weight_dtype_label(dtype)) + ")" + suffix;
    }
    case TermText::main_gradient:
      return "main gradient buffer (" +
             std::string(grad_dtype_name(static_cast<GradDtype>(n(t, 0)))) + ")";
    case TermText::master_weights:
      return std::string(master_dtype_name(static_cast<MasterDtype>(n(t, 0)))) +
             " master weights: " + group_text(n(t, 1));
    case TermText::muon_momentum:
      return "Muon momentum (" + std::string(moment_dtype_name(static_cast<MomentDtype>(n(t, 0)))) +
             "): " + group_text(n(t, 1)) + " (" + roles_text(n(t, 2)) + ")";
    case TermText::adam_moments: {
      const bool muon = n(t, 6) != 0;
      return std::string(muon ? "AdamW" : "Adam") + " exp_avg + exp_avg_sq (" +
             std::string(moment_dtype_name(static_cast<MomentDtype>(n(t, 0)))) +
             "): " + group_text(n(t, 1)) +
             (muon ? " not updated by Muon (" + roles_text(n(t, 2)) + ")" : "");
    }
    case TermText::cast_copy:
      return std::string("bf16 cast copy kept by the optimizer: ") +
             (n(t, 0) != 0 ? "Muon-group tensors" : "every parameter") + " (" +
             roles_text(n(t, 1)) + ")";
    case TermText::newton_schulz:
      return "Muon Newton-Schulz buffers (largest matrix: " +
             std::string(label_text(static_cast<Label>(n(t, 0)))) + ")";
    case TermText::gap:
      return "gap: " + std::string(gap_label(static_cast<GapKind>(n(t, 0))));
    case TermText::generic:
    case TermText::recompute_group:
    case TermText::pipeline_buffers:
    case TermText::recompute_selective:
    case TermText::parameter_all_gather:
      break;
  }
  return term_name(info, t.group, t.name_value);
}

bool term_name_has_number(const Term& t) {
  switch (t.info->text) {
    case TermText::generic:
    case TermText::recompute_group:
    case TermText::pipeline_buffers:
    case TermText::recompute_selective:
    case TermText::parameter_all_gather:
      return t.info->name.find("{}") != std::string_view::npos;
    default:
      return false;  // named from the formula's factors (term_name above)
  }
}

std::string term_name_with_number(const Term& t, std::string_view number_text) {
  if (!term_name_has_number(t)) return term_name(t);
  const TermInfo& info = *t.info;
  std::string name;
  if (t.group != TermGroup::none) {
    name += group_label(t.group);
    name += ": ";
  }
  const std::size_t hole = info.name.find("{}");
  name += info.name.substr(0, hole);
  name += number_text;
  name += info.name.substr(hole + 2);
  return name;
}

std::string term_name(const TermInfo& info, TermGroup group, std::int64_t name_value) {
  std::string name;
  if (group != TermGroup::none) {
    name += group_label(group);
    name += ": ";
  }
  const std::size_t hole = info.name.find("{}");
  if (hole == std::string_view::npos) {
    name += info.name;
  } else {
    name += info.name.substr(0, hole);
    name += std::to_string(name_value);
    name += info.name.substr(hole + 2);
  }
  return name;
}

}  // namespace stagemem
