#include "memory/gaps.h"

#include "config/version_rules.h"
#include "report/term_info.h"

namespace stagemem {
namespace {

constexpr TermInfo term_gap{"gap", "not derived", TermText::gap};
constexpr TermInfo term_te_workspace{"TransformerEngine GEMM workspace",
                                     "one per device for the run", TermText::generic};
constexpr TermInfo term_te_grouped_workspaces{
    "TransformerEngine GEMM workspaces (1 + 4 grouped-GEMM compute streams, MoE)",
    "one per device and one per compute stream of the grouped GEMM, for the run",
    TermText::generic};
constexpr TermInfo term_te_userbuffer_workspace{
    "TransformerEngine userbuffer GEMM workspace (tp-comm-overlap, 3 streams)",
    "one per device for the run, shared by every userbuffer GEMM", TermText::generic};
constexpr TermInfo term_cublas_workspace{
    "PyTorch cuBLAS workspaces (forward and autograd-backward threads)",
    "one per cuBLAS handle and stream: 2 (forward thread, autograd's backward thread)",
    TermText::generic};

constexpr std::string_view te_workspace_source =
    "documented constant: NVIDIA/TransformerEngine transformer_engine/pytorch/cpp_extensions/"
    "gemm.py get_cublas_workspace_size_bytes (32 MiB + 1 KiB at sm >= 9 from TE 2.8, 32 MiB "
    "before; else 4 MiB); 4 "
    "streams: common/util/multi_stream.cpp";
constexpr std::string_view te_userbuffer_workspace_source =
    "documented constant: NVIDIA/TransformerEngine transformer_engine/pytorch/cpp_extensions/"
    "gemm.py get_cublas_workspace(ub=True): torch.empty of _NUM_MAX_UB_STREAMS = 3 workspaces, "
    "cached (read at TE 2.16, b9d690e0); the userbuffers are cudaMalloc/cuMemCreate memory "
    "(userbuffers-host.cpp), not PyTorch's";
constexpr std::string_view cublas_workspace_source =
    "documented constant: PyTorch aten/src/ATen/cuda/CublasHandlePool.cpp "
    "getChosenWorkspaceSize (CUBLAS_WORKSPACE_CONFIG :4096:8 = 32 MiB; sm80 default "
    ":4096:2:16:8)";

struct WorkspaceSizes {
  std::int64_t te = 0;      // one TE workspace
  std::int64_t cublas = 0;  // one PyTorch cuBLAS workspace
};

WorkspaceSizes workspace_sizes(const TrainingConfig& training) {
  constexpr std::int64_t mib = std::int64_t{1} << 20;
  switch (training.kernels.gemm_workspaces) {
    case GemmWorkspaces::sm90:
      return {.te = rule_holds(training.stack, VersionRule::te_gemm_workspace_plus_1kib)
                        ? 32 * mib + 1024
                        : 32 * mib,
              .cublas = 4096 * 1024 * 8};
    case GemmWorkspaces::sm80:
      return {.te = 4 * mib, .cublas = 4096 * 1024 * 2 + 16 * 1024 * 8};
    case GemmWorkspaces::none:
      break;
  }
  return {};
}

constexpr std::int64_t te_grouped_streams = 4;
constexpr std::int64_t te_userbuffer_streams = 3;
constexpr std::int64_t cublas_threads = 2;

// The reading for this stage: its own, else the last one entered for every stage.
const GapEntry* chosen_entry(std::int64_t stage, GapKind kind,
                             const std::vector<GapEntry>& entries) {
  const GapEntry* chosen = nullptr;
  for (const GapEntry& e : entries) {
    if (e.kind != kind) continue;
    if (e.stage == stage || (e.stage == -1 && (chosen == nullptr || chosen->stage == -1))) {
      chosen = &e;
    }
  }
  return chosen;
}

}  // namespace

std::string_view gap_description(GapKind kind) {
  switch (kind) {
    case GapKind::allocator_fragmentation:
      return "reserved but unallocated blocks of the caching allocator";
    case GapKind::communication_buffers:
      return "NCCL/RCCL channels, proxies and registered buffers";
    case GapKind::runtime_context:
      return "CUDA/HIP context, loaded kernels and modules";
    case GapKind::math_library_workspaces:
      return "cuDNN and hipBLASLt workspaces and any GEMM workspace beyond the documented TE and "
             "cuBLAS constants (a measured value replaces those constants)";
  }
  return "unknown gap";
}

AllocationPoint gap_allocation_point(GapKind kind) {
  switch (kind) {
    case GapKind::runtime_context:
    case GapKind::communication_buffers:
      return AllocationPoint::model_init;
    case GapKind::math_library_workspaces:
    case GapKind::allocator_fragmentation:
      return AllocationPoint::forward;
  }
  return AllocationPoint::forward;
}

void append_library_workspace_terms(std::int64_t stage, const std::vector<GapEntry>& entries,
                                    const TrainingConfig& training, bool grouped_gemm,
                                    std::vector<Term>& out) {
  if (chosen_entry(stage, GapKind::math_library_workspaces, entries) != nullptr) return;
  const WorkspaceSizes sizes = workspace_sizes(training);
  if (sizes.te == 0) return;
  const std::int64_t te_count = grouped_gemm ? 1 + te_grouped_streams : 1;
  // torchtitan's PyTorch modules take only PyTorch's cuBLAS workspaces.
  const bool te = training.framework == Framework::megatron_core;
  if (te)
    out.push_back(Term{
        .info = grouped_gemm ? &term_te_grouped_workspaces : &term_te_workspace,
        .bytes = te_count * sizes.te,
        .formula = Formula()
                       .times(label_id("workspaces"), te_count)
                       .times(label_id("bytes per workspace"), sizes.te)
                       .bytes(1, label_id("uint8")),
        .source = te_workspace_source,
        .family = Family::resident,
        .tag = Tag::documented,
        .allocated_at = AllocationPoint::first_step,
    });
  if (te && training.kernels.tp_comm_overlap) {
    out.push_back(Term{
        .info = &term_te_userbuffer_workspace,
        .bytes = te_userbuffer_streams * sizes.te,
        .formula = Formula()
                       .times(label_id("workspaces"), te_userbuffer_streams)
                       .times(label_id("bytes per workspace"), sizes.te)
                       .bytes(1, label_id("uint8")),
        .source = te_userbuffer_workspace_source,
        .family = Family::resident,
        .tag = Tag::documented,
        .allocated_at = AllocationPoint::first_step,
    });
  }
  out.push_back(Term{
      .info = &term_cublas_workspace,
      .bytes = cublas_threads * sizes.cublas,
      .formula = Formula()
                     .times(label_id("workspaces"), cublas_threads)
                     .times(label_id("bytes per workspace"), sizes.cublas)
                     .bytes(1, label_id("uint8")),
      .source = cublas_workspace_source,
      .family = Family::resident,
      .tag = Tag::documented,
      .allocated_at = AllocationPoint::first_step,
  });
}

std::int64_t library_workspace_bytes(std::int64_t stage, const std::vector<GapEntry>& entries,
                                     const TrainingConfig& training, bool grouped_gemm) {
  if (chosen_entry(stage, GapKind::math_library_workspaces, entries) != nullptr) return 0;
  const WorkspaceSizes sizes = workspace_sizes(training);
  const std::int64_t te = training.framework == Framework::megatron_core ? sizes.te : 0;
  return (grouped_gemm ? 1 + te_grouped_streams : 1) * te + cublas_threads * sizes.cublas +
         (training.kernels.tp_comm_overlap ? te_userbuffer_streams * te : 0);
}

std::vector<Term> gap_terms(std::int64_t stage, const std::vector<GapEntry>& entries) {
  std::vector<Term> terms;
  append_gap_terms(stage, entries, terms);
  return terms;
}

std::int64_t gap_bytes(std::int64_t stage, const std::vector<GapEntry>& entries) {
  std::int64_t bytes = 0;
  for (int k = 0; k < gap_kind_count; ++k) {
    const GapEntry* chosen = chosen_entry(stage, static_cast<GapKind>(k), entries);
    if (chosen != nullptr) bytes += chosen->bytes;  // each at most 2^50: no overflow
  }
  return bytes;
}

void append_gap_terms(std::int64_t stage, const std::vector<GapEntry>& entries,
                      std::vector<Term>& terms) {
  for (int k = 0; k < gap_kind_count; ++k) {
    const auto kind = static_cast<GapKind>(k);
    const GapEntry* chosen = chosen_entry(stage, kind, entries);
    Term t{
        .info = &term_gap,
        .bytes = 0,
        .formula = Formula().number(k).number(0),
        .family = Family::gap,
        .tag = Tag::not_measured,
        .allocated_at = gap_allocation_point(kind),
    };
    if (chosen != nullptr) {
      t.tag = Tag::measured;
      t.bytes = chosen->bytes;
      t.source = chosen->source;
      t.formula = Formula().number(k).number(1);
    }
    terms.push_back(t);
  }
}

}  // namespace stagemem
