// Tests of model_text.h: every preset round-trips through its one-line text, the 93-layer hybrid
// stays short, and bad model texts are named by item.
#include "catch.h"
#include "model/model_text.h"
#include "model/parameters.h"
#include "model/presets.h"

using namespace stagemem;

TEST_CASE("Every preset round-trips through the model text with the same parameter count") {
  for (std::string_view name : preset_names()) {
    INFO(name);
    const Model model = *find_preset(name);
    const std::string text = model_to_text(model);
    const DecodedModel decoded = model_from_text(text, "model");
    REQUIRE(decoded.diagnostics.ok());
    CHECK(*decoded.model == model);
    CHECK(total_parameters(*decoded.model) == total_parameters(model));
  }
}

TEST_CASE("The 93-layer KDA/MLA hybrid (kimi-k3) fits in a few hundred characters") {
  const std::string text = model_to_text(*find_preset("kimi-k3"));
  INFO(text);
  CHECK(text.size() < 600);
  // Layer 1 is KDA + dense MLP; then (KDA MoE x3, MLA MoE) repeats, 1-based MLA ids 4, 8, ...,
  // 92, 93.
  CHECK(text.find("layers:kd,ke*2,me,ke*3,me") != std::string::npos);
  CHECK(text.find("moe:896,16,3072,2,3072,bias,latent=3584,lnorm") != std::string::npos);
}

TEST_CASE("A hand-written model text: Llama-3.1-8B") {
  // h 4096, vocab 128256, GQA 32/8/128, SwiGLU 14336, 32 layers: 8,030,261,248 parameters.
  const DecodedModel decoded =
      model_from_text("h:4096;v:128256;gqa:32,8,128;mlp:14336,swiglu;layers:gd*32", "m");
  REQUIRE(decoded.diagnostics.ok());
  CHECK(total_parameters(*decoded.model) == 8'030'261'248LL);
  CHECK(decoded.model->name == "custom");
}

TEST_CASE("Bad model texts name the item and the allowed range") {
  struct Case {
    const char* text;
    const char* field;
  };
  const Case corpus[] = {
      {"v:10;gqa:1,1,1;mlp:1,swiglu;layers:gd", "m.h"},
      {"h:10;gqa:1,1,1;mlp:1,swiglu;layers:gd", "m.v"},
      {"h:10;v:10;gqa:1,1,1;mlp:1,swiglu", "m.layers"},
      {"h:0;v:10;gqa:1,1,1;mlp:1,swiglu;layers:gd", "m.h"},
      {"h:-5;v:10;gqa:1,1,1;mlp:1,swiglu;layers:gd", "m.h"},
      {"h:1.5;v:10;gqa:1,1,1;mlp:1,swiglu;layers:gd", "m.h"},
      {"h:99999999999999999999;v:10;gqa:1,1,1;mlp:1,swiglu;layers:gd", "m.h"},
      {"h:10;v:10;gqa:4,3,1;mlp:1,swiglu;layers:gd", "m.gqa"},
      {"h:10;v:10;gqa:4,4;mlp:1,swiglu;layers:gd", "m.gqa"},
      {"h:10;v:10;gqa:4,4,1,sparkly;mlp:1,swiglu;layers:gd", "m.gqa"},
      {"h:10;v:10;gqa:1,1,1;mlp:1,relu;layers:gd", "m.mlp"},
      {"h:10;v:10;gqa:1,1,1;mlp:1,swiglu;layers:gd*0", "m.layers"},
      {"h:10;v:10;gqa:1,1,1;mlp:1,swiglu;layers:gd*x", "m.layers"},
      {"h:10;v:10;gqa:1,1,1;mlp:1,swiglu;layers:zz", "m.layers"},
      {"h:10;v:10;gqa:1,1,1;mlp:1,swiglu;layers:gd*10001", "m.layers"},
      {"h:10;v:10;gqa:1,1,1;mlp:1,swiglu;layers:me", "m.layers"},
      {"h:10;v:10;gqa:1,1,1;layers:gd", "m.layers"},
      {"h:10;v:10;gqa:1,1,1;moe:4,8,1,0,0;layers:ge", "m.moe"},
      {"h:10;v:10;gqa:1,1,1;moe:4,2,1,1,0;layers:ge", "m.moe"},
      {"h:10;v:10;gqa:1,1,1;mlp:1,swiglu;warp:9;layers:gd", "m.warp"},
      {"h:10;v:10;gqa:1,1,1;mlp:1,swiglu;tied:2;layers:gd", "m.tied"},
      {"h:10;v:10;name:<b>;gqa:1,1,1;mlp:1,swiglu;layers:gd", "m.name"},
      {"h:10;v:10;gqa:1,1,1;mlp:1,swiglu;mtp:1,qq;layers:gd", "m.mtp"},
      {"h10;v:10", "m"},
      // 10,000 layers of 65,536 experts of 2^20 x 2^20 would overflow int64.
      {"h:1048576;v:10;gqa:1,1,1;moe:65536,1,1048576,0,0;layers:ge*10000", "m"},
  };
  for (const Case& c : corpus) {
    INFO(c.text);
    const DecodedModel decoded = model_from_text(c.text, "m");
    REQUIRE(!decoded.diagnostics.ok());
    CHECK(!decoded.model.has_value());
    CHECK(decoded.diagnostics.errors[0].field == c.field);
  }
}

TEST_CASE("A layers item that failed is one error, without a follow-on 'missing'") {
  // The case: the repeat count is out of range, so m.layers ends empty; saying that
  // "at least one layer is missing" too would be a second error about the same item.
  for (const char* layers : {"gd*1000000000", "gd*0", "zz", "gd,gd*x"}) {
    INFO(layers);
    const DecodedModel decoded =
        model_from_text(std::string("h:10;v:10;gqa:1,1,1;mlp:1,swiglu;layers:") + layers, "m");
    REQUIRE(decoded.diagnostics.errors.size() == 1);
    CHECK(decoded.diagnostics.errors[0].field == "m.layers");
    CHECK(decoded.diagnostics.errors[0].message.find("missing") == std::string::npos);
  }
  // An empty layers item failed nothing: then it is missing.
  const DecodedModel empty = model_from_text("h:10;v:10;gqa:1,1,1;mlp:1,swiglu;layers:", "m");
  REQUIRE(!empty.diagnostics.ok());
  CHECK(empty.diagnostics.errors.back().field == "m.layers");
}
