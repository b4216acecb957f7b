// report.h — the per-stage memory report: named terms per rank of each pipeline stage.
//
// Purpose: what every front end shows. A term is one named piece of device memory with the
// formula that produced it, what it scales with, its provenance tag and when it is allocated.
// Units: bytes (int64) per rank. Display units (GiB, MiB, GB) are the front end's business.
// Limitations: this version derives resident weights only (bf16); gradients, optimizer state,
// activations and transients arrive as further terms of the same shape.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "config.h"

namespace stagemem {

enum class Family : std::uint8_t { resident, activation, transient, gap };
enum class Tag : std::uint8_t { derived, measured };
enum class AllocationPoint : std::uint8_t { model_init, optimizer_init, first_step, forward, backward };

std::string_view family_name(Family family);
std::string_view tag_name(Tag tag);
std::string_view allocation_point_name(AllocationPoint point);

struct Term {
  std::string name;     // what the memory is, e.g. "weights (bf16)"
  std::string formula;  // with the numbers substituted, e.g. "2 B x 2,007,565,312 params"
  std::string scaling;  // what it grows with, e.g. "layers on stage, 1/TP"
  Family family = Family::resident;
  Tag tag = Tag::derived;
  AllocationPoint allocated_at = AllocationPoint::model_init;
  std::int64_t bytes = 0;
};

struct StageReport {
  std::int64_t index = 0;
  std::int64_t first_layer = 0;
  std::int64_t layer_count = 0;
  std::int64_t parameters_per_rank = 0;
  std::vector<Term> terms;
  std::int64_t peak_bytes = 0;
};

struct Report {
  std::string model;
  std::int64_t total_parameters = 0;
  std::vector<StageReport> stages;
  std::int64_t binding_stage = -1;  // index of the stage with the largest peak; -1 when invalid
  Diagnostics diagnostics;          // errors mean `stages` is empty
};

Report estimate(const Config& config);

}  // namespace stagemem
