// memory/model_pieces.h — activation pieces and transients outside the decoder layers' own tensors:
// embedding, final norm, logits and loss, MTP, Block Attention Residuals, pipeline buffers and
// context-parallel exchange. Implemented in memory/model_pieces.cpp.
//
// AttnRes conventions (the users' planning model; block size B_r layers):
//  - a new residual slot starts at layers 0, B_r, 2 B_r, ...; before position l (l layers done)
//    ceil(l / B_r) slots have started;
//  - a pipeline boundary after l layers carries the hidden state plus those slots:
//    (1 + ceil(l / B_r)) x S x B x h bf16 (224.0 MiB at the first boundary of the 93-layer model,
//    seq 8192, h 7168, mbs 1);
//  - a mix over K slots upcasts them to fp32 and keeps `attn_res_live_temporaries` more fp32
//    tensors alive: ((1 + K) + live) x S x B x h x 4 B (2.58 GB for K = 8 at seq 8192, h 7168).
// Units: bytes (int64) per micro-batch on one rank.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "memory/activation_pieces.h"

namespace stagemem {

std::int64_t attn_res_slots_before(std::int64_t layers_before, std::int64_t block_size);

// TransformerEngine's fused cross-entropy before 2.18 (version_rules.h): its gradient is
// written in place into the bf16 logits, which it saves.
bool te_cross_entropy_in_place(const TrainingConfig& training);
// Stored on the stage holding the LM head, per micro-batch.
std::vector<ActivationPiece> head_pieces(const Model& model, const TokenShape& shape,
                                         const TrainingConfig& training, std::int64_t padded_vocab);
// Transients of the logits and loss (forward and backward).
std::vector<ActivationPiece> head_transients(const TokenShape& shape,
                                             const TrainingConfig& training,
                                             std::int64_t padded_vocab);
// Per MTP layer, besides its decoder layer and its own head pieces.
std::vector<ActivationPiece> mtp_extra_pieces(const Model& model, const TokenShape& shape);
ActivationPiece embedding_dropout_piece(const Model& model, const TokenShape& shape);

ActivationPiece attn_res_slots_piece(const Model& model, const TokenShape& shape,
                                     std::int64_t slots);
ActivationPiece attn_res_weights_piece(const TokenShape& shape, std::int64_t slot_sites);
ActivationPiece attn_res_internal_piece(const Model& model, const TokenShape& shape,
                                        const TrainingConfig& training,
                                        std::int64_t completed_blocks);

// One direction of a pipeline boundary: the hidden state and the AttnRes slots it carries.
Formula pipeline_buffer_formula(const Model& model, const TokenShape& shape, std::int64_t slots);
// Context-parallel attention transients per --cp-comm-type (TE's context_parallel.py): forward
// (ring buffers for p2p; q, k, v all-to-all buffers for a2a and a2a+p2p; fla's state exchange for
// KDA) and backward (p2p only).
ActivationPiece context_parallel_exchange_piece(const Model& model, const TokenShape& shape,
                                                AttentionKind kind, const TrainingConfig& training);
std::optional<ActivationPiece> context_parallel_backward_piece(const Model& model,
                                                               const TokenShape& shape,
                                                               AttentionKind kind,
                                                               const TrainingConfig& training);
ActivationPiece moe_dispatch_piece(const Model& model, const TokenShape& shape,
                                   const ParallelLayout& layout, const TrainingConfig& training);
// An MTP layer under full uniform recompute: its checkpoint keeps the hidden states and the
// decoder input.
ActivationPiece mtp_checkpoint_inputs_piece(const Model& model, const TokenShape& shape);

}  // namespace stagemem
