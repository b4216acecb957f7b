// cross_check.h — measured numbers next to what stagemem derives, never fed into it.
//
// Purpose: a reading taken at a named measurement point (after model init; after optimizer init,
// before the first step; after the first step; steady-state peak; or one named term) is compared
// with the sum of exactly the derived terms alive at that moment. The gap is reported in bytes and
// as a ratio, with the terms that could explain it: lazily allocated state that is not alive yet,
// the named gaps (measured or not), and, for a steady-state peak, which phase binds (the
// optimizer step's sum holds no stored activations; forward/backward's holds no optimizer-step
// transient), exactly as the stage's peak is assembled.
// Also ships the users' optimizer-state probe measurements as an example cross-check.
//
// Liveness: model-init terms are alive at every point; optimizer-init terms from
// after_optimizer_init on; first-step terms (lazy optimizer state, cast copies, TE's dummy weight
// gradients, GEMM workspaces) from after_first_step on; activations and transients only at
// steady_state_peak, and there only those of the binding phase (Term::counts_in_peak). Gap rows
// are never in the derived sum; DOCUMENTED library constants are.
// Units: bytes (int64) per rank; the probe table is in bytes per parameter (double).
// Limitations: a measurement is per rank of one stage; readings of other ranks of the same stage
// are assumed equal (the distributed optimizer's shards can differ by a little; see
// resident_terms.h).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "config/config.h"
#include "report/report.h"

namespace stagemem {

// Whether a term allocated at `allocated` (of `family`) is alive when `point` is read.
bool alive_at(Family family, AllocationPoint allocated, MeasurementPoint point);

// One cross-check per measurement; a measurement naming a stage or term that does not exist is an
// error naming `measurements[i].stage` / `measurements[i].term`.
std::vector<CrossCheck> cross_check(const std::vector<Measurement>& measurements,
                                    const std::vector<StageReport>& stages,
                                    Diagnostics& diagnostics);

// The users' probe: a 99M-parameter model, TP 1, PP 1, EP 1, world = DP; resident bytes per
// parameter read after the first optimizer step. data_parallel 0: "at every DP" (1, 2, 4, 8).
struct ProbeMeasurement {
  OptimizerKind optimizer;
  std::int64_t data_parallel;
  double measured_bytes_per_parameter;
};
std::vector<ProbeMeasurement> optimizer_state_probe_measurements();

struct ProbeCrossCheck {
  ProbeMeasurement measurement;
  // Derived: 2 (bf16 weight) + 4 (fp32 grad) + state / shards (render/cross_check_text.h writes
  // the formula and what could explain the gap).
  std::int64_t state_bytes_per_parameter = 0;  // fp32 master + moments (Adam 2, Muon 1)
  std::int64_t state_shards = 1;               // DP for a distributed optimizer, else 1
  double derived_bytes_per_parameter = 0.0;
  double gap_bytes_per_parameter = 0.0;  // measured - derived
  double ratio = 0.0;                    // measured / derived
};
std::vector<ProbeCrossCheck> optimizer_state_probe_cross_checks();

}  // namespace stagemem
