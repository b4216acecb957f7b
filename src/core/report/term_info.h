// term_info.h — the static term catalogue: what each kind of term is called, what it scales with
// and which template renders its formula. Every Term points at one of these constants.
//
// Purpose: names, scaling and formula templates live once, in static storage, next to the
// physics that produces them (activations_*.cpp, resident_terms.cpp, ...); an estimate stores a
// pointer and numbers only, and term_text.h renders the text on demand.
// Units: none. Limitations: a name may hold one "{}", filled with Term::name_value.
#pragma once

#include <cstdint>
#include <string_view>

namespace stagemem {

// How a term's formula (and, for resident terms, its name) is rendered from its factors.
enum class TermText : std::uint8_t {
  generic,              // the factors as "[label=value] x ... x N B (dtype)"
  pipeline_buffers,     // factors: S/CP, B, width, SP (0/1), 1 + receive slots (0: none),
                        //          1 + send slots (0: none)
  recompute_group,      // factors: layers, first layer, last layer
  recompute_selective,  // factors: attention kind, MLP kind
  weights,              // factors: dtype, elements, roles in the name (0: single dtype)
  weight_scales,        // factors: dtype, elements, tensors, roles in the name
  main_gradient,        // factors: grad dtype, elements
  master_weights,       // factors: master dtype, expert group, elements, shards, distributed
  muon_momentum,        // factors: moment dtype, expert group, roles, elements, shards, distributed
  adam_moments,         // factors: moment dtype, expert group, roles, elements, shards,
                        //          distributed, Muon optimizer
  cast_copy,            // factors: Muon group only, roles, elements
  parameter_all_gather,  // factors: dense elements, dense shards, expert elements, expert shards
  newton_schulz,         // factors: matrix label, rows, cols
  gap,                   // factors: gap kind, measured (0/1)
};

// The decoder-layer part a stored activation belongs to; rendered as the name's prefix
// ("MoE: dispatched tokens ...").
enum class TermGroup : std::uint8_t {
  none,
  gqa,
  mla,
  kda,
  dense_mlp,
  moe,
  mtp,
  mtp_gqa,
  mtp_mla,
  mtp_kda,
  mtp_dense_mlp,
  mtp_moe,
  all_layers,
  embedding,
  attn_res,
  output,
  mtp_output,
};

// Where in the step a forward/backward transient is alive (the step timeline, timeline.h):
// forward-allocated ones in forward passes, backward-allocated ones in backward passes, except
// `boundary` (both).
enum class TransientPlace : std::uint8_t {
  layer,          // inside one layer's forward or backward: a kernel's temporaries, a working set
  boundary,       // at every pass's boundary: pipeline send/receive buffers
  recompute,      // a recompute working set: alive through the recomputed layers' backward, so the
                  // backward transients of those layers are alive inside it
  chunk,          // only in the passes of one virtual chunk (Term::chunk): the LM head's logits
  between_steps,  // kept past the step's last backward: alive in the optimizer step and between
                  // steps (the after-first-step reading), freed in the next step's first forward
  pass_wide,      // through every pass of its direction, beside that pass's other transients:
                  // the gathered parameters of the unit computing (sharded data parallelism)
  phase_wide,     // through every forward and backward pass (not the optimizer step): parameters
                  // kept gathered from a unit's forward to its backward
};

struct TermInfo {
  std::string_view name;
  std::string_view scaling;
  TermText text = TermText::generic;
  bool in_backward = false;  // a transient allocated in backward (else forward)
};

}  // namespace stagemem
