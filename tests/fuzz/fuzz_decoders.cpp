// fuzz_decoders.cpp — libFuzzer target for every decoder of untrusted text.
//
// The same bytes go to the URL fragment decoder, the JSON configuration decoder, the Hugging Face
// config import, the model text parser, the measured-value / amount parsers and a link's
// snapshot= entries (snapshot_link.h), a scaling point and a link's scaling= points
// (scaling_points.h). Besides crashes,
// leaks, hangs and undefined behaviour (ASan + UBSan), it checks round trips: whatever a decoder
// accepts must encode to text that decodes back to the same value. A broken round trip traps.
// Build and run: scripts/fuzz.sh SECONDS (clang, -DSTAGEMEM_FUZZ=ON).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "config/config_json.h"
#include "config/measurement_text.h"
#include "config/scaling_points.h"
#include "config/url_fragment.h"
#include "measured/snapshot_link.h"
#include "model/hf_config.h"
#include "model/model_text.h"

namespace {

void require(bool condition) {
  if (!condition) __builtin_trap();
}

void check_config_round_trips(const stagemem::Config& config) {
  const stagemem::DecodedConfig from_link =
      stagemem::decode_fragment(stagemem::encode_fragment(config));
  require(from_link.diagnostics.ok() && from_link.config == config);
  const stagemem::DecodedConfig from_json =
      stagemem::config_from_json(stagemem::config_to_json(config));
  require(from_json.diagnostics.ok() && from_json.config == config);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);

  if (const auto link = stagemem::decode_fragment(text); link.diagnostics.ok()) {
    check_config_round_trips(link.config);
  }
  if (const auto json = stagemem::config_from_json(text); json.diagnostics.ok()) {
    check_config_round_trips(json.config);
  }
  if (const auto model = stagemem::model_from_text(text, "model"); model.model) {
    const auto again = stagemem::model_from_text(stagemem::model_to_text(*model.model), "model");
    require(again.model.has_value() && *again.model == *model.model);
  }
  if (const auto imported = stagemem::import_hf_config(text); imported.model) {
    const auto again = stagemem::model_from_text(stagemem::model_to_text(*imported.model), "model");
    require(again.model.has_value());
  }
  stagemem::Diagnostics diagnostics;
  if (const auto m = stagemem::parse_measurement_text(text, diagnostics, "m")) {
    require(stagemem::parse_measurement_text(stagemem::measurement_text(*m), diagnostics, "m") ==
            *m);
  }
  if (const auto g = stagemem::parse_gap_text(text, diagnostics, "g")) {
    require(stagemem::parse_gap_text(stagemem::gap_text(*g), diagnostics, "g") == *g);
  }
  if (const auto bytes = stagemem::parse_byte_amount(text)) {
    require(stagemem::parse_byte_amount(stagemem::byte_amount_text(*bytes)) == *bytes);
  }
  if (const auto point = stagemem::parse_scaling_point_text(text, diagnostics, "p")) {
    require(stagemem::parse_scaling_point_text(stagemem::scaling_point_text(*point), diagnostics,
                                               "p") == *point);
  }
  if (const auto scaling = stagemem::decode_scaling_link(text); scaling.scaling) {
    const auto again = stagemem::decode_scaling_link(stagemem::scaling_fragment(*scaling.scaling));
    require(again.diagnostics.ok() && again.scaling == scaling.scaling);
  }
  // A snapshot's summary from a link: written back (names made printable, WHERE cut to fit),
  // it decodes again, and from then on decode -> encode is a fixed point.
  if (const auto snap = stagemem::decode_snapshot_link(text); snap.snapshot) {
    const auto encode = [](const stagemem::SnapshotLinkSummary& s) {
      return stagemem::snapshot_fragment(
          stagemem::snapshot_link_entries(s.summary, s.file, s.stage));
    };
    const std::string once = encode(*snap.snapshot);
    const auto again = stagemem::decode_snapshot_link(once);
    require(again.diagnostics.ok() && again.snapshot.has_value());
    const std::string twice = encode(*again.snapshot);
    const auto third = stagemem::decode_snapshot_link(twice);
    require(third.snapshot.has_value() && encode(*third.snapshot) == twice);
  }
  return 0;
}
