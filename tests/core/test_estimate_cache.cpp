// Tests of estimate_cache.h / estimate_cache.cpp: each group of cached terms is rebuilt exactly
// when the inputs it is keyed by change, an activation memo round-trips, and an estimate that
// ends in an error hands its stages' storage to the next one. (That a cached estimate equals a
// fresh one is tested in test_estimate.cpp.)
#include "catch.h"
#include "estimate/estimate.h"
#include "estimate/estimate_cache.h"
#include "memory/activation_terms.h"

using namespace stagemem;

namespace {

// Llama-3.1-8B (32 layers) at PP 2: two stages of 16 layers; seq 4096, mbs 1, gbs 8 at DP 1,
// so M = 8 micro-batches per step.
Config llama_pp2() {
  Config c;
  c.model = "llama-3.1-8b";
  c.parallel.pipeline_parallel = 2;
  c.training.sequence_length = 4096;
  c.training.micro_batch = 1;
  c.training.global_batch = 8;
  return c;
}

std::int64_t bytes_of(const std::vector<Term>& terms) {
  std::int64_t total = 0;
  for (const Term& t : terms) total += t.bytes;
  return total;
}

}  // namespace

TEST_CASE("EstimateCache: each group of terms is rebuilt exactly when its inputs change") {
  Diagnostics d;
  Config c = llama_pp2();
  const auto model = resolve_model(c, d);
  REQUIRE(model);
  EstimateCache cache;

  // The layout: validation, plan and per-rank parameters of both stages.
  refresh_layout(cache, *model, c.parallel);
  REQUIRE(cache.layout_diagnostics.ok());
  REQUIRE(cache.plan);
  REQUIRE(cache.parameters.size() == 2);
  for (std::size_t i = 0; i < 2; ++i) {
    CHECK(cache.parameters[i].layer_count == 16);  // 32 layers over PP 2
    CHECK(cache.parameters_per_rank[i] == cache.parameters[i].per_rank.total());
  }
  // A cached value marked by hand survives a refresh that rebuilds nothing (the same layout).
  const std::int64_t stage_0_parameters = cache.parameters_per_rank[0];
  cache.parameters_per_rank[0] = -7;
  refresh_layout(cache, *model, c.parallel);
  CHECK(cache.parameters_per_rank[0] == -7);
  cache.parameters_per_rank[0] = stage_0_parameters;

  // Resident and optimizer-step terms: their sums are the terms' bytes; kept while precision and
  // optimizer stay, rebuilt (new lists) when the optimizer changes.
  refresh_state_terms(cache, *model, c);
  REQUIRE(cache.state_terms_valid);
  REQUIRE(cache.resident_terms.size() == 2);
  for (std::size_t i = 0; i < 2; ++i) {
    CHECK(cache.resident_sums[i] == bytes_of(cache.resident_terms[i]));
    CHECK(cache.optimizer_step_sums[i] == bytes_of(cache.optimizer_step_terms[i]));
    CHECK(cache.resident_sums[i] > 0);
  }
  const std::int64_t adam_resident = cache.resident_sums[0];
  cache.resident_sums[0] = -7;        // marked by hand
  c.training.sequence_length = 8192;  // not a key of the state terms
  refresh_state_terms(cache, *model, c);
  CHECK(cache.resident_sums[0] == -7);
  c.optimizer.kind = OptimizerKind::muon;  // one momentum instead of Adam's two moments
  refresh_state_terms(cache, *model, c);
  CHECK(cache.resident_sums[0] == bytes_of(cache.resident_terms[0]));
  CHECK(cache.resident_sums[0] < adam_resident);

  // The activation pieces' generation and the kept pipeline input follow the training inputs.
  refresh_activation_inputs(cache, *model, c);
  const std::uint64_t generation = cache.pieces.generation;
  CHECK(cache.kept_input_generation == generation);
  REQUIRE(cache.kept_input_terms.size() == 2);
  for (std::size_t i = 0; i < 2; ++i) {
    CHECK(cache.kept_input_sums[i] == bytes_of(cache.kept_input_terms[i]));
  }
  refresh_activation_inputs(cache, *model, c);  // unchanged: the same generation
  CHECK(cache.pieces.generation == generation);
  c.training.sequence_length = 4096;
  refresh_activation_inputs(cache, *model, c);
  CHECK(cache.pieces.generation == generation + 1);
  CHECK(cache.kept_input_generation == generation + 1);

  // Workspace and gap terms: built on first use, kept while the gap entries stay, dropped when
  // they change.
  refresh_gap_terms(cache, c);
  REQUIRE(cache.gap_terms.size() == 2);
  CHECK(!cache.gap_terms[1].valid);
  const bool grouped_gemm = false;  // a dense model has no grouped GEMM
  const StageGapTerms& built = stage_gap_terms(cache, 1, 1, c, grouped_gemm);
  CHECK(built.valid);
  CHECK(built.entry.size() == built.terms.size());
  refresh_gap_terms(cache, c);
  CHECK(cache.gap_terms[1].valid);
  c.gaps = {{.kind = GapKind::runtime_context, .bytes = 1 << 30, .source = "nvidia-smi"}};
  refresh_gap_terms(cache, c);
  CHECK(!cache.gap_terms[1].valid);
  const StageGapTerms& measured = stage_gap_terms(cache, 1, 1, c, grouped_gemm);
  int entries = 0;
  for (const std::int32_t e : measured.entry) entries += e == 0 ? 1 : 0;
  CHECK(entries == 1);  // the runtime-context row shows gaps[0]'s source

  // A new layout drops every cached term: they all depend on it.
  c.parallel.pipeline_parallel = 4;
  refresh_layout(cache, *model, c.parallel);
  CHECK(cache.parameters.size() == 4);
  CHECK(!cache.state_terms_valid);
  CHECK(cache.gap_terms.empty());
  CHECK(cache.activations.empty());
  CHECK(cache.kept_input_generation == 0);
}

TEST_CASE("EstimateCache: an activation memo kept then taken gives the same terms, shifted") {
  Diagnostics d;
  const Config c = llama_pp2();
  const auto model = resolve_model(c, d);
  REQUIRE(model);
  EstimateCache cache;
  refresh_layout(cache, *model, c.parallel);
  refresh_activation_inputs(cache, *model, c);
  const std::int64_t m = 8;  // gbs 8 / (mbs 1 x DP 1)

  // Stage 1's activation terms computed after two placeholder terms (indices start at 2).
  StageReport computed_stage;
  computed_stage.index = 1;
  computed_stage.terms.resize(2);
  StageActivationTerms empty;
  REQUIRE(!take_activation_memo(cache, 1, c.training.recompute, m, false, computed_stage, empty));
  const StageActivationTerms computed =
      stage_activation_terms(*model, c.parallel, c.training, *cache.plan, 1, m, cache.pieces,
                             &computed_stage.terms, false);
  REQUIRE(computed.first_stored == 2);
  REQUIRE(computed.moment.transient >= 2);
  keep_activation_memo(cache, 1, c.training.recompute, m, false, computed_stage, computed);
  REQUIRE(cache.activations[1].has_terms);
  CHECK(cache.activations[1].terms.size() == computed_stage.terms.size() - 2);

  // Taken after five terms: the same terms and numbers, every index shifted by 5 - 2 = 3.
  StageReport taken_stage;
  taken_stage.terms.resize(5);
  StageActivationTerms taken;
  REQUIRE(take_activation_memo(cache, 1, c.training.recompute, m, false, taken_stage, taken));
  CHECK(taken.first_stored == 5);
  CHECK(taken_stage.terms.size() == 5 + computed_stage.terms.size() - 2);
  for (std::size_t i = 2; i < computed_stage.terms.size(); ++i) {
    CHECK(taken_stage.terms[i + 3].bytes == computed_stage.terms[i].bytes);
    CHECK(taken_stage.terms[i + 3].info == computed_stage.terms[i].info);
  }
  CHECK(taken.stored_bytes == computed.stored_bytes);
  CHECK(taken.largest_transient_bytes == computed.largest_transient_bytes);
  CHECK(taken.moment.transient == computed.moment.transient + 3);
  CHECK(taken.largest_transient == computed.largest_transient + 3);
  CHECK(taken.in_flight_per_chunk == computed.in_flight_per_chunk);
  CHECK(taken.chunk_stored_bytes == computed.chunk_stored_bytes);

  // A peaks estimate takes the numbers only; another M or recompute setting takes nothing.
  StageReport peaks_stage;
  StageActivationTerms peaks;
  REQUIRE(take_activation_memo(cache, 1, c.training.recompute, m, true, peaks_stage, peaks));
  CHECK(peaks_stage.terms.empty());
  CHECK(peaks.stored_bytes == computed.stored_bytes);
  CHECK(peaks.moment.transient == -1);
  StageActivationTerms none;
  CHECK(!take_activation_memo(cache, 1, c.training.recompute, m + 1, false, peaks_stage, none));
  RecomputeConfig full = c.training.recompute;
  full.policy = RecomputePolicy::full;
  CHECK(!take_activation_memo(cache, 1, full, m, false, peaks_stage, none));

  // Neither a peaks estimate nor a one-estimate cache keeps a memo.
  StageActivationMemo& memo = cache.activations[1];
  keep_activation_memo(cache, 1, full, m, true, computed_stage, computed);
  CHECK(memo.recompute == c.training.recompute);
  cache.keep_activations = false;
  keep_activation_memo(cache, 1, full, m, false, computed_stage, computed);
  CHECK(memo.recompute == c.training.recompute);
}

TEST_CASE("EstimateCache: an estimate that ends in an error leaves its stages for the next") {
  // A materialised score tensor of 16M x 16M tokens overflows at PP 1: 2^24 x 2^24 tokens x 32
  // heads x mbs 16 x 2 B = 2^58 B per layer, x 32 layers on the one stage = 2^63 > 2^63 - 1 (at
  // PP 2 the 16 layers a stage holds come to 2^62 and fit). The report keeps no stage, the cache
  // keeps their storage, and the next estimate (PP 2) into an empty report refills the same lists.
  Diagnostics d;
  Config c = llama_pp2();
  const auto model = resolve_model(c, d);
  REQUIRE(model);
  EstimateCache cache;
  Config overflowing = c;
  overflowing.parallel.pipeline_parallel = 1;  // all 32 layers on one stage
  overflowing.training.sequence_length = 16'777'216;
  overflowing.training.micro_batch = 16;
  overflowing.training.global_batch = 16;
  overflowing.training.kernels.attention = AttentionKernel::materialized;
  Report failed;
  estimate_into(overflowing, *model, cache, failed);
  REQUIRE(!failed.diagnostics.ok());
  CHECK(failed.diagnostics.errors[0].field == "training.sequence_length");
  CHECK(failed.stages.empty());
  CHECK(failed.binding_stage == -1);
  REQUIRE(!cache.spare_stages.empty());
  const Term* storage = cache.spare_stages[0].terms.data();
  REQUIRE(storage != nullptr);

  Report next;
  estimate_into(c, *model, cache, next);
  REQUIRE(next.diagnostics.ok());
  REQUIRE(next.stages.size() == 2);
  CHECK(next.stages[0].terms.data() == storage);
  CHECK(cache.spare_stages.empty());
  const Report fresh = estimate(c, *model);
  CHECK(next.stages[0].peak_bytes == fresh.stages[0].peak_bytes);
  CHECK(next.stages[1].peak_bytes == fresh.stages[1].peak_bytes);
  CHECK(next.binding_stage == fresh.binding_stage);
}
