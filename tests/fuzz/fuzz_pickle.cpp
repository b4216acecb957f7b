// fuzz_pickle.cpp — libFuzzer target for the allocator-snapshot reader: bytes -> read_pickle ->
// decode_snapshot -> summarize_snapshot -> attribution. Besides crashes, leaks, hangs and undefined
// behaviour (ASan + UBSan), it checks the reader's contract: a refusal names an offset inside the
// input, and an accepted tree's indices all point into the tree. Small limits keep each input
// cheap. Build and run: FUZZ_TARGETS=stagemem_fuzz_pickle scripts/fuzz.sh SECONDS.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "measured/pickle_reader.h"
#include "measured/snapshot.h"

namespace {

void require(bool condition) {
  if (!condition) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  stagemem::PickleLimits limits;
  limits.max_nodes = 100000;
  limits.max_memo = 100000;
  limits.max_stack = 10000;
  const stagemem::PickleResult r = stagemem::read_pickle(bytes, limits);
  if (!r.tree) {
    require(r.error_offset <= size && !r.error.empty());
    return 0;
  }
  const auto& nodes = r.tree->nodes;
  require(r.tree->root < nodes.size());
  for (const auto& n : nodes) {
    for (std::uint32_t i : n.items) require(i < nodes.size());
    for (std::uint32_t k : n.keys) require(k < nodes.size());
    require(n.kind != stagemem::PickleKind::dict || n.keys.size() == n.items.size());
  }
  // Shared memoised lists can multiply the frames; the frame bound keeps that linear.
  const stagemem::SnapshotDecoded d = stagemem::decode_snapshot(*r.tree, 100000);
  if (!d.snapshot) {
    require(!d.error.empty());
    return 0;
  }
  const stagemem::SnapshotSummary s = stagemem::summarize_snapshot(*d.snapshot);
  if (s.error.empty()) {
    std::int64_t total = 0;
    for (const auto& b : s.buckets) total += b.bytes;
    require(total == s.active_bytes);
  }
  const auto rows = stagemem::compare_snapshot(s, stagemem::StageReport{});
  require(rows.size() == stagemem::snapshot_bucket_count);
  return 0;
}
