#!/usr/bin/env bash
# Fuzzes stagemem with libFuzzer under ASan + UBSan, each target for SECONDS (default 60), then
# prints the figures (executions, coverage, features) per target:
#   stagemem_fuzz_decoders  the decoders of untrusted text (URL fragment, JSON, HF config, model
#                           text, measured values), with round trips;
#   stagemem_fuzz_estimate  link/JSON bytes -> estimate() -> every output writer, with the report
#                           oracles (tests/report_oracles.h);
#   stagemem_fuzz_pickle    allocator-snapshot bytes -> pickle reader -> snapshot decoder/summary;
#   stagemem_fuzz_memory_log  Megatron memory report lines -> readings -> measurements -> text.
#   scripts/fuzz.sh 600                         # ten minutes per target
#   FUZZ_TARGETS=stagemem_fuzz_estimate scripts/fuzz.sh 60   # one target
#   FUZZ_MERGE=1 scripts/fuzz.sh 600            # then minimise into the kept corpus (-merge=1)
# Builds with clang into out/build/fuzz. Seeds: the kept corpus tests/fuzz/corpus/<target>/, the
# link and bad-input corpora (one file per line), the HF configs and tests/bad-inputs/crashes/.
# The growing corpus lives in out/build/fuzz/corpus-<target>. Findings (crash-*, leak-*,
# timeout-*, oom-*) land in out/build/fuzz/findings-<target>: add each, once fixed, to
# tests/bad-inputs/crashes/. The run goes on after a finding (fork mode, FUZZ_JOBS parallel
# workers, default 1), so SECONDS is the real fuzzing time. Exit status 1 when any target has a
# finding; the last line says how many targets ran and how many had findings.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
jobs=${FUZZ_JOBS:-1}
targets=${FUZZ_TARGETS:-"stagemem_fuzz_decoders stagemem_fuzz_estimate stagemem_fuzz_pickle stagemem_fuzz_memory_log"}
build=out/build/fuzz
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ \
      -DSTAGEMEM_FUZZ=ON -DSTAGEMEM_BUILD_APP=OFF -DSTAGEMEM_BUILD_TESTS=OFF >/dev/null
# shellcheck disable=SC2086  # the target list splits on spaces
cmake --build "$build" --target $targets

seeds="$build/seeds"
rm -rf "$seeds"
mkdir -p "$seeds"
n=0
for file in tests/links/*.txt tests/bad-inputs/*.txt; do
  while IFS= read -r line; do
    [[ -z $line || $line == '#'* || $line == '//'* ]] && continue
    n=$((n + 1))
    printf '%s' "${line#*$'\t'}" >"$seeds/line-$n"
    printf '%s' "${line%%$'\t'*}" >"$seeds/head-$n"
  done <"$file"
done
cp shared/reference/hf-configs/*.json "$seeds/" 2>/dev/null || cp ../shared/reference/hf-configs/*.json "$seeds/" 2>/dev/null || true
cp tests/core/data/snapshots/*.pickle "$seeds/"
cp tests/cli/data/megatron_memory.log "$seeds/"
# The pickle corpora spell bytes as \xNN: seed their bytes too (printf %b reads the same escapes).
for file in tests/bad-inputs/pickle.txt tests/bad-inputs/snapshot.txt; do
  while IFS= read -r line; do
    [[ -z $line || $line == '#'* ]] && continue
    n=$((n + 1))
    printf '%b' "${line#*$'\t'}" >"$seeds/bytes-$n"
  done <"$file"
done
find tests/bad-inputs/crashes -maxdepth 1 -type f ! -name '*.md' -exec cp {} "$seeds/" \;

root=$(pwd)
count() { find "$1" -maxdepth 1 -type f | wc -l; }
ran=0 failed=0
for target in $targets; do
  kept="tests/fuzz/corpus/$target"
  corpus="$build/corpus-$target"
  findings="$build/findings-$target"
  log="$build/fuzz-$target.log"
  mkdir -p "$kept" "$corpus" "$findings"
  echo "fuzz $target: $(count "$seeds") seeds + $(count "$kept") kept inputs; running for ${seconds}s"
  set +e
  fuzzer=$root/$build/tests/fuzz/$target
  (cd "$findings" && "$fuzzer" -max_total_time="$seconds" -max_len=8192 \
     -timeout=10 -rss_limit_mb=4096 -print_final_stats=1 -fork="$jobs" -ignore_crashes=1 \
     -ignore_timeouts=1 -ignore_ooms=1 -artifact_prefix=./ \
     "$root/$corpus" "$root/$kept" "$root/$seeds") >"$log" 2>&1
  status=$?
  set -e
  tail -n 8 "$log"
  # Fork mode reports "#EXECUTIONS: cov: N ft: N corp: N ..." lines; the last one is the total.
  last=$(grep -E '^#[0-9]+' "$log" | tail -n 1 || true)
  executions=$(sed -nE 's/^#([0-9]+).*/\1/p' <<<"$last")
  cov=$(sed -nE 's/.* cov: ([0-9]+).*/\1/p' <<<"$last")
  ft=$(sed -nE 's/.* ft: ([0-9]+).*/\1/p' <<<"$last")
  found=$(find "$findings" -maxdepth 1 -type f \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' -o -name 'oom-*' \) | wc -l)
  echo "fuzz $target: ${executions:-0} executions, cov ${cov:-?}, ft ${ft:-?}, corpus $(count "$corpus") inputs, findings $found (in $findings)"
  if [[ ${FUZZ_MERGE:-0} == 1 ]]; then
    # Minimise: the smallest set of inputs with the same coverage replaces the kept corpus.
    merged="$build/merged-$target"
    rm -rf "$merged" && mkdir -p "$merged"
    # Inputs up to FUZZ_MERGE_MAX_LEN bytes (default 384) keep the kept corpus a few hundred KB
    # (about 90% of the edges of the whole corpus; the long JSON inputs come back from the seeds).
    "$fuzzer" -merge=1 -max_len="${FUZZ_MERGE_MAX_LEN:-384}" -timeout=10 "$merged" "$kept" "$corpus" \
      >"$build/merge-$target.log" 2>&1
    rm -rf "$kept" && mv "$merged" "$kept"
    echo "fuzz $target: kept corpus minimised to $(count "$kept") inputs, $(du -sk "$kept" | cut -f1) KiB"
  fi
  ran=$((ran + 1))
  [[ $status -eq 0 && $found -eq 0 ]] || failed=$((failed + 1))
done
echo "fuzz summary: $ran targets, $failed with findings"
[[ $failed -eq 0 ]]
