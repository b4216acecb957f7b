// Benchmark (not a test): how fast `plan` searches the kimi-k3 production space.
//   stagemem_plan_bench [runs]
// The space of issue 13: TP 1-8 (powers of 2), PP 4-16, VPP 1-4, EP dividing the 896 experts,
// mbs 1-4, recompute none/selective/full, seq 8192, gbs 896, distributed Muon, MI355X, 8 GPUs per
// node; one thread. Prints the median and minimum seconds per whole search, configurations
// searched per second, and estimates per second (the core's cost per point).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "model/presets.h"
#include "plan/plan.h"

int main(int argc, char** argv) {
  const int runs = argc > 1 ? std::max(1, std::atoi(argv[1])) : 5;
  stagemem::Config base;
  base.model = "kimi-k3";
  base.device.preset = "mi355x";
  base.training.sequence_length = 8192;
  base.training.global_batch = 896;
  base.optimizer.kind = stagemem::OptimizerKind::distributed_muon;
  const stagemem::Model model = *stagemem::find_preset("kimi-k3");
  stagemem::PlanBounds bounds;
  bounds.tp = {1, 2, 4, 8};
  for (std::int64_t pp = 4; pp <= 16; ++pp) bounds.pp.push_back(pp);
  bounds.vpp = {1, 2, 3, 4};
  bounds.mbs = {1, 2, 3, 4};
  bounds.top = 2;
  std::vector<double> seconds;
  stagemem::PlanResult result;
  for (int run = 0; run < runs; ++run) {
    const auto start = std::chrono::steady_clock::now();
    result = stagemem::plan(base, model, bounds);
    seconds.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(seconds.begin(), seconds.end());
  const double median = seconds[seconds.size() / 2];
  std::printf(
      "plan (kimi-k3 production space, MI355X): %lld searched, %lld estimated, %lld ruled out "
      "without an "
      "estimate, %lld fit; minimum %lld GPUs\n",
      static_cast<long long>(result.configurations_searched),
      static_cast<long long>(result.configurations_estimated),
      static_cast<long long>(result.configurations_pruned),
      static_cast<long long>(result.configurations_fitting),
      static_cast<long long>(result.minimum.gpus));
  std::printf(
      "median %.3f s, min %.3f s over %d runs: %.0f configurations/s searched, %.0f estimates/s\n",
      median, seconds.front(), runs, static_cast<double>(result.configurations_searched) / median,
      static_cast<double>(result.configurations_estimated) / median);
  // The Plan tab's confirmation phase on the browser test's space (plan.test.mjs), timed per call:
  // whole estimates (step(1), as `stagemem plan` runs them) and the pieces the app runs between
  // frames (advance(4096), plan_tab.cpp). A frame's search slice overshoots its budget by at most
  // one call, so the longest call matters.
  stagemem::PlanBounds tab_bounds;
  tab_bounds.tp = {1, 2, 4, 8};
  tab_bounds.pp = {4, 8, 16};
  tab_bounds.vpp = {1, 2};
  tab_bounds.mbs = {1};
  stagemem::PlanSearch search(base, model, tab_bounds);
  while (search.step(64)) {
  }
  for (const bool pieces : {false, true}) {
    stagemem::PlanConfirmation confirmation(search.entries(), tab_bounds.top, base, model);
    std::vector<double> call_ms;
    double total_ms = 0.0;
    for (bool more = true; more;) {
      const auto start = std::chrono::steady_clock::now();
      more = pieces ? confirmation.advance(4096) : confirmation.step(1);
      call_ms.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
              .count());
      total_ms += call_ms.back();
    }
    std::sort(call_ms.begin(), call_ms.end());
    std::printf(
        "plan tab confirmation, %s: %zu calls, %.0f ms in all, median %.2f ms, max %.2f ms per "
        "call\n",
        pieces ? "advance(4096)" : "step(1)", call_ms.size(), total_ms, call_ms[call_ms.size() / 2],
        call_ms.back());
  }
  return 0;
}
