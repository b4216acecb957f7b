// optimizer_transients.h — memory that exists only while the optimizer steps.
//
// Purpose: the optimizer phase of a stage's peak, each term the tensor Megatron-core's optimizer
// code allocates (paths are in NVIDIA/Megatron-LM and NVIDIA-NeMo/Emerging-Optimizers):
//  - parameter all-gather after step(), by OptimizerConfig::param_gather:
//     - distributed Adam, and distributed Muon with `buffer`: the bucketed all-gather writes in
//       place into the bf16 parameter buffer the weights are views of
//       (distributed/param_and_grad_buffer.py start_param_sync): 0 B, no term;
//     - distributed Muon with `layer-wise` (optimizer/layer_wise_optimizer.py allgather_params):
//       the rank's own flattened shard plus a receive buffer per other rank, the whole
//       un-sharded bf16 group, gathered one group at a time (dense over DP x CP, then routed
//       experts over expert DP): 2 B x the larger group. A group whose state is not sharded
//       (1 rank) is not gathered;
//     - `layer-wise-2026-01` (its first version, commit 5548cdc57b): a receive slot for every
//       rank plus the own flattened shard: 2 B x (G + ceil(G / D)) for the larger group.
//    The users' measured flat ~9.7 GiB optimizer-step transient (a 4-layer proxy) is what they
//    attributed to this gather; it fits `layer-wise`, not the in-place gather. It is a
//    cross-check source of that option (the proxy's inventory was not recorded), never an input.
//  - Muon's Newton-Schulz iteration (Emerging-Optimizers muon_utils.py newton_schulz): the fp32
//    update X [m, n] stays alive while the iteration runs in bf16 ("medium" matmul precision) on
//    X, A = X X^T and B = b A + c A^2 and the new X (the addmm's output): 4 m n + (2 m n +
//    2 min(m,n)^2) x 2 B. Under TP (or ETP for experts) `muon_tp_mode` decides the matrix:
//     - duplicated (Megatron's default, newton_schulz_tp): the shards are all-gathered in fp32
//       (TP buffers of the shard's size s) and concatenated (a full fp32 copy), then the
//       iteration runs on the full M x N = TP s matrix: (2 TP + 1) s x 4 B + (2 M N + 2
//       min(M,N)^2) x 2 B;
//     - blockwise: the iteration on the shard alone;
//     - distributed: on the shard, with X X^T over the full non-partitioned dimension d:
//       4 s + (2 s + 2 d^2) x 2 B.
//    Megatron's Muon splits only the fused QKV weight (`muon_split_qkv`); a gated MLP's fc1 is
//    one [2I, h] matrix (per expert [2I, w] in TE's grouped linear). The largest matrix on the
//    rank sets the transient (matrices are orthogonalised one at a time).
//  - the fp32 copy of bf16 main gradients (`--grad-reduce-in-bf16`): the optimizer sets each
//    fp32 main parameter's .grad to main_grad.float() (distrib_optimizer.py and optimizer.py
//    _copy_model_grads_to_main_grads), 4 B per element of the rank's optimizer shard (every
//    element without a distributed optimizer), alive until zero_grad at the next step's start.
//    No copy with fp32 gradients (.float() returns the buffer itself) or under the
//    precision-aware optimizer (fp16 master or non-fp32 moments: it uses decoupled_grad).
// Units: bytes (int64) per rank.
// Limitations: NCCL's internal buffers for these collectives are the "communication-library
// buffers" gap; the layer-wise optimizer assigns whole tensors to ranks, so a rank's shard can
// differ from ceil(G / D).
#pragma once

#include <cstdint>
#include <vector>

#include "config/config.h"
#include "memory/resident_terms.h"
#include "model/model.h"
#include "parallel/layout.h"
#include "report/formula.h"
#include "report/report.h"

namespace stagemem {

struct MatrixShape {
  std::int64_t rows = 0;  // the rank's shard
  std::int64_t cols = 0;
  Label name = 0;  // a formula label (formula.h)
  // Which dimension tensor (or expert-tensor) parallelism splits: -1 none, 0 rows
  // (column-parallel: fc1, q/k/v), 1 columns (row-parallel: output projection, fc2).
  std::int64_t split_dim = -1;
  std::int64_t ways = 1;  // TP (or ETP for routed experts) when split
};

// Bytes of Muon's Newton-Schulz working set for one matrix under `mode` (see the header).
std::int64_t newton_schulz_bytes(const MatrixShape& matrix, MuonTpMode mode);

// The matrix Muon updates on a rank holding `kinds` layers whose Newton-Schulz working set is the
// largest (shard shapes, with how TP/ETP splits them).
MatrixShape largest_muon_matrix(const Model& model, const std::vector<LayerKind>& kinds,
                                const ParallelLayout& layout, const OptimizerConfig& optimizer);

std::vector<Term> optimizer_step_transients(const Model& model, const StageParameters& stage,
                                            const ParallelLayout& layout,
                                            const OptimizerConfig& optimizer,
                                            const Precision& precision = {});
// The same, appended to `out` (no vector of its own). `shards`: the state's sharding when the
// caller resolved it (sharding_rules.h); nullptr: the optimizer kind's (Megatron's DDP).
void append_optimizer_step_transients(const Model& model, const StageParameters& stage,
                                      const ParallelLayout& layout,
                                      const OptimizerConfig& optimizer, std::vector<Term>& out,
                                      const Precision& precision = {},
                                      const StateShards* shards = nullptr);

}  // namespace stagemem
