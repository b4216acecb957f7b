// plan_tab.h — the "Plan" tab's inputs and its time-sliced search (plan.h's PlanSearch).
//
// Purpose: the bounds of `stagemem plan` as editable text (in their link form), a search that
// runs a few points per frame within a time budget so no frame stalls, its progress, and the
// result (minimum and frontier). The inputs travel in the link as `plan_*` keys after the
// configuration's fragment; apply_fragment strips them before decoding the configuration. The
// frame advances a running search while the tab is open (frame.h).
// Units: GPUs, milliseconds.
// Limitations: one search at a time; editing the configuration or the bounds stops it (the
// result shown is the last finished search's, marked stale).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "config/config.h"
#include "model/model.h"
#include "plan/plan.h"

// The search's inputs, in the CLI's / link's text form; empty means plan.h's default range.
struct PlanInputs {
  std::string gpus_per_node = "8";
  std::string min_gpus;
  std::string max_gpus;
  std::string tp, pp, vpp, ep, mbs;
  std::array<bool, 3> recompute = {true, true, true};  // none, selective, full
  // Quantised compute recipes to search, comma-separated fp8_recipe names ("": the
  // configuration's own; none is its bf16 twin).
  std::string recipes;
  // Data-parallel sharding strategies to search, comma-separated `sharding` names (ZeRO aliases
  // too; "": the configuration's own).
  std::string sharding;
  // Safety margin below the capacity, plan.h's PlanMargin text: "8GiB" or "20%" ("": none).
  std::string margin;
  bool operator==(const PlanInputs&) const = default;
};

struct PlanTab {
  PlanInputs inputs;
  std::string input_error;  // why the inputs were refused ("" when accepted)

  // The running search (null when idle) and what it searches.
  std::unique_ptr<stagemem::Model> model;
  std::unique_ptr<stagemem::PlanSearch> search;
  // Once the space is searched: the shown entries confirmed with the allocator replay, a few
  // per frame (null until then).
  std::unique_ptr<stagemem::PlanConfirmation> confirmation;
  stagemem::Config searched_config;
  stagemem::PlanBounds bounds;
  double slice_budget_ms = 9.0;  // search time per frame (a 60 Hz frame is 16.7 ms)
  double elapsed_ms = 0.0;       // of the current or last search, summed over its slices
  double longest_slice_ms = 0.0;
  std::int64_t slices = 0;

  // The last finished search.
  bool has_result = false;
  stagemem::PlanResult result;
  stagemem::Config result_config;      // the configuration it was run for
  stagemem::PlanBounds result_bounds;  // and the bounds (its GPU range, margin)
  // The frontier row last applied (ApplyPlanRow), -1 when none since the search: the tab marks
  // it as the current configuration while the configuration still equals it.
  std::int64_t applied_row = -1;
};

// Parses the inputs into bounds; false (and `error` set) when one is refused.
bool plan_bounds_from_inputs(const PlanInputs& inputs, stagemem::PlanBounds& bounds,
                             std::string& error);
// Replaces the inputs; input_error says at once whether they are usable.
void set_plan_inputs(PlanTab& tab, PlanInputs inputs);
// Starts a search of `config`'s model (the previous one is dropped).
void start_plan_search(PlanTab& tab, const stagemem::Config& config);
// Drops the running search and its confirmation (the last result stays).
void stop_plan_search(PlanTab& tab);
// Runs the search for at most the slice budget; finishes it (result) when the space is done.
// True while the search goes on (the caller asks for another frame).
bool advance_plan_search(PlanTab& tab);
double plan_progress(const PlanTab& tab);  // [0, 1]; 1 when idle
// The frontier row whose configuration `config` is (the applied row, recognised), else -1.
std::int64_t plan_current_row(const PlanTab& tab, const stagemem::Config& config);
// The GPU counts the plot's axis spans: the searched range (min, max bounds) where the bounds
// give it, else the frontier's smallest and largest counts.
std::pair<std::int64_t, std::int64_t> plan_axis_gpus(const PlanTab& tab);

// "&plan_tp=1,2,4&plan_max=512": the non-default inputs as link keys ("" when all default).
std::string plan_link_keys(const PlanInputs& inputs);
// Reads `plan_*` keys of a fragment into the inputs and returns the fragment without them.
std::string take_plan_link_keys(std::string_view fragment, PlanInputs& inputs);
