// Tests of term_text.h: every term's name, formula and scaling rendered on demand from its
// numbers equals the text stagemem printed when it built those strings during the estimate.
//
// tests/core/data/term_text_golden.tsv was written by the CLI of commit fb211f6 (the last one
// that formatted text while computing; see its header) for 26 links: every preset family, each
// option that brings in terms (recompute, kernels, precisions, optimizers, cast copies, CP, ETP,
// routing imbalance, measured gaps) and the synthetic catalogue model with every layer kind. The
// test decodes each link, estimates, renders every term and compares the whole set per stage.
// A deliberate physics change rewrites the file: run this test with STAGEMEM_WRITE_GOLDEN set to
// the file's path (it keeps the header comments and the links, writes what the core renders now,
// and fails so the run is never mistaken for a check), then review `git diff` of the file: it
// must show exactly the change intended, and the header should say what changed.
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "catch.h"
#include "config/url_fragment.h"
#include "corpus.h"
#include "estimate/estimate.h"
#include "render/term_text.h"
#include "render/vocabulary.h"
#include "report/report.h"

using namespace stagemem;

namespace {

std::vector<std::string> split_tabs(const std::string& line) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (true) {
    const std::size_t tab = line.find('\t', start);
    out.push_back(line.substr(start, tab - start));
    if (tab == std::string::npos) return out;
    start = tab + 1;
  }
}

struct GoldenLink {
  std::string link;
  std::string peaks;
  std::map<std::string, std::string> terms;  // term text -> stages holding it
};

std::vector<GoldenLink> read_golden() {
  std::istringstream in(stagemem_tests::read_whole_file(
      stagemem_tests::corpus_path("core/data/term_text_golden.tsv")));
  std::vector<GoldenLink> out;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const auto fields = split_tabs(line);
    if (fields[0] == "link") {
      out.push_back({.link = fields[1], .peaks = {}, .terms = {}});
    } else if (fields[0] == "peaks") {
      out.back().peaks = fields[1];
    } else {
      REQUIRE(fields.size() == 8);
      std::string key;
      for (std::size_t i = 1; i < fields.size(); ++i) key += fields[i] + (i + 1 < 8 ? "\t" : "");
      out.back().terms[key] = fields[0];
    }
  }
  return out;
}

std::string term_key(const Term& t) {
  return term_name(t) + "\t" + term_formula(t) + "\t" + term_scaling(t) + "\t" +
         std::string(family_name(t.family)) + "\t" + std::string(tag_name(t.tag)) + "\t" +
         std::string(allocation_point_name(t.allocated_at)) + "\t" + std::to_string(t.bytes);
}

}  // namespace

// What the core renders now for one link: its peaks and each distinct term with its stages.
GoldenLink render_link(const std::string& link) {
  const DecodedFragment decoded = decode_fragment(link.substr(1));
  REQUIRE(decoded.diagnostics.ok());
  const Report report = estimate(decoded.config);
  REQUIRE(report.diagnostics.ok());
  GoldenLink out{.link = link, .peaks = {}, .terms = {}};
  for (const StageReport& stage : report.stages) {
    out.peaks += (out.peaks.empty() ? "" : ",") + std::to_string(stage.peak_bytes);
    for (const Term& t : stage.terms) {
      std::string& stages = out.terms[term_key(t)];
      stages += (stages.empty() ? "" : ",") + std::to_string(stage.index);
    }
  }
  return out;
}

// Rewrites the golden file from what the core renders now, in the file's order: kept terms where
// they were, new ones at the end of their link, so the diff shows only what changed.
void write_golden(const char* path) {
  std::istringstream in(stagemem_tests::read_whole_file(
      stagemem_tests::corpus_path("core/data/term_text_golden.tsv")));
  std::ostringstream out;
  std::optional<GoldenLink> current;
  const auto finish = [&] {
    if (!current) return;
    for (const auto& [key, stages] : current->terms) out << stages << "\t" << key << "\n";
    current.reset();
  };
  std::string line;
  while (std::getline(in, line)) {
    const auto fields = split_tabs(line);
    if (line.empty() || line[0] == '#') {
      out << line << "\n";
    } else if (fields[0] == "link") {
      finish();
      current = render_link(fields[1]);
      out << line << "\n";
    } else if (fields[0] == "peaks") {
      out << "peaks\t" << current->peaks << "\n";
    } else {
      std::string key;
      for (std::size_t i = 1; i < fields.size(); ++i) key += fields[i] + (i + 1 < 8 ? "\t" : "");
      const auto found = current->terms.find(key);
      if (found == current->terms.end()) continue;
      out << found->second << "\t" << key << "\n";
      current->terms.erase(found);
    }
  }
  finish();
  std::ofstream(path) << out.str();
}

TEST_CASE("Terms rendered on demand equal the text of the string-building core") {
  const std::vector<GoldenLink> golden = read_golden();
  REQUIRE(golden.size() == 26);
  if (const char* path = std::getenv("STAGEMEM_WRITE_GOLDEN")) {
    write_golden(path);
    FAIL("wrote " << path << " from the current core: review its diff");
  }
  for (const GoldenLink& g : golden) {
    INFO(g.link);
    const DecodedFragment decoded = decode_fragment(g.link.substr(1));
    REQUIRE(decoded.diagnostics.ok());
    const Report report = estimate(decoded.config);
    REQUIRE(report.diagnostics.ok());
    std::string peaks;
    std::map<std::string, std::string> terms;
    for (const StageReport& stage : report.stages) {
      peaks += (peaks.empty() ? "" : ",") + std::to_string(stage.peak_bytes);
      for (const Term& t : stage.terms) {
        std::string& stages = terms[term_key(t)];
        stages += (stages.empty() ? "" : ",") + std::to_string(stage.index);
      }
    }
    CHECK(peaks == g.peaks);
    for (const auto& [key, stages] : g.terms) {
      INFO(key);
      const auto found = terms.find(key);
      CHECK(found != terms.end());
      if (found != terms.end()) CHECK(found->second == stages);
    }
    for (const auto& [key, stages] : terms) {
      INFO(key);
      CHECK(g.terms.contains(key));
    }
  }
}
