// low_precision_rules.h — which quantised recipe runs on which architecture and release, and the
// release-dependent choices of what a quantised linear layer keeps.
//
// Purpose: the facts behind the low-precision terms that depend on the stack (software_stack.h)
// rather than on tensor shapes, each from TransformerEngine's or Megatron-core's source
// (docs/physics-notes.md, "Low-precision compute"):
//  - TE's support gates (transformer_engine/pytorch/quantization.py _compute_*_support):
//    per-tensor fp8 needs sm89 or newer; MXFP8 needs sm100/sm103 (refused on sm120); NVFP4 needs
//    sm100 or newer; fp8 block scaling ran on Hopper only until TE 2.9 (PR #2157).
//  - the first TE release of each recipe: MXFP8 2.0, current (tensor) scaling 2.2 (PR #1471),
//    block scaling 2.3 (PR #1559), NVFP4 2.8 (PR #2177).
//  - fp8 attention: not with block scaling or NVFP4 (their recipes refuse fp8_dpa); current
//    scaling from TE 2.8 (PR #2012).
//  - Megatron: bf16 first/last layers are refused with delayed scaling (arguments.py) and exist
//    from core 0.12 (MR !2598).
// Units: none.
// Limitations: a stack that does not name the architecture is sm90 (Hopper), as everywhere in
// stagemem; ROCm architectures (gfx942, gfx950) are taken to keep Hopper's layouts (a transposed
// copy per per-tensor fp8 tensor), an assumption not read in ROCm TE's source.
#pragma once

#include <string>
#include <vector>

#include "config/config.h"
#include "config/software_stack.h"
#include "config/training.h"

namespace stagemem {

// sm100 / sm103: the architectures whose fp8 GEMMs take either operand layout.
bool blackwell_datacenter(Architecture architecture);
// Per-tensor fp8 keeps one data array for both usages (te-per-tensor-fp8-one-copy-on-blackwell
// on sm100/sm103); otherwise a row-wise array and its transpose.
bool per_tensor_one_copy(const SoftwareStack& stack);
// The attention output projection saves its bf16 input rather than a quantised copy
// (megatron-proj-saves-original-input with te-linear-save-original-input, non-delayed recipes).
bool projection_saves_original_input(const TrainingConfig& training);

// The same configuration computed in bf16: no quantised recipe (and none of its options), and
// quantised primary weights stored in bf16 (Megatron without
// --fp8-param-gather/--fp4-param-gather). Everything else, measurements included, is kept: "what
// did fp8 change?" compares the two.
Config bf16_twin(const Config& config);
// The configuration under another recipe (the planner's recipe axis): none is bf16_twin; a
// recipe keeps the base's options, and quantised primary weights take the recipe's format
// (fp8-tensor, fp8-block, mxfp8, nvfp4), as Megatron's --fp8-param-gather would.
Config with_recipe(const Config& config, Fp8Recipe recipe);
// Whether the configuration computes or stores anything in a low-precision format.
bool uses_low_precision(const Config& config);

// What the stack cannot run of the configured low-precision compute, one message each (empty:
// it runs). The configuration's validate() reports them as errors on precision.fp8_recipe.
std::vector<std::string> low_precision_problems(const TrainingConfig& training);

}  // namespace stagemem
