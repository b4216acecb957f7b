// Tests of term_catalogue.h: every family appears, names are unique, options bring their terms.
#include <set>

#include "catch.h"
#include "render/term_catalogue.h"

using namespace stagemem;

TEST_CASE("The catalogue lists every kind of term once, from the real estimator") {
  const auto entries = term_catalogue();
  REQUIRE(entries.size() > 50);
  std::set<std::string> names;
  std::set<Family> families;
  for (const CatalogueEntry& e : entries) {
    INFO(e.name);
    CHECK(names.insert(e.name).second);
    families.insert(e.family);
    CHECK(!e.scaling.empty());
    CHECK(!e.example_formula.empty());
  }
  CHECK(families.size() == 4);  // resident, activation, transient, gap
  const auto brought = [&](std::string_view prefix) {
    for (const CatalogueEntry& e : entries) {
      if (e.name.starts_with(prefix)) return e.brought_in_by;
    }
    return std::string("(absent)");
  };
  CHECK(brought("KDA: per-chunk recurrent states") == "kda_backend=eager");
  CHECK(brought("recompute working set") == "recompute=full");
  CHECK(brought("Muon Newton-Schulz buffers") == "optimizer=distributed-muon");
  CHECK(brought("AttnRes mix internal") == "default options");
  CHECK(brought("context-parallel ring attention forward buffers") == "cp=2");
  CHECK(brought("context-parallel ring attention backward buffers") == "cp=2");
  CHECK(brought("context-parallel all-to-all buffers") == "cp=2, cp_comm_type=a2a");
  CHECK(brought("KDA: w, u, gated q, gated k, new v (chunk_kda disable_recompute") ==
        "kda_backend=disable-recompute");
  CHECK(brought("KDA: intra-chunk Aqk (fp32) and Akk (bf16) matrices (fla 0.4.0)") ==
        "fla_version=0.4.0");
  CHECK(brought("MoE: expert outputs before probability weighting") ==
        "moe_unpermute=legacy-unpermute-with-probs");
  CHECK(brought("output: cross-entropy logits gradient computed in forward") ==
        "cross_entropy=te-fused");
  CHECK(brought("MLP backward working set") == "default options");
  CHECK(brought("attention backward working set") == "default options");
  CHECK(brought("chunk_kda forward intermediates") == "default options");
  // Issue 25: sharded data parallelism and torchtitan's pieces.
  CHECK(brought("Megatron-FSDP gathered parameter buckets (") == "dp_impl=megatron-fsdp");
  CHECK(brought("Megatron-FSDP non-unit parameters kept gathered") == "dp_impl=megatron-fsdp");
  CHECK(brought("Megatron-FSDP non-unit parameters gathered from the forward") ==
        "dp_impl=megatron-fsdp, stack megatron-core=0.17");
  CHECK(brought("sharded fp32 parameters") == "framework=torchtitan (a Llama-3 model)");
  CHECK(brought("FSDP2 backward") == "framework=torchtitan (a Llama-3 model)");
  CHECK(brought("FSDP2 parameters kept gathered") ==
        "framework=torchtitan, reshard_after_forward=never");
  CHECK(brought("FSDP2 post-forward shards") == "framework=torchtitan, reshard_ranks=2");
  CHECK(brought("chunked loss loop") == "framework=torchtitan (a Llama-3 model)");
  CHECK(brought("FSDP2 norm + output unit kept gathered") ==
        "framework=torchtitan (a Llama-3 model)");
  CHECK(brought("dense MLP: w2 output (saved by per-op SAC") ==
        "framework=torchtitan, recompute=selective (per-op SAC)");
}
