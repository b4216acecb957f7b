// Tests of vocabulary.h: every word of a report spelled once, with worked numbers.
#include <cstdint>
#include <string>

#include "catch.h"
#include "estimate/estimate.h"
#include "render/vocabulary.h"
#include "report/term_names.h"

using namespace stagemem;

namespace {

constexpr std::int64_t gib = std::int64_t{1} << 30;

// Llama-3.1-8B (32 layers) on PP 4, DP 2, H100 80GB: stage 0 holds layers 0-7 and the
// embedding; its peak, 60,023,768,064 B = 55.90 GiB, is the largest (the binding stage).
Config llama_on_h100() {
  Config c;
  c.parallel.pipeline_parallel = 4;
  c.parallel.data_parallel = 2;
  c.device.preset = "h100-80gb";
  return c;
}

StageReport stage_with_chunks(std::vector<LayerRange> chunks) {
  StageReport s;
  s.chunks = std::move(chunks);
  return s;
}

}  // namespace

TEST_CASE("Vocabulary: the JSON's names of families, tags, allocation points and phases") {
  CHECK(family_name(Family::resident) == "resident");
  CHECK(family_name(Family::activation) == "activation");
  CHECK(family_name(Family::transient) == "transient");
  CHECK(family_name(Family::gap) == "gap");
  CHECK(tag_name(Tag::derived) == "DERIVED");
  CHECK(tag_name(Tag::not_measured) == "NOT MEASURED");
  CHECK(tag_name(Tag::documented) == "DOCUMENTED");
  CHECK(allocation_point_name(AllocationPoint::first_step) == "first optimizer step");
  CHECK(allocation_point_name(AllocationPoint::optimizer_step) == "optimizer step");
  CHECK(phase_name(StepPhase::forward) == "forward");
  CHECK(phase_name(StepPhase::backward) == "backward");
  CHECK(phase_name(StepPhase::optimizer_step) == "optimizer-step");
  StageReport s;
  CHECK(binding_phase_name(s) == "forward-backward");
  s.optimizer_phase_binds = true;
  CHECK(binding_phase_name(s) == "optimizer-step");
}

TEST_CASE("Vocabulary: layer ranges, one spelling for chunks and for none") {
  // A cell is first-last (8 layers from 0: 0-7; one layer from 5: 5-5); none is "-".
  CHECK(layer_range_text(0, 8) == "0-7");
  CHECK(layer_range_text(5, 1) == "5-5");
  CHECK(layer_range_text(12, 0) == "-");
  // In a sentence (the peak moment's name): the word, singular for one layer.
  CHECK(layers_text(36, 43) == "layers 36-43");
  CHECK(layers_text(5, 5) == "layer 5");
  // Virtual chunks joined by ",", an empty chunk as "-".
  CHECK(stage_layers_text(stage_with_chunks({{0, 4}, {24, 4}})) == "0-3,24-27");
  CHECK(stage_layers_text(stage_with_chunks({{0, 0}, {24, 8}})) == "-,24-31");
  CHECK(stage_layers_text(stage_with_chunks({{0, 0}})) == "-");
  StageReport by_hand;  // no chunks: the stage's own range
  by_hand.first_layer = 12;
  by_hand.layer_count = 4;
  CHECK(stage_layers_text(by_hand) == "12-15");
  by_hand.layer_count = 0;
  CHECK(stage_layers_text(by_hand) == "-");
  // Llama-3.1-8B at PP 2 x VPP 2: 32 layers in 4 virtual stages of 8, rank 0 runs the first
  // and the third (0-7 and 16-23), rank 1 the second and the fourth.
  Config c;
  c.parallel.pipeline_parallel = 2;
  c.parallel.virtual_stages = 2;
  c.training.global_batch = 8;
  const Report r = estimate(c);
  REQUIRE(r.diagnostics.ok());
  CHECK(stage_layers_text(r.stages[0]) == "0-7,16-23");
  CHECK(stage_layers_text(r.stages[1]) == "8-15,24-31");
}

TEST_CASE("Vocabulary: amounts with their unit") {
  // 1,397,817,344 B / 2^30 = 1.3018 GiB (Llama-3.1-8B's bf16 weights at PP 8, stage 0).
  CHECK(bytes_text(1'397'817'344) == "1,397,817,344 B (1.30 GiB)");
  CHECK(bytes_text(-1'024) == "-1,024 B (-0.00 GiB)");
  CHECK(bytes_text(0) == "0 B (0.00 GiB)");
  // The number alone, for a column headed "GiB": 3 x 2^29 B = 1.5 GiB.
  CHECK(gib_number(gib) == "1.00");
  CHECK(gib_number(3 * (gib / 2), 1) == "1.5");
  CHECK(gib_number(-(gib / 2)) == "-0.50");
  // 4.2 GiB = 4,509,715,660.8 B: 4,509,715,661 B rounds to 4.20.
  CHECK(signed_gib_text(4'509'715'661) == "+4.20 GiB");
  CHECK(signed_gib_text(-4'509'715'661) == "-4.20 GiB");
  CHECK(signed_gib_text(0) == "0.00 GiB");
  // format_gib (base/units.h) is the "x.xx GiB" every writer uses.
  CHECK(format_gib(141 * gib) == "141.00 GiB");
}

TEST_CASE("Vocabulary: ratio, fits and the terms in the peak") {
  CrossCheck check;
  check.has_ratio = true;
  check.ratio = 7.1 / 2.58;  // DESIGN.md's AttnRes internal: 7.1 GB measured, 2.58 GB derived
  CHECK(ratio_text(check) == "x2.752");
  check.has_ratio = false;
  CHECK(ratio_text(check) == "n/a (nothing derived is alive)");

  Report report;
  StageReport stage;
  stage.headroom_bytes = 0;                // exactly full still fits
  CHECK(fits_text(stage, report) == "-");  // no device chosen
  report.device.bytes = 80 * gib;
  CHECK(fits_text(stage, report) == "yes");
  stage.headroom_bytes = -1;
  CHECK(fits_text(stage, report) == "no");

  // Largest first among the terms that count in the peak with bytes; equal ones in report
  // order: 9 (term 2), 9 (term 4), 5 (term 0); term 3 (12 B) is not in the peak, term 1 is 0 B.
  StageReport s;
  for (const auto& [bytes, in_peak] : std::vector<std::pair<std::int64_t, bool>>{
           {5, true}, {0, true}, {9, true}, {12, false}, {9, true}}) {
    Term t;
    t.bytes = bytes;
    t.counts_in_peak = in_peak;
    s.terms.push_back(t);
  }
  const auto largest = largest_terms(s, 3);
  REQUIRE(largest.size() == 3);
  CHECK(largest[0] == &s.terms[2]);
  CHECK(largest[1] == &s.terms[4]);
  CHECK(largest[2] == &s.terms[0]);
  CHECK(largest_terms(s, 10).size() == 3);
  CHECK(in_peak_text(s.terms[1]) == "yes");  // a 0 B gap row still counts (as 0)
  CHECK(in_peak_text(s.terms[3]) == "no");

  // Stage 0 of Llama-3.1-8B at PP 4 (2,270,232,576 parameters): Adam's two fp32 moments
  // 8 B/param = 18,161,860,608 B (16.91 GiB), the fp32 main gradients and the fp32 master
  // weights 4 B/param = 9,080,930,304 B (8.46 GiB) each.
  const Report r = estimate(llama_on_h100());
  REQUIRE(r.diagnostics.ok());
  CHECK(largest_terms_text(r.stages[0]) ==
        "Adam exp_avg + exp_avg_sq (fp32): dense parameters 16.91 GiB; main gradient buffer "
        "(fp32) 8.46 GiB; fp32 master weights: dense parameters 8.46 GiB");
}

TEST_CASE("Vocabulary: where a measurement was read") {
  Measurement m;
  m.point = MeasurementPoint::after_first_step;
  m.stage = 0;
  CHECK(measurement_title(m) == "after-first-step, stage 0");
  m.point = MeasurementPoint::steady_state_peak;
  m.stage = 1;
  m.rank = 4;
  m.figure = MemoryFigure::max_allocated;
  CHECK(measurement_title(m) == "max-allocated at steady-state-peak, stage 1, rank 4");
  Measurement term;
  term.point = MeasurementPoint::term;
  term.term = "AttnRes internal";
  term.stage = 3;
  CHECK(measurement_title(term) == "term AttnRes internal, stage 3");
}

TEST_CASE("Vocabulary: the verdict - fits, over, no device, errors") {
  // Stage 0 peaks at 60,023,768,064 B = 55.90 GiB allocated and 61,150,855,168 B = 56.95 GiB
  // reserved (the allocator replay, what the check uses); the H100 80GB's 85,027,979,264 B =
  // 79.19 GiB.
  Config c = llama_on_h100();
  Report r = estimate(c);
  REQUIRE(r.binding_stage == 0);
  CHECK(verdict_text(r) == "fits: stage 0 binds at 57.0 of 79.2 GiB reserved");
  // On 10 GiB every stage is over; stage 0 by 56.95 - 10.0 = 47.0 GiB.
  c.device.preset.clear();
  c.device.bytes = 10 * gib;
  r = estimate(c);
  CHECK(verdict_text(r) ==
        "stage 0 is 47.0 GiB over (reserved 57.0 of 10.0 GiB); 4 stages do not fit");
  c.device.bytes = 0;
  r = estimate(c);
  CHECK(verdict_text(r) ==
        "no device chosen: stage 0 peaks at 55.9 GiB allocated, 57.0 GiB "
        "reserved");
  c.parallel.tensor_parallel = 0;
  r = estimate(c);
  CHECK(verdict_text(r).empty());
}

TEST_CASE("Vocabulary: the peak headline names what makes the peak, largest part first") {
  // Llama-3.1-8B, PP 4, DP 2, gbs 1024, mbs 1: M = 1024 / 2 = 512 micro-batches; 1F1B holds
  // min(P - p, M) in flight: 4 on stage 0, 1 on stage 3.
  const Config c = llama_on_h100();
  const Report r = estimate(c);
  REQUIRE(r.diagnostics.ok());
  const StageReport& first = r.stages[0];
  const StageReport& last = r.stages[3];
  REQUIRE_FALSE(first.optimizer_phase_binds);
  REQUIRE(first.in_flight_per_chunk == std::vector<std::int64_t>{4});
  REQUIRE(last.in_flight_per_chunk == std::vector<std::int64_t>{1});
  // The parts sum to the peak: resident + stored activations + the transient alive then.
  CHECK(first.resident_bytes + first.gap_bytes + first.activation_bytes +
            first.largest_transient_bytes ==
        first.peak_bytes);
  const std::string head = peak_headline(first);
  const std::string expected_start = "Peak " + format_gib(first.peak_bytes) + " = " +
                                     format_gib(first.activation_bytes) +
                                     " stored activations of 4 micro-batches in flight + ";
  CHECK(head.substr(0, expected_start.size()) == expected_start);
  if (first.largest_transient >= 0) {
    CHECK(head.find(" + " + format_gib(first.largest_transient_bytes) + " transient " +
                    term_name(first.terms[static_cast<std::size_t>(first.largest_transient)])) !=
          std::string::npos);
  }
  // The moment, its transient named once (in the parts, not again after "at").
  PeakMoment moment = peak_moment(first);
  moment.transient = -1;
  CHECK(head.find(" + " + format_gib(first.resident_bytes) + " resident; at " +
                  moment_name(first, moment)) != std::string::npos);
  CHECK(head.size() == head.find("; at ") + 5 + moment_name(first, moment).size());
  CHECK(peak_headline(last).find(" stored activations of 1 micro-batch in flight") !=
        std::string::npos);

  // Interleaved (VPP 2, PP 4, M = 512): the headline sums the report's per-chunk counts at the
  // peak and lists them.
  Config v = c;
  v.parallel.virtual_stages = 2;
  const Report rv = estimate(v);
  REQUIRE(rv.diagnostics.ok());
  const StageReport& s0 = rv.stages[0];
  REQUIRE(s0.in_flight_per_chunk.size() == 2);
  const std::int64_t total = s0.in_flight_per_chunk[0] + s0.in_flight_per_chunk[1];
  CHECK(peak_headline(s0).find(
            " stored activations of " + std::to_string(total) + " micro-batch chunks in flight (" +
            std::to_string(s0.in_flight_per_chunk[0]) + " + " +
            std::to_string(s0.in_flight_per_chunk[1]) + " on 2 chunks)") != std::string::npos);

  // When the optimizer step binds: resident + its transients, the activations freed by then.
  StageReport opt;
  opt.index = 2;
  opt.resident_bytes = 10 * gib;
  opt.gap_bytes = gib;
  opt.optimizer_transient_bytes = 3 * gib;
  opt.optimizer_phase_binds = true;
  opt.peak_bytes = 14 * gib;
  CHECK(peak_headline(opt) ==
        "Peak 14.00 GiB = 10.00 GiB resident + 3.00 GiB optimizer-step transients (the stored "
        "activations are freed by then) + 1.00 GiB measured gaps; at stage 2, optimizer step");
  // In GB: 14 GiB = 15.03 GB, 10 GiB = 10.74 GB, 3 GiB = 3.22 GB, 1 GiB = 1.07 GB.
  CHECK(peak_headline(opt, AmountUnit::gb) ==
        "Peak 15.03 GB = 10.74 GB resident + 3.22 GB optimizer-step transients (the stored "
        "activations are freed by then) + 1.07 GB measured gaps; at stage 2, optimizer step");
}

TEST_CASE("Vocabulary: every setting that changes memory, in one line") {
  // The defaults: llama-3.1-8b on PP 4 (DP 1), gbs 1024 / (mbs 1 x DP 1) = 1,024 micro-batches.
  Config c;
  CHECK(settings_text(c) ==
        "seq 4,096 | mbs 1, gbs 1,024 (1,024 micro-batches) | recompute none | adam (not "
        "distributed) | bf16 weights, fp32 grads | 1f1b");
  c.training.sequence_length = 8192;
  c.training.micro_batch = 2;
  c.parallel.data_parallel = 4;  // 1024 / (2 x 4) = 128
  c.training.recompute.policy = RecomputePolicy::full;
  c.training.recompute.layers = 2;
  c.optimizer.kind = OptimizerKind::distributed_adam;
  c.optimizer.moments = MomentDtype::bf16;
  c.precision.expert_weights = WeightDtype::fp8_block_scaled;
  c.training.low_precision.recipe = Fp8Recipe::block;
  c.parallel.virtual_stages = 2;
  CHECK(settings_text(c) ==
        "seq 8,192 | mbs 2, gbs 1,024 (128 micro-batches) | recompute full (uniform, 2 layers) | "
        "distributed-adam, bf16 moments | bf16 weights, fp8-block expert weights, fp32 grads, "
        "fp8 block | interleaved 1f1b (vpp 2)");
  // gbs that does not divide by mbs x DP: no micro-batch count; selective names its modules.
  c.training.global_batch = 1000;
  c.training.micro_batch = 3;
  c.training.recompute.policy = RecomputePolicy::selective;
  c.parallel.schedule = PipelineSchedule::dualpipev;
  CHECK(
      settings_text(c).starts_with("seq 8,192 | mbs 3, gbs 1,000 | recompute selective "
                                   "(core_attn) | "));
  CHECK(settings_text(c).ends_with("| dualpipev"));
}

TEST_CASE("Vocabulary: amounts in GiB or GB, one spelling for each unit") {
  // 8,030,261,248 B (Llama-3.1-8B's parameter count taken as bytes): / 2^30 = 7.4787 GiB;
  // / 10^9 = 8.0303 GB.
  constexpr std::int64_t bytes = 8'030'261'248;
  CHECK(unit_name(AmountUnit::gib) == "GiB");
  CHECK(unit_name(AmountUnit::gb) == "GB");
  CHECK(small_unit_name(AmountUnit::gb) == "MB");
  CHECK(amount_text(bytes, AmountUnit::gib) == "7.48 GiB");
  CHECK(amount_text(bytes, AmountUnit::gb) == "8.03 GB");
  CHECK(amount_text(bytes, AmountUnit::gb, 1) == "8.0 GB");
  CHECK(amount_number(bytes, AmountUnit::gb) == "8.03");
  // GiB is format_gib's spelling exactly, whatever the decimals.
  CHECK(amount_text(bytes, AmountUnit::gib, 1) == format_gib(bytes, 1));
  CHECK(bytes_text(1'397'817'344, AmountUnit::gb) == "1,397,817,344 B (1.40 GB)");
  CHECK(signed_gib_text(-4'509'715'661, AmountUnit::gb) == "-4.51 GB");
  // Under one unit the small one, one decimal: 224 MiB = 234,881,024 B = 234.9 MB.
  CHECK(compact_amount_text(224 * (std::int64_t{1} << 20), AmountUnit::gib) == "224.0 MiB");
  CHECK(compact_amount_text(224 * (std::int64_t{1} << 20), AmountUnit::gb) == "234.9 MB");
  // 999,999,999 B is under 1 GB (999.999999 MB, "1000.0 MB") but 2^30 B is over it: 1.07 GB.
  CHECK(compact_amount_text(gib, AmountUnit::gb) == "1.07 GB");
  CHECK(compact_amount_text(gib, AmountUnit::gib) == "1.00 GiB");
}

TEST_CASE("Vocabulary: the verdict in GB") {
  // 61,150,855,168 B reserved = 61.2 GB; the H100 80GB's 85,027,979,264 B = 85.0 GB.
  Config c = llama_on_h100();
  const Report r = estimate(c);
  REQUIRE(r.binding_stage == 0);
  CHECK(verdict_text(r, AmountUnit::gb) == "fits: stage 0 binds at 61.2 of 85.0 GB reserved");
  CHECK(verdict_text(r, AmountUnit::gib) == verdict_text(r));
}

TEST_CASE("Vocabulary: the numbers one name takes on different stages") {
  CHECK(alternatives_text({4}) == "4");
  CHECK(alternatives_text({5, 4, 5, 4}) == "4 or 5");
  CHECK(alternatives_text({5, 3, 4}) == "3, 4 or 5");
  CHECK(alternatives_text({}).empty());
}
