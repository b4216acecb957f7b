#include "memory/parameter_tensors.h"

#include <algorithm>
#include <numeric>
#include <string_view>

#include "base/checked_math.h"
#include "model/parameters.h"

namespace stagemem {
namespace {

constexpr std::int64_t kParamAlignment = 64;    // _pad_start_of_param_if_needed
constexpr std::int64_t kBucketAlignment = 128;  // _pad_end_of_bucket_if_needed: lcm(DP, 128)
constexpr std::int64_t kDefaultBucketMin = 40'000'000;  // max(40M, 1M x DP x CP)
constexpr std::int64_t kDefaultBucketPerRank = 1'000'000;

std::int64_t round_up(std::int64_t n, std::int64_t multiple) {
  return multiple <= 1 ? n : ceil_div(n, multiple) * multiple;
}

// Which Hugging Face tensors Megatron fuses into the preceding parameter of the layer.
bool fused_into_previous(std::string_view name, LayerKind kind) {
  if (kind.attention == AttentionKind::gqa &&
      (name == "self_attn.k_proj.weight" || name == "self_attn.v_proj.weight" ||
       name == "self_attn.k_proj.bias" || name == "self_attn.v_proj.bias")) {
    return true;
  }
  return kind.mlp == MlpKind::dense && (name == "mlp.up_proj.weight" || name == "mlp.up_proj.bias");
}

class ParameterList {
 public:
  ParameterList(const Model& model, const ParallelLayout& layout) : m_(model), l_(layout) {}

  void add(const Tensor& t, std::int32_t chunk, bool fuse, bool shared = false) {
    const TensorRole role = tensor_role(t);
    std::int64_t elements = t.elements;
    if (t.split == Split::tensor_parallel) elements /= l_.tensor_parallel;
    if (role == TensorRole::embedding_or_head && t.split == Split::tensor_parallel) {
      elements = vocab_matrix();  // the padded vocabulary
    }
    if (t.split == Split::expert_parallel) {
      add_experts(chunk);
      return;
    }
    if (t.component == Component::shared_experts) {
      // linear_fc1 (gate + up) and linear_fc2 of the shared-expert MLP.
      out_.push_back({.elements = elements / 3 * 2, .role = role, .chunk = chunk});
      out_.push_back({.elements = elements / 3, .role = role, .chunk = chunk});
      return;
    }
    if (fuse && !out_.empty()) {
      out_.back().elements += elements;
      return;
    }
    out_.push_back(
        {.elements = elements, .role = role, .chunk = chunk, .shared_embedding = shared});
  }

  void add_layer(LayerKind kind, std::int32_t chunk) {
    for (const Tensor& t : layer_tensors(m_, kind)) {
      add(t, chunk, fused_into_previous(t.name, kind));
    }
  }

  void add_vocab_replica(std::int32_t chunk) {
    out_.push_back({.elements = vocab_matrix(),
                    .role = TensorRole::embedding_or_head,
                    .chunk = chunk,
                    .shared_embedding = true});
  }

  std::vector<ParameterTensor> take() { return std::move(out_); }

 private:
  std::int64_t vocab_matrix() const {
    return padded_vocab(m_.vocab, l_) * m_.hidden / l_.tensor_parallel;
  }
  // TE GroupedLinear: weight0..N-1 of fc1 ([2I / ETP, width]) for the local experts, then fc2's.
  void add_experts(std::int32_t chunk) {
    const MoeShape& e = m_.moe;
    const std::int64_t local = e.routed_experts / std::max<std::int64_t>(1, l_.expert_parallel);
    const std::int64_t width = e.latent_hidden > 0 ? e.latent_hidden : m_.hidden;
    const std::int64_t per_tp =
        e.expert_intermediate / std::max<std::int64_t>(1, l_.expert_tensor_parallel);
    for (const std::int64_t rows : {2 * per_tp, per_tp}) {
      for (std::int64_t i = 0; i < local; ++i) {
        out_.push_back(
            {.elements = rows * width, .role = TensorRole::expert_matrix, .chunk = chunk});
      }
    }
  }

  const Model& m_;
  const ParallelLayout& l_;
  std::vector<ParameterTensor> out_;
};

bool is_expert(const ParameterTensor& p) {
  return p.role == TensorRole::expert_matrix;
}

// Megatron's optimizer parameter groups in the order they are built (_get_param_groups over the
// world's keys): weight-decayed dense, not decayed dense (biases, 1-D tensors), expert-parallel.
int group_of(const ParameterTensor& p) {
  if (is_expert(p)) return 2;
  return p.role == TensorRole::vector ? 1 : 0;
}

struct TermSlots {
  std::int32_t weights = -1;
  std::int32_t main_gradient = -1;
  std::int32_t master[2] = {-1, -1};  // [expert group]
  struct Moments {
    std::int32_t term = -1;
    bool expert = false;
    std::int64_t roles = 0;    // bit per TensorRole
    std::int64_t tensors = 0;  // per parameter: Adam 2, Muon 1
    std::int64_t bytes = 0;    // per element
  };
  std::vector<Moments> moments;
};

TermSlots find_terms(const std::vector<Term>& resident, const Precision& precision,
                     const OptimizerConfig& optimizer) {
  TermSlots slots;
  int weight_terms = 0;
  for (std::size_t i = 0; i < resident.size(); ++i) {
    const Term& t = resident[i];
    const auto index = static_cast<std::int32_t>(i);
    switch (t.info->text) {
      case TermText::weights:
        ++weight_terms;
        slots.weights = index;
        break;
      case TermText::weight_scales:
        weight_terms = 2;  // quantised storage: not split
        break;
      case TermText::main_gradient:
        slots.main_gradient = index;
        break;
      case TermText::master_weights:
        slots.master[t.formula.factor(1) != 0 ? 1 : 0] = index;
        break;
      case TermText::adam_moments:
      case TermText::muon_momentum: {
        const bool muon = t.info->text == TermText::muon_momentum;
        slots.moments.push_back({.term = index,
                                 .expert = t.formula.factor(1) != 0,
                                 .roles = t.formula.factor(2),
                                 .tensors = moments_per_element(muon),
                                 .bytes = moment_bytes(optimizer.moments)});
        break;
      }
      default:
        break;
    }
  }
  const bool plain_dtype =
      precision.dense_weights == WeightDtype::bf16 || precision.dense_weights == WeightDtype::fp32;
  if (weight_terms != 1 || !plain_dtype) slots.weights = -1;
  return slots;
}

// splitmix64's finaliser over each entry, chained: equal lists give equal hashes.
std::uint64_t mixed(std::uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
std::uint64_t hash_of(const std::vector<ResidentAllocation>& list, std::uint64_t seed) {
  std::uint64_t h = mixed(seed);
  for (const ResidentAllocation& a : list) {
    h = mixed(h ^ static_cast<std::uint64_t>(a.bytes));
    h = mixed(h ^ ((static_cast<std::uint64_t>(static_cast<std::uint32_t>(a.term)) << 32) |
                   static_cast<std::uint32_t>(a.frees)));
  }
  return h;
}

}  // namespace

std::vector<ParameterTensor> megatron_parameters(const Model& model, const StageParameters& stage,
                                                 const ParallelLayout& layout) {
  ParameterList list(model, layout);
  const bool tied_across_stages = model.tied_embeddings && layout.pipeline_parallel > 1;
  for (std::size_t c = 0; c < stage.chunks.size(); ++c) {
    const VirtualStage& v = stage.chunks[c];
    const auto chunk = static_cast<std::int32_t>(c);
    if (v.embedding) {
      for (const Tensor& t : embedding_tensors(model)) {
        list.add(t, chunk, false, tied_across_stages && t.component == Component::embedding);
      }
    }
    for (std::int64_t i = v.first_layer; i < v.first_layer + v.layer_count; ++i) {
      if (i < 0 || static_cast<std::size_t>(i) >= model.layers.size()) break;
      list.add_layer(model.layers[static_cast<std::size_t>(i)], chunk);
    }
    // GPTModel registers the final norm (decoder), then MTP, then the output layer.
    std::vector<Tensor> head;
    if (v.head) head = head_tensors(model);
    for (const Tensor& t : head) {
      if (t.component != Component::lm_head) list.add(t, chunk, false);
    }
    for (std::int64_t i = 0; i < v.mtp_layers; ++i) {
      for (const Tensor& t : mtp_tensors(model, 1)) {
        const bool in_layer = t.name.find("mtp.") != 0;
        list.add(t, chunk, in_layer && fused_into_previous(t.name, model.mtp_layer));
      }
    }
    for (const Tensor& t : head) {
      if (t.component == Component::lm_head) list.add(t, chunk, false);
    }
    // The stage's own copy of the tied embedding (layout.cpp, add_embedding_replica).
    if (!v.embedding && ((v.head && model.tied_embeddings) || v.mtp_layers > 0)) {
      list.add_vocab_replica(chunk);
    }
  }
  return list.take();
}

DdpBufferLayout ddp_buffer_layout(const std::vector<ParameterTensor>& parameters,
                                  std::int64_t chunks, bool distributed, std::int64_t dense_shards,
                                  std::int64_t expert_shards, std::int64_t first_chunk_bucket) {
  DdpBufferLayout out;
  out.placement.resize(parameters.size());
  const auto buffers = static_cast<std::size_t>(2 * std::max<std::int64_t>(chunks, 1));
  out.buffer_elements.assign(buffers, 0);
  out.buckets.assign(buffers, 0);
  for (std::size_t b = 0; b < buffers; ++b) {
    const bool expert = b % 2 == 1;
    const std::int64_t dp = std::max<std::int64_t>(1, expert ? expert_shards : dense_shards);
    const std::int64_t bucket_size = b < 2 ? first_chunk_bucket : 0;
    const std::int64_t bucket_multiple = distributed ? std::lcm(dp, kBucketAlignment) : 1;
    std::vector<std::size_t> members;  // reverse registration order: params[::-1]
    for (std::size_t i = parameters.size(); i-- > 0;) {
      const ParameterTensor& p = parameters[i];
      if (static_cast<std::size_t>(p.chunk) * 2 + (is_expert(p) ? 1 : 0) == b) members.push_back(i);
    }
    if (members.empty()) continue;
    std::int64_t next = 0;
    std::int64_t bucket_start = 0;
    std::size_t first_in_bucket = 0;
    const auto close_bucket = [&](std::size_t end_member, std::int64_t end) {
      const std::int64_t padded_end = round_up(end, bucket_multiple);
      const std::int64_t shard = (padded_end - bucket_start) / (distributed ? dp : 1);
      for (std::size_t k = first_in_bucket; k < end_member; ++k) {
        BufferPlacement& place = out.placement[members[k]];
        const std::int64_t p_end = place.start + parameters[members[k]].elements;
        place.rank0_elements =
            std::max<std::int64_t>(0, std::min(p_end, bucket_start + shard) - place.start);
      }
      ++out.buckets[b];
      bucket_start = padded_end;
      first_in_bucket = end_member;
      return padded_end;
    };
    for (std::size_t k = 0; k < members.size(); ++k) {
      const ParameterTensor& p = parameters[members[k]];
      if (distributed) next = round_up(next, kParamAlignment);
      if (distributed && p.shared_embedding && k > first_in_bucket) next = close_bucket(k, next);
      out.placement[members[k]] = {.buffer = static_cast<std::int64_t>(b), .start = next};
      next += p.elements;
      if ((bucket_size > 0 && next - bucket_start >= bucket_size) ||
          (distributed && p.shared_embedding)) {
        next = close_bucket(k + 1, next);
      }
    }
    if (first_in_bucket < members.size()) next = close_bucket(members.size(), next);
    out.buffer_elements[b] = next;
    out.order.insert(out.order.end(), members.begin(), members.end());
  }
  return out;
}

ResidentAllocations resident_allocations(
    const Model& model, const StageParameters& stage, const ParallelLayout& layout,
    const std::vector<Term>& resident, const Precision& precision, const OptimizerConfig& optimizer,
    const ResolvedSharding& sharding, const DataParallelSharding& ddp, std::int64_t max_tensors) {
  ResidentAllocations out;
  if (sharding.implementation != DataParallelImpl::megatron_ddp) return out;
  const TermSlots slots = find_terms(resident, precision, optimizer);
  constexpr std::int64_t kEntriesPerParameter = 5;
  // The routed experts' GroupedLinear weights alone (2 per local expert per MoE layer), counted
  // before the list is built: a stage past the bound builds nothing.
  std::int64_t expert_weights = 0;
  const std::int64_t local_experts =
      model.moe.routed_experts / std::max<std::int64_t>(1, layout.expert_parallel);
  for (const VirtualStage& v : stage.chunks) {
    for (std::int64_t i = v.first_layer; i < v.first_layer + v.layer_count; ++i) {
      if (i >= 0 && static_cast<std::size_t>(i) < model.layers.size() &&
          model.layers[static_cast<std::size_t>(i)].mlp == MlpKind::moe) {
        expert_weights += 2 * local_experts;
      }
    }
  }
  if (expert_weights > max_tensors / kEntriesPerParameter) {
    out.over_bound = true;
    return out;
  }
  const std::vector<ParameterTensor> parameters = megatron_parameters(model, stage, layout);
  if (parameters.empty()) return out;
  if (static_cast<std::int64_t>(parameters.size()) > max_tensors / kEntriesPerParameter) {
    out.over_bound = true;
    return out;
  }
  const bool distributed = sharding.shards_state();
  const StateShards shards = state_shards(sharding);
  const std::int64_t chunks = static_cast<std::int64_t>(stage.chunks.size());
  std::int64_t first_chunk_bucket = 0;
  if (ddp.overlap_grad_reduce && stage.pipeline_rank == 0) {
    const std::int64_t dp_cp = data_parallel_size(layout) * layout.context_parallel;
    first_chunk_bucket = ddp.ddp_bucket_size > 0
                             ? ddp.ddp_bucket_size
                             : std::max(kDefaultBucketMin, kDefaultBucketPerRank * dp_cp);
  }
  const DdpBufferLayout buffers = ddp_buffer_layout(parameters, chunks, distributed, shards.dense,
                                                    shards.expert, first_chunk_bucket);

  // Every tensor's bytes, checked: an overflow (never for a term that fit) drops the lists.
  bool overflowed = false;
  const auto bytes_of = [&overflowed](std::int64_t elements, std::int64_t per_element) {
    std::int64_t bytes = 0;
    if (!checked_mul(elements, per_element, &bytes)) overflowed = true;
    return bytes;
  };
  const std::int64_t weight_bytes = precision.dense_weights == WeightDtype::fp32 ? 4 : 2;
  const std::int64_t grad = grad_bytes(precision.grads);
  auto& init = out.at_init;
  // Model init: every parameter its own tensor.
  std::vector<std::int32_t> own_weight(parameters.size(), -1);
  if (slots.weights >= 0) {
    for (std::size_t i = 0; i < parameters.size(); ++i) {
      own_weight[i] = static_cast<std::int32_t>(init.size());
      init.push_back(
          {.bytes = bytes_of(parameters[i].elements, weight_bytes), .term = slots.weights});
    }
  }
  // DDP wraps the chunks in order: per buffer param_data (distributed optimizer), grad_data, then
  // each parameter moved into param_data and its own tensor freed.
  std::size_t next_in_order = 0;
  for (std::size_t b = 0; b < buffers.buffer_elements.size(); ++b) {
    const std::int64_t elements = buffers.buffer_elements[b];
    if (elements == 0) continue;
    const bool param_buffer = distributed && slots.weights >= 0;
    if (param_buffer)
      init.push_back({.bytes = bytes_of(elements, weight_bytes), .term = slots.weights});
    if (slots.main_gradient >= 0) {
      init.push_back({.bytes = bytes_of(elements, grad), .term = slots.main_gradient});
    }
    for (; next_in_order < buffers.order.size() &&
           buffers.placement[buffers.order[next_in_order]].buffer == static_cast<std::int64_t>(b);
         ++next_in_order) {
      const std::size_t i = buffers.order[next_in_order];
      if (param_buffer) init.push_back({.term = slots.weights, .frees = own_weight[i]});
    }
  }
  // The optimizer's tensors, group by group; within a group, buffer order (distributed) or
  // registration order.
  std::vector<std::size_t> optimizer_order;
  for (int group = 0; group < 3; ++group) {
    const auto add_if_in_group = [&](std::size_t i) {
      if (group_of(parameters[i]) == group) optimizer_order.push_back(i);
    };
    if (distributed) {
      for (const std::size_t i : buffers.order) add_if_in_group(i);
    } else {
      for (std::size_t i = 0; i < parameters.size(); ++i) add_if_in_group(i);
    }
  }
  // Rank 0's part of each parameter: its intersection with rank 0's range of the bucket. A term
  // that covers only part of its group's parameters (Muon's and AdamW's groups under distributed
  // Muon; master weights beside fp32-stored tensors) is instead taken as 1/shards of each of its
  // parameters, as the term itself assumes (resident_terms.h): the real split follows the buffer.
  const auto whole_group = [&](bool expert, auto&& covers) {
    for (const ParameterTensor& p : parameters) {
      if (is_expert(p) == expert && !covers(p)) return false;
    }
    return true;
  };
  const auto shard_of = [&](std::size_t i, bool even) {
    const ParameterTensor& p = parameters[i];
    if (!distributed) return p.elements;
    if (!even) return buffers.placement[i].rank0_elements;
    return ceil_div(p.elements,
                    std::max<std::int64_t>(1, is_expert(p) ? shards.expert : shards.dense));
  };
  const std::int64_t main_bytes = master_bytes(optimizer.master_weights);
  const auto has_master = [&](const ParameterTensor& p) {
    return storage_dtype(precision, p.role) != WeightDtype::fp32;
  };
  const bool even_master[2] = {!whole_group(false, has_master), !whole_group(true, has_master)};
  for (const std::size_t i : optimizer_order) {
    const ParameterTensor& p = parameters[i];
    const std::int32_t term = slots.master[is_expert(p) ? 1 : 0];
    if (term < 0 || !has_master(p)) continue;
    const std::int64_t elements = shard_of(i, even_master[is_expert(p) ? 1 : 0]);
    if (elements > 0) init.push_back({.bytes = bytes_of(elements, main_bytes), .term = term});
  }
  std::vector<bool> even_moments;
  for (const TermSlots::Moments& m : slots.moments) {
    even_moments.push_back(!whole_group(m.expert, [&](const ParameterTensor& p) {
      return (m.roles >> static_cast<int>(p.role) & 1) != 0;
    }));
  }
  for (const std::size_t i : optimizer_order) {
    const ParameterTensor& p = parameters[i];
    for (std::size_t k = 0; k < slots.moments.size(); ++k) {
      const TermSlots::Moments& m = slots.moments[k];
      if (m.expert != is_expert(p) || (m.roles >> static_cast<int>(p.role) & 1) == 0) continue;
      const std::int64_t elements = shard_of(i, even_moments[k]);
      for (std::int64_t n = 0; n < m.tensors && elements > 0; ++n) {
        out.first_step.push_back({.bytes = bytes_of(elements, m.bytes), .term = m.term});
      }
    }
  }
  for (const std::int32_t t :
       {slots.weights, slots.main_gradient, slots.master[0], slots.master[1]}) {
    if (t >= 0) out.covered_terms.push_back(t);
  }
  for (const TermSlots::Moments& m : slots.moments) out.covered_terms.push_back(m.term);
  std::sort(out.covered_terms.begin(), out.covered_terms.end());
  if (overflowed) {
    ResidentAllocations dropped;
    dropped.over_bound = true;
    return dropped;
  }
  out.hash = hash_of(out.first_step, hash_of(out.at_init, out.covered_terms.size()));
  return out;
}

}  // namespace stagemem
