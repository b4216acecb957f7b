// pipeline_layout_string.h — Megatron-LM's `--pipeline-model-parallel-layout` string syntax.
//
// Purpose: read a layout such as "Et*3|(tt|)*29,m|L" into one entry per virtual pipeline stage
// (pipeline order: entry i runs on pipeline rank i % PP as its chunk i / PP), so stagemem can
// place exactly the layers a Megatron run with that flag would build.
//
// Grammar (as Megatron's PipelineParallelLayerLayout.parse_str_to_list reads it):
//   E  the embedding        t  one decoder (transformer) layer     m  one MTP layer
//   L  the loss: final norm and output layer                       |  a stage boundary
//   X*N  the single character X (a layer letter or '|') repeated N times
//   (...)*N  the group repeated N times; groups do not nest and must be followed by *N
//   ,  purely cosmetic, ignored anywhere
// Units: counts of layers. Positions in errors are 0-based character offsets into the input.
// Limitations: no whitespace (Megatron rejects it too); a layout may expand to at most
// `max_layout_entries` letters and boundaries, so a hostile string cannot exhaust memory.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "base/diagnostics.h"

namespace stagemem {

inline constexpr std::int64_t max_layout_entries = 1'000'000;

struct LayoutStageEntry {
  std::int64_t embedding = 0;  // count of 'E'
  std::int64_t decoder = 0;    // count of 't'
  std::int64_t mtp = 0;        // count of 'm'
  std::int64_t loss = 0;       // count of 'L'
  friend bool operator==(const LayoutStageEntry&, const LayoutStageEntry&) = default;
};

struct ParsedPipelineLayout {
  std::vector<LayoutStageEntry> stages;  // one per virtual stage, pipeline order
  // Order facts Megatron checks on the flattened letters (counts alone lose them).
  bool starts_with_embedding = false;
  bool ends_with_loss = false;
  bool decoder_after_mtp = false;
};

// Syntax only: errors go to `field` with the offending position. The structural rules that need
// the model and PP (stage count divisible by PP, exactly one E first and one L last, decoder and
// MTP counts) are checked by the layout planner (layout.h).
std::optional<ParsedPipelineLayout> parse_pipeline_layout_string(
    std::string_view text, Diagnostics& diagnostics,
    std::string_view field = "parallel.layout_string");

}  // namespace stagemem
