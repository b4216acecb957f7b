// option_names.h — the spelling of every named option value, in enum order.
//
// Purpose: one table per enum, shared by the parsers in config.cpp, the field table
// (config_fields.cpp), the CLI and the app, so a name is written once and round-trips everywhere.
// These spellings appear in published links and config files: never change or reorder one;
// append new values at the end.
#pragma once

#include <array>
#include <string_view>

#include "config/config.h"

namespace stagemem {

inline constexpr std::array<std::string_view, weight_dtype_count> weight_dtype_names = {
    "bf16", "fp32", "fp8-tensor", "fp8-block", "mxfp8", "mxfp4"};
inline constexpr std::array<std::string_view, 2> grad_dtype_names = {"fp32", "bf16"};
inline constexpr std::array<std::string_view, 4> optimizer_kind_names = {
    "adam", "distributed-adam", "muon", "distributed-muon"};
inline constexpr std::array<std::string_view, 2> master_dtype_names = {"fp32", "fp16"};
inline constexpr std::array<std::string_view, 4> moment_dtype_names = {"fp32", "bf16", "fp16",
                                                                       "fp8"};
inline constexpr std::array<std::string_view, 3> cast_copy_names = {"none", "muon-group", "all"};
inline constexpr std::array<std::string_view, measurement_point_count> measurement_point_names = {
    "after-model-init", "after-optimizer-init", "after-first-step", "steady-state-peak", "term"};
inline constexpr std::array<std::string_view, memory_figure_count> memory_figure_names = {
    "unspecified", "allocated", "max-allocated", "reserved", "max-reserved"};
inline constexpr std::array<std::string_view, gap_kind_count> gap_kind_names = {
    "allocator-fragmentation", "communication-buffers", "runtime-context",
    "math-library-workspaces"};
inline constexpr std::array<std::string_view, 3> recompute_policy_names = {"none", "selective",
                                                                           "full"};
inline constexpr std::array<std::string_view, recompute_module_count> recompute_module_names = {
    "core_attn", "moe_act", "layernorm", "mla_up_proj", "mlp", "moe", "shared_experts"};
inline constexpr std::array<std::string_view, 2> full_recompute_method_names = {"uniform", "block"};
inline constexpr std::array<std::string_view, 2> attention_kernel_names = {"flash", "materialized"};
inline constexpr std::array<std::string_view, 3> kda_backend_names = {"fused", "eager",
                                                                      "disable-recompute"};
inline constexpr std::array<std::string_view, 4> cross_entropy_kernel_names = {
    "vocab-parallel", "fused-chunked", "te-fused", "native-fused"};
inline constexpr std::array<std::string_view, 2> fla_version_names = {"since-0.4.1", "0.4.0"};
inline constexpr std::array<std::string_view, 2> moe_unpermute_names = {
    "probs-in-activation", "legacy-unpermute-with-probs"};
inline constexpr std::array<std::string_view, 2> router_dtype_names = {"activation", "fp32"};
inline constexpr std::array<std::string_view, 3> cp_comm_type_names = {"p2p", "a2a", "a2a+p2p"};
inline constexpr std::array<std::string_view, 3> param_gather_names = {"buffer", "layer-wise",
                                                                       "layer-wise-2026-01"};
inline constexpr std::array<std::string_view, 3> muon_tp_mode_names = {"duplicated", "blockwise",
                                                                       "distributed"};
inline constexpr std::array<std::string_view, 4> fp8_recipe_names = {"none", "tensor", "mxfp8",
                                                                     "block"};
inline constexpr std::array<std::string_view, 3> gemm_workspace_names = {"sm90", "sm80", "none"};

}  // namespace stagemem
