#include "model/presets.h"

#include "model/hf_config.h"
#include "model/preset_sources.h"

// Each config is the model's published config.json (src/core/model/presets/, embedded at build
// time by cmake/EmbedPresets.cmake).
//
// Assumptions where the config does not fix a tensor's shape (applied by the importer, stated
// again here because they matter for kimi-k3, the users' own model):
//  - MLA output gate (`mla_use_output_gate`): one bias-free projection h -> heads x v_head_dim,
//    column-parallel under TP (a per-channel sigmoid gate on the attention output before o_proj).
//  - Latent MoE (`routed_expert_hidden_size` 3584 < hidden 7168): the router scores tokens at the
//    full hidden size before the down-projection; one bias-free h -> latent projection before
//    dispatch, one latent -> h after combine, an RMSNorm weight over the latent when
//    `latent_moe_use_norm`; the projections are duplicated on every TP rank. Routed experts are
//    gated (gate, up: latent -> I; down: I -> latent), matching the checkpoint's w1/w3/w2 shapes;
//    shared experts work at the full hidden size.
//  - KDA full-rank gate (`use_full_rank_gate`): f_proj h -> heads x head_dim replaces f_a/f_b; the
//    output gate keeps its low-rank g_a/g_b pair.
//  - `hidden_act` "situ" is a gated activation (gate and up projections, as with SwiGLU).
//  - Attention Residuals (`attn_res_block_size` 12): per decoder layer two mixing sites, each
//    with a pseudo-query (h) and a key RMSNorm weight (h), plus one output site (model.h).
//  - Kimi K3's vision tower (`vision_config`) is not counted: stagemem models the language model.

namespace stagemem {

std::vector<std::string_view> preset_names() {
  std::vector<std::string_view> out;
  for (const PresetSource& p : embedded_preset_sources()) out.push_back(p.name);
  return out;
}

std::optional<std::string_view> preset_hf_config(std::string_view name) {
  for (const PresetSource& p : embedded_preset_sources()) {
    if (p.name == name) return p.config;
  }
  return std::nullopt;
}

std::optional<Model> find_preset(std::string_view name) {
  const std::optional<std::string_view> config = preset_hf_config(name);
  if (!config) return std::nullopt;
  HfImport imported = import_hf_config(*config);
  if (!imported.model) return std::nullopt;  // cannot happen: tests import every preset
  imported.model->name = std::string(name);
  return imported.model;
}

}  // namespace stagemem
