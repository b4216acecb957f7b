// Benchmark (not a test): how long one full per-stage estimate and one sweep point take.
//   stagemem_bench [iterations]
// Prints the median and minimum microseconds per full estimate of the largest preset
// (kimi-k3: 93 layers, PP 16 with VPP 2 is not a valid split, so PP 8 x VPP 2 = 16 virtual
// stages, full recompute, distributed Muon), cold (only the model resolved) and with the layout
// cached, the step timeline of that report (every stage), estimates into a kept report after a
// sequence-length, device and optimizer change, and configurations per second for a
// seq x mbs x recompute sweep through the sweep engine (plan/sweep.h), warm and cold, beside the
// hand-written loop it replaced. The same source builds
// natively (stagemem_bench) and to wasm (stagemem_bench_wasm, run under node with the web flags).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <tuple>
#include <vector>

#include "estimate/estimate.h"
#include "memory/timeline.h"
#include "model/presets.h"
#include "plan/sweep.h"
#include "report/report.h"

namespace {

using Clock = std::chrono::steady_clock;

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const int iterations = argc > 1 ? std::max(1, std::atoi(argv[1])) : 2000;
  stagemem::Config config;
  config.model = "kimi-k3";
  config.parallel.pipeline_parallel = 8;
  config.parallel.virtual_stages = 2;
  config.parallel.expert_parallel = 28;
  config.training.sequence_length = 8192;
  config.training.global_batch = 896;
  config.training.recompute.policy = stagemem::RecomputePolicy::full;
  config.optimizer.kind = stagemem::OptimizerKind::distributed_muon;
  config.device.preset = "mi355x";
  stagemem::Diagnostics diagnostics;
  const auto model = stagemem::resolve_model(config, diagnostics);
  if (!model) return 1;
  const stagemem::Report check = stagemem::estimate(config, *model);
  if (!check.diagnostics.ok()) {
    for (const auto& e : check.diagnostics.errors)
      std::fprintf(stderr, "%s: %s\n", e.field.c_str(), e.message.c_str());
    return 1;
  }

  std::vector<double> samples;
  samples.reserve(static_cast<std::size_t>(iterations));
  std::int64_t sink = 0;
  for (int i = 0; i < iterations; ++i) {
    const auto start = Clock::now();
    const stagemem::Report report = stagemem::estimate(config, *model);
    const auto stop = Clock::now();
    sink += report.stages.back().peak_bytes;
    samples.push_back(std::chrono::duration<double, std::micro>(stop - start).count());
  }
  std::printf(
      "full estimate (kimi-k3, 93 layers, PP 8 x VPP 2, %zu stages, %zu terms on stage 0): "
      "median %.1f us, min %.1f us over %d runs\n",
      check.stages.size(), check.stages[0].terms.size(), median(samples),
      *std::min_element(samples.begin(), samples.end()), iterations);

  // The same estimate with the layout's plan and per-rank parameters cached (EstimateCache):
  // what every cell of a sweep or a search over non-layout fields costs.
  stagemem::EstimateCache cache;
  std::vector<double> cached;
  cached.reserve(static_cast<std::size_t>(iterations));
  for (int i = 0; i < iterations; ++i) {
    const auto start = Clock::now();
    const stagemem::Report report = stagemem::estimate(config, *model, cache);
    const auto stop = Clock::now();
    sink += report.stages.back().peak_bytes;
    cached.push_back(std::chrono::duration<double, std::micro>(stop - start).count());
  }
  std::printf("full estimate, layout cached: median %.2f us, min %.2f us over %d runs\n",
              median(cached), *std::min_element(cached.begin(), cached.end()), iterations);

  // The step timeline of every stage of the same report (timeline.h): every forward and backward
  // pass of every micro-batch on every chunk, and the optimizer step.
  // Also at PP 8 without VPP (1F1B, the users' production layout).
  stagemem::Config plain = config;
  plain.parallel.virtual_stages = 1;
  const stagemem::Report plain_report = stagemem::estimate(plain, *model);
  for (const stagemem::Report* r : {&check, &plain_report}) {
    std::vector<double> timeline;
    timeline.reserve(static_cast<std::size_t>(iterations));
    std::size_t events = 0;
    for (int i = 0; i < iterations; ++i) {
      const auto start = Clock::now();
      const std::vector<stagemem::StageTimeline> step = stagemem::step_timeline(*r);
      const auto stop = Clock::now();
      events = 0;
      for (const auto& t : step) events += t.events.size();
      sink += step.back().peak_event;
      timeline.push_back(std::chrono::duration<double, std::micro>(stop - start).count());
    }
    std::printf(
        "step timeline (kimi-k3, PP 8 x VPP %zu, M %lld, %zu events over all stages): median "
        "%.2f us, min %.2f us over %d runs\n",
        r->stages.empty() ? std::size_t{0} : r->stages[0].chunks.size(),
        static_cast<long long>(r->micro_batches), events, median(timeline),
        *std::min_element(timeline.begin(), timeline.end()), iterations);
  }

  // The same into one Report kept across estimates (estimate_into: what the app does on every
  // change): first for the same configuration, then alternating one field between two values:
  // the sequence length (a slider being dragged: every estimate rebuilds the activation pieces),
  // the device (the activations stay as they are: EstimateCache::activations keeps each stage's
  // activation terms; only the headroom changes) and the optimizer (the resident and
  // optimizer-step terms are rebuilt).
  stagemem::Report kept;
  struct Alternation {
    const char* what;
    void (*set)(stagemem::Config&, int);
  };
  const Alternation alternations[] = {
      {"", [](stagemem::Config&, int) {}},
      {"a sequence-length change",
       [](stagemem::Config& c, int i) { c.training.sequence_length = i % 2 == 0 ? 4096 : 8192; }},
      {"a device change",
       [](stagemem::Config& c, int i) { c.device.preset = i % 2 == 0 ? "b200" : "mi355x"; }},
      {"an optimizer change",
       [](stagemem::Config& c, int i) {
         c.optimizer.kind = i % 2 == 0 ? stagemem::OptimizerKind::distributed_adam
                                       : stagemem::OptimizerKind::distributed_muon;
       }},
  };
  for (const Alternation& a : alternations) {
    stagemem::Config changing = config;
    std::vector<double> times;
    times.reserve(static_cast<std::size_t>(iterations));
    for (int i = 0; i < iterations; ++i) {
      a.set(changing, i);
      const auto start = Clock::now();
      stagemem::estimate_into(changing, *model, cache, kept);
      const auto stop = Clock::now();
      sink += kept.stages.back().peak_bytes;
      times.push_back(std::chrono::duration<double, std::micro>(stop - start).count());
    }
    std::printf(
        "full estimate%s%s, layout cached, report reused: median %.2f us, min %.2f us "
        "over %d runs\n",
        *a.what != '\0' ? " after " : "", a.what, median(times),
        *std::min_element(times.begin(), times.end()), iterations);
  }

  // The allocator replay's cost (allocator/step_replay.h): the same kept-report estimate after a
  // sequence-length change with the replay off (what the estimate computed before it existed)
  // and on, side by side, for the kimi-k3 layout above and for Llama-3.1-70B at PP 4 x VPP 5
  // with 256 micro-batches per step. (After a change that moves no tensor, such as the device,
  // the replay is taken from EstimateCache::replays: the lines above.)
  stagemem::Config llama;
  llama.model = "llama-3.1-70b";
  llama.parallel.tensor_parallel = 8;
  llama.parallel.pipeline_parallel = 4;
  llama.parallel.virtual_stages = 5;
  llama.parallel.data_parallel = 8;
  llama.training.global_batch = 2048;
  const auto llama_model = stagemem::resolve_model(llama, diagnostics);
  if (!llama_model) return 1;
  for (const auto& [name, cfg, mdl] :
       {std::tuple{"kimi-k3 PP 8 x VPP 2", &config, &*model},
        std::tuple{"llama-3.1-70b PP 4 x VPP 5, M 256", &llama, &*llama_model}}) {
    double medians[2] = {0, 0};
    for (const bool replay : {false, true}) {
      stagemem::EstimateCache replay_cache;
      replay_cache.replay_allocator = replay;
      stagemem::Report into;
      std::vector<double> times;
      const int runs = std::max(1, iterations / 10);
      // The sequence length alternates, so every estimate rebuilds its tensors (a slider being
      // dragged): the replay cannot be taken from EstimateCache::replays.
      stagemem::Config changing = *cfg;
      for (int i = 0; i < runs; ++i) {
        changing.training.sequence_length = i % 2 == 0 ? 4096 : 8192;
        const auto start = Clock::now();
        stagemem::estimate_into(changing, *mdl, replay_cache, into);
        const auto stop = Clock::now();
        sink += into.stages.back().fit_bytes;
        times.push_back(std::chrono::duration<double, std::micro>(stop - start).count());
      }
      medians[replay ? 1 : 0] = median(times);
    }
    std::printf(
        "full estimate after a sequence-length change (%s), layout cached: without the allocator "
        "replay median %.1f us, with it %.1f us (x%.2f)\n",
        name, medians[0], medians[1], medians[1] / std::max(medians[0], 1e-9));
  }

  // A sweep as `stagemem sweep` and the app's heat map run it (plan/sweep.h): seq x mbs x
  // recompute, per-stage numbers only (EstimateDetail::peaks), one EstimateCache per model, one
  // Report reused. The run is restarted for each repeat (restart_sweep keeps the resolved model
  // and its cache, as the app does on every edit); a cold run resolves the model and fills a new
  // cache first (what one `stagemem sweep` does). The reference is the hand-written loop the
  // engine replaced: one configuration changed in place, estimate_into into one Report.
  stagemem::SweepGrid grid{config, {}};
  for (const auto& [key, values] :
       {std::pair{"seq", "2048, 4096, 8192, 16384, 32768"}, std::pair{"mbs", "1, 2, 4, 8"},
        std::pair{"recompute", "none, selective, full"}}) {
    stagemem::Diagnostics parsed;
    grid.axes.push_back(*stagemem::parse_sweep_axis(key, values, config, 64, key, parsed));
  }
  const int repeats = std::max(1, iterations / 20);
  // Prints the total and the median repeat's rate; `one` runs one grid and returns its cells.
  const auto time_sweeps = [&](const char* what, const auto& one) {
    std::vector<double> per_repeat;
    int points = 0;
    const auto start = Clock::now();
    for (int repeat = 0; repeat < repeats; ++repeat) {
      const auto repeat_start = Clock::now();
      const int cells = one();
      per_repeat.push_back(cells /
                           std::chrono::duration<double>(Clock::now() - repeat_start).count());
      points += cells;
    }
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    std::printf(
        "%s: %d configurations in %.3f s = %.0f configurations/s (median of %d grids: %.0f/s)\n",
        what, points, seconds, points / seconds, repeats, median(per_repeat));
  };
  stagemem::SweepRun run;
  time_sweeps("sweep (seq x mbs x recompute)", [&] {
    stagemem::restart_sweep(run, grid);
    stagemem::evaluate_sweep(run, run.cells.size());
    sink += run.cells.back().binding_stage;
    return static_cast<int>(run.cells.size());
  });
  time_sweeps("sweep (seq x mbs x recompute), cold", [&] {
    const stagemem::SweepRun cold = stagemem::compute_sweep(grid);
    sink += cold.cells.back().binding_stage;
    return static_cast<int>(cold.cells.size());
  });
  const std::int64_t sequences[] = {2048, 4096, 8192, 16384, 32768};
  const std::int64_t batches[] = {1, 2, 4, 8};
  const stagemem::RecomputePolicy policies[] = {stagemem::RecomputePolicy::none,
                                                stagemem::RecomputePolicy::selective,
                                                stagemem::RecomputePolicy::full};
  stagemem::Config point = config;
  stagemem::Report cell;
  time_sweeps("sweep (seq x mbs x recompute), hand-written loop", [&] {
    int points = 0;
    for (std::int64_t sequence : sequences) {
      for (std::int64_t batch : batches) {
        for (stagemem::RecomputePolicy policy : policies) {
          point.training.sequence_length = sequence;
          point.training.micro_batch = batch;
          point.training.recompute.policy = policy;
          stagemem::estimate_into(point, *model, cache, cell, stagemem::EstimateDetail::peaks);
          sink += cell.binding_stage;
          ++points;
        }
      }
    }
    return points;
  });
  return sink == 42 ? 2 : 0;  // keeps the work observable
}
