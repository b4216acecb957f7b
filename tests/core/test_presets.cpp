// Tests of model/presets.h: every built-in model is its embedded config.json, imports and counts
// exactly its published total.
#include <string>

#include "catch.h"
#include "config/production_layouts.h"
#include "corpus.h"
#include "model/parameters.h"
#include "model/presets.h"

using namespace stagemem;

namespace {

std::int64_t total_of(std::string_view name) {
  const auto m = find_preset(name);
  REQUIRE(m.has_value());
  return total_parameters(*m);
}

}  // namespace

TEST_CASE("Every preset name is a file stem and imports without error") {
  const auto names = preset_names();
  CHECK(names.size() == 11);
  for (std::string_view name : names) {
    INFO(std::string(name));
    const auto m = find_preset(name);
    REQUIRE(m.has_value());
    CHECK(m->name == name);
    CHECK(total_parameters(*m) > 0);
  }
  CHECK(!find_preset("Llama-3.1-8B").has_value());  // names are lowercase and exact
}

TEST_CASE("Each preset is its config.json file, embedded verbatim (without the final newline)") {
  for (std::string_view name : preset_names()) {
    INFO(std::string(name));
    const std::string file = stagemem_tests::read_whole_file(
        stagemem_tests::corpus_path("../src/core/model/presets/" + std::string(name) + ".json"));
    REQUIRE(file.ends_with("}\n"));
    CHECK(preset_hf_config(name) == std::string_view(file).substr(0, file.size() - 1));
  }
  CHECK(!preset_hf_config("no-such-model").has_value());
}

TEST_CASE("Llama 3.1 totals equal the HF safetensors totals") {
  CHECK(total_of("llama-3.1-8b") == 8'030'261'248LL);
  // 70B: h 8192, 80 layers, 64 heads, 8 KV heads, I 28672. Per layer: q,o 2 x 8192^2 =
  // 134,217,728; k,v 2 x 8192 x 1024 = 16,777,216; MLP 3 x 8192 x 28672 = 704,643,072; norms
  // 16,384 -> 855,654,400 x 80 = 68,452,352,000; embedding + head 2 x 128,256 x 8192 =
  // 2,101,346,304; final norm 8,192 -> 70,553,706,496.
  CHECK(total_of("llama-3.1-70b") == 70'553'706'496LL);
  // 405B: h 16384, 126 layers, 128 heads, 8 KV heads, I 53248. Per layer: q,o 2 x 16384^2 =
  // 536,870,912; k,v 2 x 16384 x 1024 = 33,554,432; MLP 3 x 16384 x 53248 = 2,617,245,696; norms
  // 32,768 -> 3,187,703,808 x 126 = 401,650,679,808; embedding + head 2 x 128,256 x 16384 =
  // 4,202,692,608; final norm 16,384 -> 405,853,388,800 (the HF safetensors total).
  CHECK(total_of("llama-3.1-405b") == 405'853'388'800LL);
}

TEST_CASE("Mixtral 8x7B: 46,702,792,704") {
  // Per layer: attention 41,943,040 (as Llama-3.1-8B); experts 8 x 3 x 4096 x 14336 =
  // 1,409,286,144; router 8 x 4096 = 32,768; norms 8,192 -> 1,451,270,144 x 32 =
  // 46,440,644,608; embedding + head 2 x 32,000 x 4096 = 262,144,000; final norm 4,096.
  const Model m = *find_preset("mixtral-8x7b");
  CHECK(total_parameters(m) == 46'702'792'704LL);
  CHECK(model_parameters(m)[Component::router] == 32 * 32'768LL);
}

TEST_CASE("Qwen3 MoE totals (HF safetensors totals)") {
  // 30B-A3B: h 2048, 48 layers, 32 heads x 128, 4 KV heads. Attention: q 2048 x 4096 =
  // 8,388,608, k,v 2 x 2048 x 512 = 2,097,152, o 8,388,608, q/k norms 2 x 128 -> 18,874,624;
  // experts 128 x 3 x 2048 x 768 = 603,979,776; router 128 x 2048 = 262,144; norms 4,096 ->
  // 623,120,640 x 48 = 29,909,790,720; embedding + head 2 x 151,936 x 2048 = 622,329,856; final
  // norm 2,048 -> 30,532,122,624.
  CHECK(total_of("qwen3-30b-a3b") == 30'532'122'624LL);
  // 235B-A22B: h 4096, 94 layers, 64 heads x 128, 4 KV heads. Attention: q,o 2 x 4096 x 8192 =
  // 67,108,864, k,v 2 x 4096 x 512 = 4,194,304, q/k norms 256 -> 71,303,424; experts 128 x 3 x
  // 4096 x 1536 = 2,415,919,104; router 524,288; norms 8,192 -> 2,487,755,008 x 94 =
  // 233,848,970,752; embedding + head 2 x 151,936 x 4096 = 1,244,659,712; final norm 4,096 ->
  // 235,093,634,560.
  CHECK(total_of("qwen3-235b-a22b") == 235'093'634'560LL);
}

TEST_CASE("DeepSeek-V3: main model 671,026,419,200 and MTP 11,610,068,224") {
  const Model m = *find_preset("deepseek-v3");
  CHECK(m.layers.size() == 61);
  CHECK(m.mtp_layers == 1);
  CHECK(total_parameters_without_mtp(m) == 671'026'419'200LL);
  // MTP: enorm + hnorm 2 x 7168, eh_proj 2 x 7168 x 7168 = 102,760,448, one MLA + MoE decoder
  // layer 11,507,286,272 (below), shared_head.norm 7168 -> 11,610,068,224.
  CHECK(model_parameters(m)[Component::mtp] == 11'610'068'224LL);
  // One MoE decoder layer: MLA 187,107,328 (q_a 7168 x 1536, q_a norm 1536, q_b 1536 x 128 x 192,
  // kv_a 7168 x 576, kv norm 512, kv_b 512 x 128 x 256, o 16384 x 7168) + experts 256 x 3 x 7168 x
  // 2048 = 11,274,289,152 + shared 3 x 7168 x 2048 = 44,040,192 + router 256 x 7168 + 256 bias +
  // norms 2 x 7168.
  const auto layer = count_tensors(layer_tensors(m, {AttentionKind::mla, MlpKind::moe}));
  CHECK(layer.total() == 11'507'286'272LL);
  CHECK(layer[Component::router] == 256 * 7168 + 256);
  CHECK(total_parameters(m) == 671'026'419'200LL + 11'610'068'224LL);
}

TEST_CASE("Kimi K2: 1,026,408,232,448 (DeepSeek-V3 shape, 64 heads, 384 experts)") {
  // MLA per layer with 64 heads: q_a 11,010,048 + 1,536 + q_b 1536 x 64 x 192 = 18,874,368 +
  // kv_a 4,128,768 + 512 + kv_b 512 x 64 x 256 = 8,388,608 + o 8192 x 7168 = 58,720,256 ->
  // 101,124,096. Dense layer 0: + 3 x 7168 x 18432 = 396,361,728 + norms 14,336 -> 497,500,160.
  // MoE layers 1..60: experts 384 x 3 x 7168 x 2048 = 16,911,433,728 + shared 44,040,192 + router
  // 384 x 7168 + 384 = 2,752,896 + norms 14,336 + MLA -> 17,059,365,248 x 60 = 1,023,561,914,880.
  // Embedding + head 2 x 163,840 x 7168 = 2,348,810,240; final norm 7,168. No MTP.
  CHECK(total_of("kimi-k2") == 1'026'408'232'448LL);
}

TEST_CASE("Kimi-Linear-48B-A3B: 49,122,681,728") {
  // h 2304, 27 layers: KDA at 1-based ids {1,2,3,5,...,26} (20 layers), MLA at {4,...,24,27} (7).
  // MLA (no q low rank): q 2304 x 32 x 192 = 14,155,776; kv_a 2304 x 576 = 1,327,104; kv norm 512;
  // kv_b 512 x 32 x 256 = 4,194,304; o 4096 x 2304 = 9,437,184 -> 29,114,880.
  // KDA (32 heads x 128 = 4096): q,k,v 3 x 2304 x 4096 = 28,311,552; convs 3 x 4096 x 4 = 49,152;
  // A_log 32; f_a 2304 x 128 = 294,912; f_b 128 x 4096 = 524,288; dt_bias 4096; b 2304 x 32 =
  // 73,728; g_a 294,912; g_b 524,288; o_norm 128; o 9,437,184 -> 39,514,272.
  // Layer 0 dense 3 x 2304 x 9216 = 63,700,992; MoE layers: experts 256 x 3 x 2304 x 1024 =
  // 1,811,939,328, shared 3 x 2304 x 1024 = 7,077,888, router 256 x 2304 + 256 = 590,080.
  // Norms 2 x 2304 per layer. Embedding + head 2 x 163,840 x 2304 = 754,974,720; final norm 2304.
  // Total: 7 x 29,114,880 + 20 x 39,514,272 + 63,700,992 + 26 x 1,819,607,296 + 27 x 4,608 +
  // 754,974,720 + 2,304 = 49,122,681,728.
  const Model m = *find_preset("kimi-linear-48b-a3b");
  CHECK(total_parameters(m) == 49'122'681'728LL);
  const auto counts = model_parameters(m);
  CHECK(counts[Component::attention_mla] == 7 * 29'114'880LL - 7 * 512);
  CHECK(counts[Component::attention_kda] == 20 * (39'514'272LL - 128));
}

TEST_CASE("Kimi K3: 2,779,484,476,000 with the documented assumptions") {
  // h 7168, 93 layers (24 MLA, 69 KDA), vocab 163,840, untied.
  // MLA (96 heads, q_lora 1536, output gate): q_a 11,010,048 + q norm 1,536 + q_b 1536 x 96 x
  // 192 = 28,311,552 + kv_a 4,128,768 + kv norm 512 + kv_b 512 x 96 x 256 = 12,582,912 + gate
  // 7168 x 12288 = 88,080,384 + o 88,080,384 -> 232,196,096.
  // KDA (96 heads x 128 = 12288, full-rank gate): q,k,v 3 x 88,080,384 = 264,241,152; convs 3 x
  // 12288 x 4 = 147,456; A_log 96; f_proj 88,080,384; dt_bias 12,288; b 7168 x 96 = 688,128;
  // g_a 917,504; g_b 1,572,864; o_norm 128; o 88,080,384 -> 443,740,384.
  // Dense layer 0: 3 x 7168 x 33792 = 726,663,168. MoE (92 layers): router 896 x 7168 + 896 =
  // 6,423,424; latent down/up 2 x 7168 x 3584 = 51,380,224; latent norm 3,584; experts 896 x 3 x
  // 3584 x 3072 = 29,595,009,024; shared 2 x 3 x 7168 x 3072 = 132,120,576 -> 29,784,936,832.
  // Norms 2 x 7168 per layer; AttnRes (93 x 2 + 1 sites) x 2 x 7168 = 2,680,832.
  // Embedding + head 2 x 163,840 x 7168 = 2,348,810,240; final norm 7,168.
  const Model m = *find_preset("kimi-k3");
  REQUIRE(m.layers.size() == 93);
  CHECK(m.attn_res.block_size == 12);
  const auto counts = model_parameters(m);
  CHECK(counts[Component::attn_res] == 2'680'832LL);
  CHECK(counts[Component::attention_mla] == 24 * (232'196'096LL - 1'536 - 512));
  CHECK(counts[Component::attention_kda] == 69 * (443'740'384LL - 128));
  CHECK(counts[Component::dense_mlp] == 726'663'168LL);
  CHECK(total_parameters(m) == 2'779'484'476'000LL);
}

TEST_CASE("GPT-3 175B as a GPT-2 config: 174,604,259,328") {
  // h 12288, 96 layers. Per layer: c_attn 12288 x 36864 + 36864, c_proj 12288^2 + 12288, c_fc
  // 12288 x 49152 + 49152, mlp c_proj 49152 x 12288 + 12288, ln_1/ln_2 4 x 12288 -> 12h^2 + 13h =
  // 1,812,099,072 x 96 = 173,961,510,912; wte 50,257 x 12288 = 617,558,016 (tied); wpe 2048 x
  // 12288 = 25,165,824; ln_f 24,576. The paper's "175.0B" is this figure rounded.
  const Model m = *find_preset("gpt3-175b");
  CHECK(total_parameters(m) == 174'604'259'328LL);
  CHECK(model_parameters(m)[Component::lm_head] == 0);
  CHECK(model_parameters(m)[Component::position_embedding] == 25'165'824LL);
}

TEST_CASE("Kimi K3's production layout is data and validates") {
  const auto production = preset_production_layout("kimi-k3");
  REQUIRE(production.has_value());
  const Model m = *find_preset("kimi-k3");
  Diagnostics d;
  validate_layout(m, production->layout, d);
  CHECK(d.ok());
  CHECK(d.warnings.empty());  // every boundary on a block boundary
  CHECK(data_parallel_size(production->layout) == 28);
  CHECK(expert_data_parallel_size(production->layout) == 1);
  CHECK(world_size(production->layout) == 224);
  CHECK(!preset_production_layout("llama-3.1-8b").has_value());
  // The production run is distributed Muon, not the default plain Adam (issue 11 item 7): the
  // preset carries its optimizer with the layout.
  CHECK(production->optimizer.kind == OptimizerKind::distributed_muon);
  CHECK(production->optimizer.param_gather == ParamGather::buffer);
  CHECK(std::string(production->description).find("distributed Muon") != std::string::npos);
}
