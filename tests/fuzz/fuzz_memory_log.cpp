// fuzz_memory_log.cpp — libFuzzer target for the Megatron memory-log reader: text ->
// parse_memory_log -> memory_log_measurements (over a few layouts) -> measurement text and back.
// Besides crashes, leaks, hangs and undefined behaviour (ASan + UBSan), it checks the reader's
// contract: every error and warning names the log field, every reading has a line inside the
// text, a rank in [0, max_rank] and figures in [0, 2^50] bytes; every measurement sits on the
// pipeline stage Megatron's rank order gives its rank, and round-trips through
// measurement_text / parse_measurement_text exactly (what a link carries).
// Build and run: FUZZ_TARGETS=stagemem_fuzz_memory_log scripts/fuzz.sh SECONDS.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "config/measurement_text.h"
#include "measured/memory_log.h"

namespace {

void require(bool condition) {
  if (!condition) __builtin_trap();
}

bool names_field(const stagemem::Diagnostics& d, const std::string& field) {
  for (const auto& m : d.errors) {
    if (!m.field.starts_with(field) || m.message.empty()) return false;
  }
  for (const auto& m : d.warnings) {
    if (!m.field.starts_with(field) || m.message.empty()) return false;
  }
  return true;
}

bool in_bytes(std::int64_t v) {
  return v >= 0 && v <= stagemem::max_config_bytes;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const std::string field = "memory_log[fuzz]";
  stagemem::Diagnostics d;
  const auto readings = stagemem::parse_memory_log(text, field, d);
  require(names_field(d, field));
  const auto lines = static_cast<std::int64_t>(std::count(text.begin(), text.end(), '\n')) + 1;
  for (const auto& r : readings) {
    require(r.line >= 1 && r.line <= lines);
    require(r.rank >= 0 && r.rank <= stagemem::max_rank);
    require(r.rank_given || r.rank == 0);
    require(in_bytes(r.allocated) && in_bytes(r.max_allocated));
    require(r.reserved == -1 || in_bytes(r.reserved));
    require(r.max_reserved == -1 || in_bytes(r.max_reserved));
  }
  // World sizes 1, 16 and 64 with PP 1, 4 and 8 (TP/CP/DP between them).
  stagemem::ParallelLayout layouts[3];
  layouts[0].pipeline_parallel = 1;
  layouts[0].data_parallel = 1;
  layouts[1].pipeline_parallel = 4;
  layouts[1].tensor_parallel = 2;
  layouts[1].data_parallel = 2;
  layouts[2].pipeline_parallel = 8;
  layouts[2].tensor_parallel = 2;
  layouts[2].context_parallel = 2;
  layouts[2].data_parallel = 2;
  for (const auto& layout : layouts) {
    stagemem::Diagnostics m;
    const auto measurements = stagemem::memory_log_measurements(readings, layout, "fuzz.log", field,
                                                                stagemem::max_measurements, m);
    require(names_field(m, field));
    require(measurements.size() <= stagemem::max_measurements);
    for (const auto& x : measurements) {
      require(x.rank >= 0 && x.rank < stagemem::world_size(layout));
      require(stagemem::rank_coordinates(layout, x.rank).pipeline == x.stage);
      require(x.stage >= 0 && x.stage < layout.pipeline_parallel);
      require(x.figure != stagemem::MemoryFigure::unspecified);
      require(in_bytes(x.bytes));
      stagemem::Diagnostics back;
      const auto parsed =
          stagemem::parse_measurement_text(stagemem::measurement_text(x), back, "m");
      require(parsed.has_value() && *parsed == x);
    }
  }
  return 0;
}
