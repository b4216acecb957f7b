// term_catalogue.h — every kind of term stagemem can produce, for the app's "Model" panel and
// `stagemem terms`: name, family, tag, what it scales with, an example formula and the option
// that brings it in.
//
// Purpose: make the physics readable without the source. The catalogue is not a second copy of
// the formulas: it runs the real estimator on a small synthetic model that has every layer kind
// and feature (GQA, MLA with output gate, KDA, dense and latent MoE with shared experts, MTP,
// AttnRes) under each option that adds terms, and lists each distinct term once, with the
// formula text exactly as the report shows it (numbers of the synthetic model substituted).
// Units: example formulas are in bytes of the synthetic model (h 1024, seq 4096, mbs 1).
#pragma once

#include <string>
#include <vector>

#include "report/report.h"

namespace stagemem {

struct CatalogueEntry {
  std::string name;
  Family family = Family::resident;
  Tag tag = Tag::derived;
  AllocationPoint allocated_at = AllocationPoint::model_init;
  std::string scaling;
  std::string example_formula;
  std::string brought_in_by;  // the option that makes the term appear, e.g. "recompute=full"
};

std::vector<CatalogueEntry> term_catalogue();

}  // namespace stagemem
