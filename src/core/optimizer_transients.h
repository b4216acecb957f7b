// optimizer_transients.h — memory that exists only while the optimizer steps.
//
// Purpose: the optimizer phase of a stage's peak. Two transients, each a named assumption:
//  - distributed optimizers (Adam or Muon) all-gather the updated parameters after step(): the
//    receive buffers for every other rank's shard plus the local flattened shard make up the full
//    un-sharded bf16 parameter group of the rank (the users' measured flat ~9.7 GiB transient).
//    A group whose state is not sharded (e.g. routed experts with an expert-data-parallel size
//    of 1) is not gathered;
//  - Muon orthogonalises each matrix with a Newton-Schulz iteration in bf16 on the rank's shard
//    (blockwise under TP/ETP): for the update X [m, n] (m <= n) it keeps the fp32 momentum-updated
//    gradient (m n x 4 B) plus X, A = X X^T, A^2, B = bA + cA^2 and B X alive:
//    (2 m n + 3 m^2) x 2 B. The largest matrix on the rank sets the transient.
// Units: bytes (int64) per rank.
// Limitations: matrices are orthogonalised one at a time; TP-split matrices are not gathered.
#pragma once

#include <cstdint>
#include <vector>

#include "config.h"
#include "formula.h"
#include "layout.h"
#include "model.h"
#include "report.h"

namespace stagemem {

struct MatrixShape {
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  Label name = 0;  // a formula label (formula.h)
};

// The largest 2-D matrix Muon updates on a rank holding `kinds` layers (per-rank shard shapes).
MatrixShape largest_muon_matrix(const Model& model, const std::vector<LayerKind>& kinds,
                                const ParallelLayout& layout, const OptimizerConfig& optimizer);

std::vector<Term> optimizer_step_transients(const Model& model, const StageParameters& stage,
                                            const ParallelLayout& layout,
                                            const OptimizerConfig& optimizer);
// The same, appended to `out` (no vector of its own).
void append_optimizer_step_transients(const Model& model, const StageParameters& stage,
                                      const ParallelLayout& layout,
                                      const OptimizerConfig& optimizer, std::vector<Term>& out);

}  // namespace stagemem
