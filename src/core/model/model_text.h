// model_text.h — a whole custom model as one short line of text, for links and the CLI.
//
// Purpose: a link can carry a fully custom model (not a preset) within the link-size budget:
// the 93-layer KDA/MLA hybrid fits in a few hundred characters. Items are `key:value`, separated
// by ';', in any order; absent items keep the Model defaults:
//
//   name:my-model;h:7168;v:163840;norm:rms|ln;tied:0|1;pos:N;fnorm:0|1
//   gqa:HEADS,KV_HEADS,HEAD_DIM[,qknorm][,qkvbias][,obias][,fused]
//   mla:HEADS,Q_LORA(0=none),KV_LORA,NOPE,ROPE,V[,gate]
//   kda:HEADS,HEAD_DIM,CONV_KERNEL[,fullgate]
//   mlp:INTERMEDIATE,swiglu|gelu[,bias]
//   moe:EXPERTS,TOP_K,EXPERT_INTERMEDIATE,SHARED,SHARED_INTERMEDIATE[,bias][,latent=N][,lnorm]
//   mtp:COUNT,KIND          (KIND as in layers, e.g. me)
//   ar:BLOCK_SIZE,SITES_PER_LAYER
//   layers:KIND[*N],KIND[*N],...   KIND = attention g|m|k (GQA, MLA, KDA) + MLP d|e (dense, MoE)
//
// Every characters used is safe in a URL fragment. Errors name the item ("model.<key>") and the
// allowed range; the same bounds as the Hugging Face import keep every count within int64.
// Limitations: one shape per attention kind and per MLP kind (as model.h).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "base/diagnostics.h"
#include "model/model.h"

namespace stagemem {

std::string model_to_text(const Model& model);

struct DecodedModel {
  std::optional<Model> model;  // present when diagnostics.ok()
  Diagnostics diagnostics;
};
// `field_prefix` names the errors, e.g. "url.custom" gives "url.custom.h".
DecodedModel model_from_text(std::string_view text, std::string_view field_prefix);

}  // namespace stagemem
