#include "parallel/layout.h"

#include <algorithm>
#include <array>
#include <initializer_list>
#include <numeric>
#include <optional>
#include <string>

#include "parallel/pipeline_layout_string.h"

namespace stagemem {
namespace {

// Product of positive factors, 0 when a factor is not positive or the product overflows.
std::int64_t checked_product(std::initializer_list<std::int64_t> factors) {
  std::int64_t out = 1;
  for (std::int64_t f : factors) {
    if (f <= 0 || __builtin_mul_overflow(out, f, &out)) return 0;
  }
  return out;
}

bool divides(std::int64_t divisor, std::int64_t value) {
  return divisor > 0 && value % divisor == 0;
}

std::string text(std::int64_t value) {
  return std::to_string(value);
}

std::string join(const std::vector<std::int64_t>& values) {
  std::string out;
  for (std::int64_t v : values) out += (out.empty() ? "" : ", ") + text(v);
  return out;
}

struct ModelUses {
  bool gqa = false, mla = false, kda = false, moe = false, dense = false;
};

ModelUses uses_of(const Model& model) {
  ModelUses u;
  auto note = [&u](const LayerKind& k) {
    u.gqa |= k.attention == AttentionKind::gqa;
    u.mla |= k.attention == AttentionKind::mla;
    u.kda |= k.attention == AttentionKind::kda;
    u.moe |= k.mlp == MlpKind::moe;
    u.dense |= k.mlp == MlpKind::dense;
  };
  for (const LayerKind& k : model.layers) note(k);
  if (model.mtp_layers > 0) note(model.mtp_layer);
  return u;
}

std::string_view assignment_field(StageAssignment assignment) {
  switch (assignment) {
    case StageAssignment::even:
      return "parallel.pp";
    case StageAssignment::explicit_list:
      return "parallel.layers_per_stage";
    case StageAssignment::first_last:
      return "parallel.first_stage_layers";
    case StageAssignment::attn_res_aligned:
      return "parallel.attnres_aligned";
    case StageAssignment::layout_string:
      return "parallel.layout_string";
  }
  return "parallel";
}

struct Assignment {
  std::vector<std::int64_t> decoder;      // per virtual stage, pipeline order
  std::vector<LayoutStageEntry> entries;  // layout_string only
  std::int64_t chunks_per_rank = 1;
};

std::optional<Assignment> assign_first_last(const ParallelLayout& layout, std::int64_t layers,
                                            Diagnostics& d) {
  const std::int64_t pp = layout.pipeline_parallel;
  const std::int64_t vpp = layout.virtual_stages;
  const bool has_first = layout.first_stage_layers >= 0;
  const bool has_last = layout.last_stage_layers >= 0;
  if (!has_first && !has_last) {
    d.error("parallel.first_stage_layers",
            "first/last-stage assignment needs first_stage_layers or last_stage_layers (>= 1)");
    return std::nullopt;
  }
  const std::int64_t special = (has_first ? 1 : 0) + (has_last ? 1 : 0);
  if (pp < 2) {
    d.error("parallel.pp", "first/last-stage layer counts need PP >= 2, got " + text(pp));
    return std::nullopt;
  }
  const std::int64_t first = has_first ? layout.first_stage_layers : 0;
  const std::int64_t last = has_last ? layout.last_stage_layers : 0;
  if (has_first && (first < 1 || first > layers)) {
    d.error("parallel.first_stage_layers",
            "must be an integer in [1, " + text(layers) + "], got " + text(first));
    return std::nullopt;
  }
  if (has_last && (last < 1 || last > layers)) {
    d.error("parallel.last_stage_layers",
            "must be an integer in [1, " + text(layers) + "], got " + text(last));
    return std::nullopt;
  }
  const std::int64_t middle_ranks = pp - special;
  const std::int64_t rest = layers - first - last;
  if (rest < 0 || (middle_ranks == 0 && rest != 0) ||
      (middle_ranks > 0 && (rest == 0 || rest % middle_ranks != 0))) {
    d.error(has_first ? "parallel.first_stage_layers" : "parallel.last_stage_layers",
            "the " + text(rest) + " layers left after the first (" + text(first) + ") and last (" +
                text(last) + ") stages must divide evenly over the " + text(middle_ranks) +
                " middle stages (Megatron's rule)");
    return std::nullopt;
  }
  std::vector<std::int64_t> per_rank(static_cast<std::size_t>(pp),
                                     middle_ranks > 0 ? rest / middle_ranks : 0);
  if (has_first) per_rank.front() = first;
  if (has_last) per_rank.back() = last;
  for (std::size_t r = 0; r < per_rank.size(); ++r) {
    if (per_rank[r] % vpp != 0) {
      d.error("parallel.vpp", "pipeline rank " + text(static_cast<std::int64_t>(r)) + " holds " +
                                  text(per_rank[r]) + " layers, which VPP " + text(vpp) +
                                  " must divide (Megatron's rule with first/last-stage counts)");
      return std::nullopt;
    }
  }
  Assignment a;
  a.chunks_per_rank = vpp;
  for (std::int64_t chunk = 0; chunk < vpp; ++chunk) {
    for (std::int64_t r = 0; r < pp; ++r)
      a.decoder.push_back(per_rank[static_cast<std::size_t>(r)] / vpp);
  }
  return a;
}

std::optional<Assignment> assign_layout_string(const Model& model, const ParallelLayout& layout,
                                               Diagnostics& d) {
  const std::string field = "parallel.layout_string";
  const std::int64_t pp = layout.pipeline_parallel;
  auto parsed = parse_pipeline_layout_string(layout.layout_string, d, field);
  if (!parsed) return std::nullopt;
  const auto count = static_cast<std::int64_t>(parsed->stages.size());
  if (count % pp != 0) {
    d.error(field, "has " + text(count) + " stages, which PP " + text(pp) +
                       " must divide (stages = PP x VPP)");
    return std::nullopt;
  }
  const std::int64_t vpp = count / pp;
  if (layout.virtual_stages != 1 && layout.virtual_stages != vpp) {
    d.error("parallel.vpp", "the layout string gives VPP " + text(vpp) + " (" + text(count) +
                                " stages / PP " + text(pp) + ") but VPP " +
                                text(layout.virtual_stages) + " was asked for");
    return std::nullopt;
  }
  LayoutStageEntry sum;
  for (const LayoutStageEntry& e : parsed->stages) {
    sum.embedding += e.embedding;
    sum.decoder += e.decoder;
    sum.mtp += e.mtp;
    sum.loss += e.loss;
  }
  const auto layers = static_cast<std::int64_t>(model.layers.size());
  bool ok = true;
  auto fail = [&](const std::string& message) {
    d.error(field, message);
    ok = false;
  };
  if (sum.embedding != 1 || parsed->stages.front().embedding != 1 ||
      !parsed->starts_with_embedding) {
    fail("exactly one 'E' is needed, as the first letter of the first stage");
  }
  if (sum.loss != 1 || parsed->stages.back().loss != 1 || !parsed->ends_with_loss) {
    fail("exactly one 'L' is needed, as the last letter of the last stage");
  }
  if (sum.decoder != layers) {
    fail("has " + text(sum.decoder) + " decoder layers 't'; the model has " + text(layers));
  }
  if (sum.mtp != model.mtp_layers) {
    fail("has " + text(sum.mtp) + " MTP layers 'm'; the model has " + text(model.mtp_layers));
  }
  if (parsed->decoder_after_mtp) fail("decoder layers 't' must all come before MTP layers 'm'");
  std::int64_t mtp_stages = 0;
  for (std::int64_t i = 0; i < count; ++i) {
    const LayoutStageEntry& e = parsed->stages[static_cast<std::size_t>(i)];
    if (e.mtp == 0) continue;
    ++mtp_stages;
    if (i / pp != vpp - 1) {
      fail(
          "MTP layers must sit in the last virtual chunk of their pipeline rank (Megatron's rule); "
          "stage " +
          text(i) + " is chunk " + text(i / pp) + " of " + text(vpp));
    }
  }
  if (mtp_stages > 1) fail("all MTP layers must sit in one stage (Megatron's rule)");
  if (!ok) return std::nullopt;
  Assignment a;
  a.chunks_per_rank = vpp;
  a.entries = parsed->stages;
  for (const LayoutStageEntry& e : parsed->stages) a.decoder.push_back(e.decoder);
  return a;
}

std::optional<Assignment> assign(const Model& model, const ParallelLayout& layout, Diagnostics& d) {
  const auto layers = static_cast<std::int64_t>(model.layers.size());
  const std::int64_t pp = layout.pipeline_parallel;
  const std::int64_t vpp = layout.virtual_stages;
  const std::int64_t stages = pp * vpp;
  // DualPipeV's 2 chunks come with the schedule, not with a VPP the user set.
  const bool v_shape = layout.schedule == PipelineSchedule::dualpipev;
  const std::string stages_text = (v_shape ? "2 x PP = " : "PP x VPP = ") + text(stages);
  if (layout.assignment != StageAssignment::layout_string &&
      layout.assignment != StageAssignment::first_last && stages > layers) {
    d.error(
        vpp > 1 && !v_shape ? "parallel.vpp" : "parallel.pp",
        stages_text + " virtual stages must not exceed the model's " + text(layers) + " layers");
    return std::nullopt;
  }
  switch (layout.assignment) {
    case StageAssignment::even: {
      if (layers % stages != 0) {
        d.warn("parallel.pp", text(layers) + " layers do not divide evenly over " + stages_text +
                                  " stages; Megatron's default split refuses this, "
                                  "stagemem gives the earlier stages one extra layer each");
      }
      return Assignment{even_split(layers, stages), {}, vpp};
    }
    case StageAssignment::explicit_list: {
      const auto& list = layout.layers_per_stage;
      if (static_cast<std::int64_t>(list.size()) != stages) {
        d.error("parallel.layers_per_stage", "has " + text(static_cast<std::int64_t>(list.size())) +
                                                 " entries; expected PP x VPP = " + text(stages) +
                                                 " (one per virtual stage)");
        return std::nullopt;
      }
      std::int64_t sum = 0;
      for (std::int64_t n : list) {
        if (n < 0 || n > layers) {
          d.error("parallel.layers_per_stage",
                  "every entry must be an integer in [0, " + text(layers) + "], got " + text(n));
          return std::nullopt;
        }
        sum += n;
      }
      if (sum != layers) {
        d.error("parallel.layers_per_stage", "the entries sum to " + text(sum) +
                                                 "; they must sum to the model's " + text(layers) +
                                                 " layers");
        return std::nullopt;
      }
      return Assignment{list, {}, vpp};
    }
    case StageAssignment::first_last:
      return assign_first_last(layout, layers, d);
    case StageAssignment::attn_res_aligned: {
      const std::int64_t block = model.attn_res.block_size;
      if (block <= 0) {
        d.error("parallel.attnres_aligned",
                "the model has no Attention Residual blocks (attn_res_block_size is 0)");
        return std::nullopt;
      }
      auto split = attn_res_aligned_split(layers, block, stages);
      if (split.empty()) {
        const std::int64_t blocks = (layers + block - 1) / block;
        d.error("parallel.attnres_aligned",
                "needs at least one whole AttnRes block per virtual stage: the model has " +
                    text(blocks) + " blocks of " + text(block) +
                    " layers, so PP x VPP must be in [1, " + text(blocks) + "], got " +
                    text(stages));
        return std::nullopt;
      }
      return Assignment{std::move(split), {}, vpp};
    }
    case StageAssignment::layout_string:
      return assign_layout_string(model, layout, d);
  }
  return std::nullopt;
}

std::int64_t shard_elements(const Tensor& t, const ParallelLayout& layout) {
  switch (t.split) {
    case Split::replicated:
      return t.elements;
    case Split::tensor_parallel:
      return t.elements / layout.tensor_parallel;
    case Split::expert_parallel:
      return t.elements / (layout.expert_parallel * layout.expert_tensor_parallel);
  }
  return t.elements;
}

void add_tensors(StageParameters& stage, const std::vector<Tensor>& tensors, const Model& model,
                 const ParallelLayout& layout) {
  for (const Tensor& t : tensors) {
    const std::int64_t shard = shard_elements(t, layout);
    stage.logical.add(t.component, t.elements);
    stage.per_rank.add(t.component, shard);
    const auto role = static_cast<std::size_t>(tensor_role(t));
    stage.per_rank_roles.elements[role] += shard;
    // A rank holds its 1/EP share of the experts; ETP splits each expert tensor, not their number.
    stage.per_rank_roles.weight_tensors[role] +=
        t.split == Split::expert_parallel ? weight_tensor_count(t, model) / layout.expert_parallel
                                          : weight_tensor_count(t, model);
    switch (t.split) {
      case Split::replicated:
        stage.per_rank_split.replicated += shard;
        break;
      case Split::tensor_parallel:
        stage.per_rank_split.tensor_parallel += shard;
        break;
      case Split::expert_parallel:
        stage.per_rank_split.expert_parallel += shard;
        break;
    }
  }
}

// Adds the counts of `delta` (one layer's contribution) to `stage`.
// Adds `times` copies of `delta` (the counts of one layer of a kind).
void add_counts(StageParameters& stage, const StageParameters& delta, std::int64_t times = 1) {
  for (std::size_t c = 0; c < stage.logical.by_component.size(); ++c) {
    stage.logical.by_component[c] += delta.logical.by_component[c] * times;
    stage.per_rank.by_component[c] += delta.per_rank.by_component[c] * times;
  }
  for (std::size_t i = 0; i < stage.per_rank_roles.elements.size(); ++i) {
    stage.per_rank_roles.elements[i] += delta.per_rank_roles.elements[i] * times;
    stage.per_rank_roles.weight_tensors[i] += delta.per_rank_roles.weight_tensors[i] * times;
  }
  stage.per_rank_split.replicated += delta.per_rank_split.replicated * times;
  stage.per_rank_split.tensor_parallel += delta.per_rank_split.tensor_parallel * times;
  stage.per_rank_split.expert_parallel += delta.per_rank_split.expert_parallel * times;
}

// The vocabulary-parallel matrices are padded; the padding rows are real memory on every rank.
void add_vocab_padding(StageParameters& stage, Component component, const Model& model,
                       const ParallelLayout& layout) {
  const std::int64_t padding =
      (padded_vocab(model.vocab, layout) - model.vocab) * model.hidden / layout.tensor_parallel;
  stage.per_rank.add(component, padding);
  stage.per_rank_split.vocab_padding += padding;
  stage.per_rank_roles.elements[static_cast<std::size_t>(TensorRole::embedding_or_head)] += padding;
}

// A copy of the (padded, vocabulary-parallel) embedding matrix that is not a unique parameter.
void add_embedding_replica(StageParameters& stage, Component component, const Model& model,
                           const ParallelLayout& layout) {
  const std::int64_t rows = padded_vocab(model.vocab, layout);
  const std::int64_t elements = rows * model.hidden / layout.tensor_parallel;
  stage.per_rank.add(component, elements);
  stage.per_rank_split.embedding_replicas += elements;
  const auto role = static_cast<std::size_t>(TensorRole::embedding_or_head);
  stage.per_rank_roles.elements[role] += elements;
  stage.per_rank_roles.weight_tensors[role] += 1;
}

}  // namespace

std::vector<std::int64_t> even_split(std::int64_t layers, std::int64_t stages) {
  std::vector<std::int64_t> out;
  if (stages <= 0 || layers < 0) return out;
  out.assign(static_cast<std::size_t>(stages), layers / stages);
  for (std::int64_t i = 0; i < layers % stages; ++i) out[static_cast<std::size_t>(i)] += 1;
  return out;
}

std::vector<std::int64_t> attn_res_aligned_split(std::int64_t layers, std::int64_t block_size,
                                                 std::int64_t stages) {
  if (layers <= 0 || block_size <= 0 || stages <= 0) return {};
  const std::int64_t blocks = (layers + block_size - 1) / block_size;
  if (blocks < stages) return {};
  std::vector<std::int64_t> out = even_split(blocks, stages);
  for (std::int64_t& n : out) n *= block_size;
  out.back() -= blocks * block_size - layers;  // the partial block is the model's last
  return out;
}

std::int64_t padded_vocab(std::int64_t vocab, const ParallelLayout& layout) {
  const std::int64_t multiple = checked_product({layout.vocab_multiple, layout.tensor_parallel});
  if (multiple <= 0) return vocab;
  return (vocab + multiple - 1) / multiple * multiple;
}

std::int64_t data_parallel_size(const ParallelLayout& layout) {
  if (layout.data_parallel > 0) return layout.data_parallel;
  const std::int64_t fixed =
      checked_product({layout.tensor_parallel, layout.pipeline_parallel, layout.context_parallel});
  if (layout.world_size > 0) {
    return divides(fixed, layout.world_size) ? layout.world_size / fixed : 0;
  }
  const std::int64_t expert =
      checked_product({layout.expert_parallel, layout.expert_tensor_parallel});
  const std::int64_t inner = checked_product({layout.tensor_parallel, layout.context_parallel});
  if (expert <= 0 || inner <= 0) return 1;
  return expert / std::gcd(expert, inner);
}

std::int64_t world_size(const ParallelLayout& layout) {
  return checked_product({layout.tensor_parallel, layout.pipeline_parallel, layout.context_parallel,
                          data_parallel_size(layout)});
}

std::int64_t expert_data_parallel_size(const ParallelLayout& layout) {
  const std::int64_t inner = checked_product(
      {layout.tensor_parallel, layout.context_parallel, data_parallel_size(layout)});
  const std::int64_t expert =
      checked_product({layout.expert_parallel, layout.expert_tensor_parallel});
  return divides(expert, inner) ? inner / expert : 0;
}

std::int64_t RoleCounts::total() const {
  std::int64_t sum = 0;
  for (std::int64_t n : elements) sum += n;
  return sum;
}

std::vector<std::int64_t> StagePlan::layers_per_virtual_stage() const {
  std::vector<std::int64_t> out;
  for (const VirtualStage& v : virtual_stages) out.push_back(v.layer_count);
  return out;
}

std::vector<std::int64_t> StagePlan::layers_per_rank() const {
  std::vector<std::int64_t> out(static_cast<std::size_t>(pipeline_ranks), 0);
  for (const VirtualStage& v : virtual_stages)
    out[static_cast<std::size_t>(v.pipeline_rank)] += v.layer_count;
  return out;
}

std::optional<StagePlan> plan_stages(const Model& model, const ParallelLayout& layout,
                                     Diagnostics& d) {
  const auto layers = static_cast<std::int64_t>(model.layers.size());
  if (layers < 1) {
    d.error("model.layers", "the model has no decoder layers");
    return std::nullopt;
  }
  if (layout.pipeline_parallel < 1 || layout.pipeline_parallel > 4096 ||
      layout.virtual_stages < 1 || layout.virtual_stages > 4096) {
    d.error(layout.pipeline_parallel < 1 || layout.pipeline_parallel > 4096 ? "parallel.pp"
                                                                            : "parallel.vpp",
            "pipeline sizes must be integers in [1, 4096]");
    return std::nullopt;
  }
  const bool v_shape = layout.schedule == PipelineSchedule::dualpipev;
  if (v_shape && layout.virtual_stages != 1 && layout.virtual_stages != dualpipev_chunks) {
    d.error("parallel.vpp",
            "schedule dualpipev runs exactly 2 chunks per pipeline rank: leave "
            "vpp at 1 or set it to 2, got " +
                text(layout.virtual_stages));
    return std::nullopt;
  }
  if (v_shape && layout.assignment == StageAssignment::first_last) {
    d.error("parallel.first_stage_layers",
            "first/last-stage layer counts (split=first-last) are Megatron's per-rank counts of "
            "its interleaved placement; schedule dualpipev places stages in a V: give "
            "split=explicit (parallel.layers_per_stage, 2 x PP entries in model order), even or a "
            "layout string");
    return std::nullopt;
  }
  ParallelLayout placed = layout;
  if (v_shape) placed.virtual_stages = dualpipev_chunks;
  auto assignment = assign(model, placed, d);
  if (!assignment) return std::nullopt;
  StagePlan plan;
  plan.pipeline_ranks = layout.pipeline_parallel;
  plan.chunks_per_rank = assignment->chunks_per_rank;
  plan.schedule = layout.schedule;
  if (v_shape && plan.chunks_per_rank != dualpipev_chunks) {
    d.error("parallel.layout_string",
            "schedule dualpipev needs 2 x PP = " + text(2 * plan.pipeline_ranks) +
                " stages, the layout string gives " +
                text(plan.chunks_per_rank * plan.pipeline_ranks));
    return std::nullopt;
  }
  const auto count = static_cast<std::int64_t>(assignment->decoder.size());
  std::int64_t next_layer = 0, next_mtp = 0;
  for (std::int64_t i = 0; i < count; ++i) {
    VirtualStage v;
    v.pipeline_rank = i % plan.pipeline_ranks;
    v.chunk = i / plan.pipeline_ranks;
    if (v_shape && v.chunk == 1) v.pipeline_rank = 2 * plan.pipeline_ranks - 1 - i;
    v.first_layer = next_layer;
    v.layer_count = assignment->decoder[static_cast<std::size_t>(i)];
    if (assignment->entries.empty()) {
      v.embedding = i == 0;
      v.head = i == count - 1;
      v.mtp_layers = v.head ? model.mtp_layers : 0;
    } else {
      const LayoutStageEntry& e = assignment->entries[static_cast<std::size_t>(i)];
      v.embedding = e.embedding > 0;
      v.head = e.loss > 0;
      v.mtp_layers = e.mtp;
    }
    v.first_mtp_layer = next_mtp;
    next_layer += v.layer_count;
    next_mtp += v.mtp_layers;
    plan.virtual_stages.push_back(v);
  }
  // Attention Residuals start a new block every block_size layers; a boundary inside a block
  // makes the next stage receive the partial block sum as well as the completed blocks.
  const std::int64_t block = model.attn_res.block_size;
  if (block > 0) {
    std::vector<std::int64_t> splitting;
    std::int64_t boundary = 0;
    for (std::int64_t i = 0; i + 1 < count; ++i) {
      boundary += plan.virtual_stages[static_cast<std::size_t>(i)].layer_count;
      if (boundary > 0 && boundary < layers && boundary % block != 0) splitting.push_back(boundary);
    }
    if (!splitting.empty()) {
      d.warn(std::string(assignment_field(layout.assignment)),
             text(static_cast<std::int64_t>(splitting.size())) +
                 " stage boundary(ies), after layer counts " + join(splitting) +
                 ", split AttnRes blocks of " + text(block) +
                 " layers (blocks start at multiples of " + text(block) + ")");
    }
  }
  return plan;
}

namespace {

// Every size in its range (the pipeline size at most the model's layers).
void check_layout_ranges(const ParallelLayout& layout, std::int64_t layer_count, Diagnostics& d) {
  const std::size_t errors_before = d.errors.size();
  const std::int64_t tp = layout.tensor_parallel;
  auto range = [&d](std::string_view field, std::string_view what, std::int64_t value,
                    std::int64_t low, std::int64_t high) {
    if (value < low || value > high) {
      d.error(std::string(field), std::string(what) + " must be an integer in [" + text(low) +
                                      ", " + text(high) + "], got " + text(value));
    }
  };
  range("parallel.tp", "tensor parallel size", tp, 1, 1024);
  range("parallel.pp", "pipeline parallel size", layout.pipeline_parallel, 1,
        std::max<std::int64_t>(layer_count, 1));
  if (d.errors.size() > errors_before && layout.pipeline_parallel > layer_count) {
    d.errors.back().message += " (the model's layer count is " + text(layer_count) + ")";
  }
  range("parallel.vpp", "virtual pipeline size", layout.virtual_stages, 1, 1024);
  range("parallel.cp", "context parallel size", layout.context_parallel, 1, 1024);
  range("parallel.ep", "expert parallel size", layout.expert_parallel, 1, 65536);
  range("parallel.etp", "expert tensor parallel size", layout.expert_tensor_parallel, 1, 1024);
  if (layout.data_parallel != 0) {
    range("parallel.dp", "data parallel size (0: derive)", layout.data_parallel, 1, 1 << 24);
  }
  if (layout.world_size != 0) {
    range("parallel.world_size", "world size (0: derive)", layout.world_size, 1, 1LL << 32);
  }
  range("parallel.vocab_multiple", "vocabulary padding multiple", layout.vocab_multiple, 1,
        1 << 20);
}

// TP divides every width it splits; EP the routed experts, ETP the expert intermediate size.
void check_model_divisible(const Model& model, const ParallelLayout& layout, const ModelUses& uses,
                           Diagnostics& d) {
  const std::int64_t tp = layout.tensor_parallel;
  const std::string tp_text = text(tp);
  if (uses.gqa && !(divides(tp, model.gqa.heads) && divides(tp, model.gqa.kv_heads))) {
    d.error("parallel.tp", "tensor parallel size " + tp_text +
                               " must divide the attention heads (" + text(model.gqa.heads) +
                               ") and KV heads (" + text(model.gqa.kv_heads) + ")");
  }
  if (uses.mla && !divides(tp, model.mla.heads)) {
    d.error("parallel.tp", "tensor parallel size " + tp_text + " must divide the MLA heads (" +
                               text(model.mla.heads) + ")");
  }
  if (uses.kda && !divides(tp, model.kda.heads)) {
    d.error("parallel.tp", "tensor parallel size " + tp_text + " must divide the KDA heads (" +
                               text(model.kda.heads) + ")");
  }
  if (uses.dense && !divides(tp, model.dense_mlp.intermediate)) {
    d.error("parallel.tp", "tensor parallel size " + tp_text +
                               " must divide the dense MLP intermediate size (" +
                               text(model.dense_mlp.intermediate) + ")");
  }
  if (uses.moe && model.moe.shared_experts > 0 &&
      !divides(tp, model.moe.shared_experts * model.moe.shared_intermediate)) {
    d.error("parallel.tp",
            "tensor parallel size " + tp_text + " must divide the shared experts' width (" +
                text(model.moe.shared_experts * model.moe.shared_intermediate) + ")");
  }
  if (model.mtp_layers > 0 && !divides(tp, model.hidden)) {
    d.error("parallel.tp", "tensor parallel size " + tp_text + " must divide the hidden size (" +
                               text(model.hidden) + ") for the MTP eh_proj");
  }
  if (uses.moe && !divides(layout.expert_parallel, model.moe.routed_experts)) {
    d.error("parallel.ep", "expert parallel size " + text(layout.expert_parallel) +
                               " must divide the routed experts (" +
                               text(model.moe.routed_experts) + ")");
  }
  if (uses.moe && !divides(layout.expert_tensor_parallel, model.moe.expert_intermediate)) {
    d.error("parallel.etp", "expert tensor parallel size " + text(layout.expert_tensor_parallel) +
                                " must divide the expert intermediate size (" +
                                text(model.moe.expert_intermediate) + ")");
  }
}

// The world size (when given) is TP x PP x CP x DP; EP x ETP lies within one pipeline stage.
void check_world_size(const ParallelLayout& layout, const ModelUses& uses, Diagnostics& d) {
  const std::int64_t tp = layout.tensor_parallel;
  const std::int64_t fixed = tp * layout.pipeline_parallel * layout.context_parallel;
  if (layout.data_parallel > 0 && layout.world_size > 0 &&
      layout.world_size != fixed * layout.data_parallel) {
    d.error("parallel.world_size",
            "world size " + text(layout.world_size) +
                " must equal TP x PP x CP x DP = " + text(tp) + " x " +
                text(layout.pipeline_parallel) + " x " + text(layout.context_parallel) + " x " +
                text(layout.data_parallel) + " = " + text(fixed * layout.data_parallel));
  } else if (layout.data_parallel == 0 && layout.world_size > 0 &&
             !divides(fixed, layout.world_size)) {
    d.error("parallel.world_size", "world size " + text(layout.world_size) +
                                       " must be a multiple of TP x PP x CP = " + text(fixed));
  } else if (uses.moe && expert_data_parallel_size(layout) == 0) {
    const std::int64_t inner = tp * layout.context_parallel * data_parallel_size(layout);
    d.error("parallel.ep",
            "EP x ETP = " + text(layout.expert_parallel * layout.expert_tensor_parallel) +
                " must divide TP x CP x DP = " + text(inner) +
                " (the ranks of one pipeline stage)");
  }
}

// Sequence parallelism where it has no effect, or missing where Megatron requires it.
void warn_sequence_parallel(const ParallelLayout& layout, const ModelUses& uses, Diagnostics& d) {
  const std::int64_t tp = layout.tensor_parallel;
  if (layout.sequence_parallel && tp == 1) {
    d.warn("parallel.sequence_parallel", "sequence parallelism has no effect at TP 1");
  }
  if (uses.moe && tp > 1 && layout.expert_parallel > 1 && !layout.sequence_parallel) {
    d.warn("parallel.sequence_parallel",
           "Megatron requires sequence parallelism with expert and tensor parallelism together");
  }
}

}  // namespace

void validate_layout(const Model& model, const ParallelLayout& layout, Diagnostics& d) {
  const std::size_t errors_before = d.errors.size();
  check_layout_ranges(layout, static_cast<std::int64_t>(model.layers.size()), d);
  if (d.errors.size() > errors_before) return;
  const ModelUses uses = uses_of(model);
  check_model_divisible(model, layout, uses, d);
  check_world_size(layout, uses, d);
  warn_sequence_parallel(layout, uses, d);
  if (d.errors.size() > errors_before) return;
  plan_stages(model, layout, d);
}

std::vector<StageParameters> stage_parameters(const Model& model, const ParallelLayout& layout,
                                              const StagePlan& plan) {
  std::vector<StageParameters> stages(static_cast<std::size_t>(plan.pipeline_ranks));
  for (std::size_t r = 0; r < stages.size(); ++r) {
    stages[r].pipeline_rank = static_cast<std::int64_t>(r);
  }
  const std::vector<Tensor> one_mtp_layer =
      model.mtp_layers > 0 ? mtp_tensors(model, 1) : std::vector<Tensor>{};
  // A layer's counts depend on its kind only: classify each kind's tensors once (3 x 2 kinds).
  std::array<std::optional<StageParameters>, 6> per_kind;
  const auto counts_of = [&](LayerKind kind) -> const StageParameters& {
    auto& entry = per_kind[static_cast<std::size_t>(static_cast<int>(kind.attention) * 2 +
                                                    static_cast<int>(kind.mlp))];
    if (!entry) {
      entry.emplace();
      add_tensors(*entry, layer_tensors(model, kind), model, layout);
    }
    return *entry;
  };
  std::vector<bool> seen(stages.size(), false);
  for (const VirtualStage& v : plan.virtual_stages) {
    if (v.pipeline_rank < 0 || v.pipeline_rank >= plan.pipeline_ranks) continue;
    StageParameters& stage = stages[static_cast<std::size_t>(v.pipeline_rank)];
    if (!seen[static_cast<std::size_t>(v.pipeline_rank)]) {
      seen[static_cast<std::size_t>(v.pipeline_rank)] = true;
      stage.first_layer = v.first_layer;
    }
    stage.layer_count += v.layer_count;
    stage.chunks.push_back(v);
    // Layers of a chunk by kind, then each kind's counts times its layers.
    std::array<std::int64_t, 6> layers_of_kind{};
    for (std::int64_t i = 0; i < v.layer_count; ++i) {
      const auto index = static_cast<std::size_t>(v.first_layer + i);
      if (index >= model.layers.size()) break;
      const LayerKind kind = model.layers[index];
      ++layers_of_kind[static_cast<std::size_t>(static_cast<int>(kind.attention) * 2 +
                                                static_cast<int>(kind.mlp))];
    }
    for (std::size_t slot = 0; slot < layers_of_kind.size(); ++slot) {
      if (layers_of_kind[slot] == 0) continue;
      const LayerKind kind{static_cast<AttentionKind>(slot / 2), static_cast<MlpKind>(slot % 2)};
      add_counts(stage, counts_of(kind), layers_of_kind[slot]);
    }
    if (v.embedding) {
      add_tensors(stage, embedding_tensors(model), model, layout);
      add_vocab_padding(stage, Component::embedding, model, layout);
    }
    if (v.head) {
      add_tensors(stage, head_tensors(model), model, layout);
      if (!model.tied_embeddings) add_vocab_padding(stage, Component::lm_head, model, layout);
    }
    for (std::int64_t i = 0; i < v.mtp_layers; ++i)
      add_tensors(stage, one_mtp_layer, model, layout);
    // One embedding copy serves both a tied LM head and MTP's input embedding on this chunk.
    if (!v.embedding && v.head && model.tied_embeddings) {
      add_embedding_replica(stage, Component::lm_head, model, layout);
    } else if (!v.embedding && v.mtp_layers > 0) {
      add_embedding_replica(stage, Component::embedding, model, layout);
    }
  }
  return stages;
}

std::vector<StageParameters> stage_parameters(const Model& model, const ParallelLayout& layout,
                                              const std::vector<std::int64_t>& layers_per_stage) {
  StagePlan plan;
  plan.pipeline_ranks = static_cast<std::int64_t>(layers_per_stage.size());
  std::int64_t next_layer = 0;
  for (std::size_t s = 0; s < layers_per_stage.size(); ++s) {
    VirtualStage v;
    v.pipeline_rank = static_cast<std::int64_t>(s);
    v.first_layer = next_layer;
    v.layer_count = layers_per_stage[s];
    v.embedding = s == 0;
    v.head = s + 1 == layers_per_stage.size();
    v.mtp_layers = v.head ? model.mtp_layers : 0;
    next_layer += v.layer_count;
    plan.virtual_stages.push_back(v);
  }
  return stage_parameters(model, layout, plan);
}

RoleCounts layer_role_counts(const Model& model, LayerKind kind, const ParallelLayout& layout) {
  StageParameters one;
  add_tensors(one, layer_tensors(model, kind), model, layout);
  return one.per_rank_roles;
}

}  // namespace stagemem
