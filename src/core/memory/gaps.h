// gaps.h — the named memory that tensor shapes cannot derive.
//
// Purpose: allocator fragmentation, communication-library buffers, runtime context and
// math-library workspaces appear on every stage as explicit rows. A row is 0 B and tagged
// NOT MEASURED until the user enters a MEASURED value with its source; there is no default
// amount and never a percentage. Measured rows add to a stage's peak so the capacity check sees
// them, but they never feed a derived term or a cross-check's derived sum.
// Units: bytes (int64) per rank.
//
// GEMM workspaces (append_library_workspace_terms): the one part of "math-library workspaces"
// the libraries document as constants, a resident term tagged DOCUMENTED with the library
// source, by KernelAssumptions::gemm_workspaces:
//  - TE's GEMM workspace, one per device for the run (cpp_extensions/gemm.py
//    get_cublas_workspace, lru_cached): 32 MiB + 1 KiB at compute capability >= 9, else 4 MiB;
//  - with MoE layers on the stage, TE's grouped GEMM takes one such workspace per compute stream,
//    4 streams (common/util/multi_stream.cpp), also cached for the run;
//  - PyTorch's cuBLAS workspace for the GEMMs outside TE (the LM head's matmul, unfused
//    attention's bmm), one per (cuBLAS handle, stream) pair from the caching allocator
//    (aten/src/ATen/cuda/CublasHandlePool.cpp): handles are per thread, and autograd runs the
//    backward on its own device thread, so forward and backward hold one each: 2 x
//    CUBLAS_WORKSPACE_CONFIG (:4096:8 = 32 MiB, the sm90 default and Megatron's
//    --deterministic-mode setting; sm80 default :4096:2:16:8 = 8 MiB + 128 KiB). cuBLASLt shares it
//    (TORCH_CUBLASLT_UNIFIED_WORKSPACE, on by default).
//  - with Megatron's --tp-comm-overlap (training.kernels.tp_comm_overlap), every userbuffer GEMM
//    shares one more cached TE workspace of 3 streams (gemm.py get_cublas_workspace with ub);
//    the userbuffers themselves are allocated outside PyTorch's caching allocator (the
//    communication-library gap row, not derived here).
// A MEASURED "math-library workspaces" row for the stage replaces all of these there (the
// measurement is the whole of it); cuDNN's and NCCL's own allocations stay in their gap rows.
// Limitations: one value per kind per stage (the last entry for a stage wins over an every-stage
// entry); the allocation point of each kind is the earliest moment it can exist.
#pragma once

#include <cstdint>
#include <vector>

#include "config/config.h"
#include "report/report.h"

namespace stagemem {

// The row's name ("allocator fragmentation"), what the memory is, and when it can first exist.
std::string_view gap_description(GapKind kind);
AllocationPoint gap_allocation_point(GapKind kind);

// One row per GapKind for this stage, MEASURED where `entries` has a value for it.
std::vector<Term> gap_terms(std::int64_t stage, const std::vector<GapEntry>& entries);
// The measured gap bytes of a stage (what its gap terms sum to).
std::int64_t gap_bytes(std::int64_t stage, const std::vector<GapEntry>& entries);
void append_gap_terms(std::int64_t stage, const std::vector<GapEntry>& entries,
                      std::vector<Term>& out);

// The documented GEMM workspaces of a stage (above), for training.kernels.gemm_workspaces and the
// TE release (32 MiB + 1 KiB from TE 2.8, 32 MiB before: version rule te-gemm-workspace-
// plus-1kib); none when the choice is none or a measured math-library row covers the stage.
// `grouped_gemm`: the stage holds MoE layers.
void append_library_workspace_terms(std::int64_t stage, const std::vector<GapEntry>& entries,
                                    const TrainingConfig& training, bool grouped_gemm,
                                    std::vector<Term>& out);
// What those terms sum to.
std::int64_t library_workspace_bytes(std::int64_t stage, const std::vector<GapEntry>& entries,
                                     const TrainingConfig& training, bool grouped_gemm);

}  // namespace stagemem
