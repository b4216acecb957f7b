#include "memory/sharding_terms.h"

#include <algorithm>

#include "base/checked_math.h"

namespace stagemem {
namespace {

// FSDP2 (torch/distributed/fsdp/_fully_shard): bf16 all-gathers (MixedPrecisionPolicy
// param_dtype; the unsharded gradients are in the same dtype).
constexpr std::int64_t fsdp2_param_bytes = 2;

// Megatron-FSDP's floor on suggested_communication_unit_size (megatron_fsdp.py: max(1e9, ...)):
// the all-gather prefetch target is half of it, the reduce-scatter queue capacity all of it.
constexpr std::int64_t megatron_fsdp_unit_floor = 1'000'000'000;

constexpr TermInfo term_fsdp2_forward_gather{
    "FSDP2 gathered parameters of the unit computing (per-parameter copies + the flat "
    "all-gather output kept for the next unit, + explicitly prefetched units)",
    "the rank's largest FSDP unit (a decoder layer, the embedding or the head; 1/TP, experts "
    "1/EP); not the sequence or micro-batch",
    TermText::generic, false};
constexpr TermInfo term_fsdp2_next_gather{
    "FSDP2 all-gather output of the next unit (at the unit boundary, forward)",
    "the rank's largest FSDP unit; not the sequence or micro-batch", TermText::generic, false};
constexpr TermInfo term_fsdp2_backward{
    "FSDP2 backward: the unit's gathered parameters, the prefetched next unit, its unsharded "
    "gradients and the previous unit's reduce-scatter input",
    "the rank's largest FSDP unit; the reduce dtype; not the sequence or micro-batch",
    TermText::generic, true};
constexpr TermInfo term_fsdp2_kept_gathered{
    "FSDP2 parameters kept gathered from forward to backward (reshard_after_forward False)",
    "every FSDP unit on the rank (layers, embedding, head); not the sequence or micro-batch",
    TermText::generic, false};
constexpr TermInfo term_fsdp2_post_forward_shards{
    "FSDP2 post-forward shards (reshard_after_forward={}: 1/k of every unit until its backward)",
    "every FSDP unit on the rank / k", TermText::generic, false};
constexpr TermInfo term_fsdp2_accumulated_gradients{
    "FSDP2 unsharded gradient accumulators under PP (reduce dtype; reduce-scatter deferred to the "
    "step's last backward)",
    "every FSDP unit on the rank; from each unit's first backward to the end of the step",
    TermText::generic, false};
constexpr TermInfo term_fsdp2_kept_head{
    "FSDP2 norm + output unit kept gathered after forward (torchtitan reshards it only under "
    "\"always\")",
    "the head's elements on this rank (padded vocabulary / TP x h + h)", TermText::generic, false};
constexpr TermInfo term_megatron_fsdp_gather{
    "Megatron-FSDP gathered parameter buckets (the unit computing + {} prefetched)",
    "the rank's largest FSDP unit x units prefetched until 5e8 elements; not the sequence or "
    "micro-batch",
    TermText::generic, false};
constexpr TermInfo term_megatron_fsdp_gather_backward{
    "Megatron-FSDP gathered parameter buckets in backward (the unit computing + {} prefetched)",
    "the rank's largest FSDP unit x units prefetched until 5e8 elements", TermText::generic, true};
constexpr TermInfo term_megatron_fsdp_grad_queue{
    "Megatron-FSDP unsharded gradient buckets waiting for reduce-scatter (queue up to 1e9 "
    "elements)",
    "the rank's units' elements, up to the reduce-scatter queue capacity; not the sequence",
    TermText::generic, true};
constexpr TermInfo term_megatron_fsdp_non_unit_step{
    "Megatron-FSDP non-unit parameters gathered from the forward to the end of the backward "
    "(embedding, final norm, head; Megatron-core < 0.18)",
    "embedding on the first and head on the last stage (padded vocabulary / TP x h)",
    TermText::generic, false};
constexpr TermInfo term_megatron_fsdp_non_unit{
    "Megatron-FSDP non-unit parameters kept gathered (embedding, final norm, head)",
    "embedding on the first and head on the last stage (padded vocabulary / TP x h)",
    TermText::generic};

std::int64_t head_elements(const Model& m, const ParallelLayout& layout, bool with_embedding) {
  const std::int64_t norm = m.final_norm ? m.hidden : 0;
  const bool own_matrix = !m.tied_embeddings || !with_embedding;
  return norm + (own_matrix
                     ? saturating_product({padded_vocab(m.vocab, layout) /
                                               std::max<std::int64_t>(layout.tensor_parallel, 1),
                                           m.hidden})
                     : 0);
}

void keep(std::vector<ActivationPiece>& pieces, std::vector<TransientScope>& scopes,
          const TermInfo& info, const Formula& f, TransientPlace place,
          std::int64_t name_value = 0) {
  if (f.value() <= 0 && !f.overflowed()) return;
  pieces.push_back({.info = &info, .formula = f, .bytes = f.value(), .name_value = name_value});
  scopes.push_back({place, -1});
}

// The largest FSDP2 moments over the unit sequence `order` (the kept head left out): forward,
// unit i computing (its copies and its flat output, 2 N_i, + explicitly prefetched flat outputs)
// and the boundary before unit i + 1 (N_i + 2 N_i+1); backward, unit i computing (its
// parameters and gradients, 2 N_i, the prefetched N_i-1, the held reduce-scatter input of
// N_i+1 in the reduce dtype). Bytes are per element of bf16 (2) except the reduce input.
struct Fsdp2Moments {
  std::int64_t forward_elements = 0;   // x 2 B
  std::int64_t boundary_elements = 0;  // x 2 B, beyond forward_elements (0: never larger)
  std::int64_t backward_bf16 = 0;      // elements x 2 B
  std::int64_t backward_reduce = 0;    // elements x the reduce dtype
  std::int64_t backward_bytes = 0;
};
Fsdp2Moments fsdp2_moments(const std::vector<std::int64_t>& order, const ResolvedSharding& s,
                           std::int64_t largest) {
  Fsdp2Moments m;
  const bool kept = !s.reshard_after_forward;
  const std::size_t n = order.size();
  std::int64_t boundary = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const std::int64_t own = order[i];
    const std::int64_t next = i + 1 < n ? order[i + 1] : 0;
    const std::int64_t before = i > 0 ? order[i - 1] : 0;
    // Forward: kept parameters are in the phase-wide term already; only the flat output is extra.
    m.forward_elements = std::max(m.forward_elements, (kept ? 1 : 2) * own);
    boundary = std::max(boundary, saturating_sum({own, kept ? next : 2 * next}));
    // Backward: kept parameters need no all-gather (nothing prefetched, no extra copy); under PP
    // nothing is reduce-scattered until the step's last backward (the accumulators are
    // phase-wide).
    const std::int64_t bf16 = kept ? own : saturating_sum({2 * own, before});
    const std::int64_t held = s.deferred_reduce ? 0 : next;
    const std::int64_t bytes = saturating_sum({saturating_product({bf16, fsdp2_param_bytes}),
                                               saturating_product({held, s.reduce_bytes})});
    if (bytes > m.backward_bytes) {
      m.backward_bytes = bytes;
      m.backward_bf16 = bf16;
      m.backward_reduce = held;
    }
  }
  m.forward_elements =
      saturating_sum({m.forward_elements, saturating_product({s.forward_prefetch, largest})});
  m.boundary_elements = std::max<std::int64_t>(0, boundary - m.forward_elements);
  return m;
}

void append_fsdp2(const RankUnits& units, const ResolvedSharding& s,
                  std::vector<ActivationPiece>& pieces, std::vector<TransientScope>& scopes) {
  const Label unit = label_id("largest unit's elements on this rank");
  const bool kept = !s.reshard_after_forward;
  if (kept) {
    keep(pieces, scopes, term_fsdp2_kept_gathered,
         Formula()
             .times(label_id("elements of every unit on this rank"), units.all)
             .bytes(fsdp2_param_bytes, label_id("bf16")),
         TransientPlace::phase_wide);
  } else if (s.post_forward_ranks > 1) {
    keep(pieces, scopes, term_fsdp2_post_forward_shards,
         Formula()
             .times(label_id("elements of every unit on this rank"), units.all)
             .per(label_id("post-forward shard ranks"), s.post_forward_ranks)
             .bytes(fsdp2_param_bytes, label_id("bf16")),
         TransientPlace::phase_wide, s.post_forward_ranks);
  } else if (units.kept_head > 0) {
    keep(pieces, scopes, term_fsdp2_kept_head,
         Formula().times(unit, units.kept_head).bytes(fsdp2_param_bytes, label_id("bf16")),
         TransientPlace::phase_wide);
  }
  if (s.deferred_reduce) {
    // _fsdp_param.py to_accumulated_grad_if_needed: an unsharded accumulator per parameter in
    // the reduce dtype (the bf16 .grad itself when that is the parameter dtype).
    keep(pieces, scopes, term_fsdp2_accumulated_gradients,
         Formula()
             .times(label_id("elements of every unit on this rank"), units.all)
             .bytes(s.reduce_bytes, s.reduce_bytes == 4 ? label_id("fp32") : label_id("bf16")),
         TransientPlace::phase_wide);
  }
  // The kept head is gathered once: it is not in the sequence of all-gathers.
  std::vector<std::int64_t> order = units.order;
  if (!kept && s.post_forward_ranks <= 1 && units.kept_head > 0 && !order.empty()) {
    order.pop_back();
  }
  const Fsdp2Moments m = fsdp2_moments(order, s, units.largest);
  keep(pieces, scopes, term_fsdp2_forward_gather,
       Formula()
           .times(label_id("gathered elements at the largest forward moment"), m.forward_elements)
           .bytes(fsdp2_param_bytes, label_id("bf16")),
       TransientPlace::pass_wide);
  keep(pieces, scopes, term_fsdp2_next_gather,
       Formula()
           .times(label_id("gathered elements at the largest forward moment"), m.boundary_elements)
           .bytes(fsdp2_param_bytes, label_id("bf16")),
       TransientPlace::layer);
  Formula backward = Formula()
                         .times(label_id("bf16 parameter and gradient elements"), m.backward_bf16)
                         .bytes(fsdp2_param_bytes, label_id("bf16"))
                         .plus(label_id("held reduce-scatter input"),
                               saturating_product({m.backward_reduce, s.reduce_bytes}));
  keep(pieces, scopes, term_fsdp2_backward, backward, TransientPlace::pass_wide);
}

void append_megatron_fsdp(const RankUnits& units, const ShardingPieceInputs& inputs,
                          std::vector<ActivationPiece>& pieces,
                          std::vector<TransientScope>& scopes) {
  const ResolvedSharding& s = inputs.sharding;
  const Label unit = label_id("largest unit's elements on this rank");
  // Megatron-FSDP's units are the decoder layers; the rest is gathered once and kept.
  if (s.shards_params() && units.layers > 0) {
    const std::int64_t average = (units.all - units.non_layer) / units.layers;
    const std::int64_t target = std::max(megatron_fsdp_unit_floor, 2 * average) / 2;
    const std::int64_t prefetched = std::min(
        units.layers - 1, ceil_div(target, std::max<std::int64_t>(units.largest_layer, 1)));
    const bool fp32 = inputs.weight_bytes == 4;
    const auto gathered = [&](const TermInfo& info) {
      keep(pieces, scopes, info,
           Formula()
               .times(unit, units.largest_layer)
               .times(label_id("units gathered (computing + prefetched)"), 1 + prefetched)
               .bytes(fp32 ? 4 : 2, fp32 ? label_id("fp32") : label_id("bf16")),
           TransientPlace::pass_wide, prefetched);
    };
    gathered(term_megatron_fsdp_gather);
    gathered(term_megatron_fsdp_gather_backward);
    if (!s.keeps_non_unit_gathered && units.non_layer > 0) {
      keep(pieces, scopes, term_megatron_fsdp_non_unit_step,
           Formula()
               .times(label_id("non-unit elements on this rank"), units.non_layer)
               .bytes(fp32 ? 4 : 2, fp32 ? label_id("fp32") : label_id("bf16")),
           TransientPlace::phase_wide);
    }
  }
  if (s.shards_grads()) {
    // Every bucket's gradients, the non-unit bucket's too, up to the queue's capacity.
    const std::int64_t capacity = std::max(megatron_fsdp_unit_floor, units.largest_layer);
    const std::int64_t waiting = std::min(units.all, capacity);
    const std::int64_t grad = inputs.grad_bytes;
    keep(pieces, scopes, term_megatron_fsdp_grad_queue,
         Formula()
             .times(label_id("elements waiting for reduce-scatter"), waiting)
             .bytes(grad, grad == 4 ? label_id("fp32") : label_id("bf16")),
         TransientPlace::pass_wide);
  }
}

}  // namespace

RankUnits rank_units(const Model& model, const ParallelLayout& layout,
                     const std::vector<const VirtualStage*>& chunks) {
  RankUnits u;
  const auto add = [&](std::int64_t elements) {
    u.largest = std::max(u.largest, elements);
    u.all = saturating_sum({u.all, elements});
    ++u.count;
    u.order.push_back(elements);
  };
  const auto add_layer = [&](std::int64_t elements) {
    add(elements);
    u.largest_layer = std::max(u.largest_layer, elements);
    ++u.layers;
  };
  bool embedding = false;
  for (const VirtualStage* chunk : chunks) embedding = embedding || chunk->embedding;
  const std::int64_t tp = std::max<std::int64_t>(layout.tensor_parallel, 1);
  for (const VirtualStage* chunk : chunks) {
    if (chunk->embedding) {
      const std::int64_t e = saturating_sum(
          {saturating_product({padded_vocab(model.vocab, layout) / tp, model.hidden}),
           saturating_product({model.learned_positions, model.hidden})});
      add(e);
      u.non_layer = saturating_sum({u.non_layer, e});
    }
    for (std::int64_t i = chunk->first_layer; i < chunk->first_layer + chunk->layer_count; ++i) {
      add_layer(
          layer_role_counts(model, model.layers[static_cast<std::size_t>(i)], layout).total());
    }
    if (chunk->mtp_layers > 0) {
      // Each MTP layer: its decoder layer, enorm + hnorm and eh_proj [h, 2h] (column-parallel).
      const std::int64_t mtp = saturating_sum(
          {layer_role_counts(model, model.mtp_layer, layout).total(), 2 * model.hidden,
           saturating_product({2 * model.hidden, model.hidden / tp})});
      for (std::int64_t k = 0; k < chunk->mtp_layers; ++k) add_layer(mtp);
    }
    if (chunk->head) {
      const std::int64_t h = head_elements(model, layout, embedding);
      add(h);
      u.non_layer = saturating_sum({u.non_layer, h});
      u.kept_head = h;
    }
  }
  return u;
}

void append_sharding_transients(const Model& model, const ParallelLayout& layout,
                                const ShardingPieceInputs& inputs,
                                const std::vector<const VirtualStage*>& chunks,
                                std::vector<ActivationPiece>& pieces,
                                std::vector<TransientScope>& scopes) {
  const ResolvedSharding& sharding = inputs.sharding;
  if (!sharding.fsdp() || !sharding.shards_grads()) return;
  RankUnits units = rank_units(model, layout, chunks);
  if (sharding.implementation == DataParallelImpl::fsdp2) {
    // torchtitan's norm + output unit reshards only under "always" (fsdp.py).
    if (sharding.reshard_head_after_forward) units.kept_head = 0;
    append_fsdp2(units, sharding, pieces, scopes);
  } else {
    append_megatron_fsdp(units, inputs, pieces, scopes);
  }
}

void append_sharding_resident_terms(const Model& model, const ParallelLayout& layout,
                                    const ResolvedSharding& sharding, const Precision& precision,
                                    const StageParameters& stage, std::vector<Term>& out) {
  if (sharding.implementation != DataParallelImpl::megatron_fsdp || !sharding.shards_params() ||
      !sharding.keeps_non_unit_gathered) {
    return;
  }
  std::vector<const VirtualStage*> chunks;
  for (const VirtualStage& chunk : stage.chunks) chunks.push_back(&chunk);
  const RankUnits units = rank_units(model, layout, chunks);
  if (units.non_layer == 0) return;
  const bool fp32 = precision.dense_weights == WeightDtype::fp32;
  const Formula f = Formula()
                        .times(label_id("non-unit elements on this rank"), units.non_layer)
                        .bytes(fp32 ? 4 : 2, fp32 ? label_id("fp32") : label_id("bf16"));
  out.push_back(Term{.info = &term_megatron_fsdp_non_unit,
                     .bytes = f.value(),
                     .formula = f,
                     .family = Family::resident,
                     .tag = Tag::derived,
                     .allocated_at = AllocationPoint::first_step});
}

}  // namespace stagemem
