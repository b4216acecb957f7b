#!/usr/bin/env bash
# Fuzzes the decoders of untrusted text (URL fragment, JSON, HF config, model text, measured
# values) with libFuzzer under ASan + UBSan for SECONDS (default 60), then prints the figures.
#   scripts/fuzz.sh 600          # ten minutes
# Builds with clang into out/build/fuzz; seeds the corpus from tests/links and tests/bad-inputs
# (one file per line) and the built-in presets' config.json files; the growing corpus lives in
# out/build/fuzz/corpus. Findings (crash-*, leak-*, timeout-*, oom-*) land in out/build/fuzz/findings:
# add each, once fixed, to tests/bad-inputs/crashes/. The run goes on after a finding (fork mode,
# FUZZ_JOBS parallel workers, default 1), so SECONDS is the real fuzzing time.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
jobs=${FUZZ_JOBS:-1}
build=out/build/fuzz
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ \
      -DSTAGEMEM_FUZZ=ON -DSTAGEMEM_BUILD_APP=OFF -DSTAGEMEM_BUILD_TESTS=OFF >/dev/null
cmake --build "$build" --target stagemem_fuzz_decoders

seeds="$build/seeds"
rm -rf "$seeds"
mkdir -p "$seeds" "$build/corpus" "$build/findings"
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
cp tests/bad-inputs/crashes/* "$seeds/" 2>/dev/null || true
echo "fuzz: $(ls "$seeds" | wc -l) seed inputs; running for ${seconds}s"

log="$build/fuzz.log"
set +e
fuzzer=$(pwd)/$build/tests/fuzz/stagemem_fuzz_decoders
(cd "$build/findings" && "$fuzzer" -max_total_time="$seconds" -max_len=8192 \
   -timeout=10 -rss_limit_mb=4096 -print_final_stats=1 -fork="$jobs" -ignore_crashes=1 \
   -ignore_timeouts=1 -ignore_ooms=1 -artifact_prefix=./ \
   ../corpus ../seeds) >"$log" 2>&1
status=$?
set -e
tail -n 25 "$log"
echo
echo "fuzz summary:"
grep -E '^stat::number_of_executed_units|^stat::average_exec_per_sec|^stat::peak_rss_mb' "$log" || true
grep -E '^#[0-9]+' "$log" | tail -n 1 || true
findings=$(find "$build/findings" -maxdepth 1 -type f \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' -o -name 'oom-*' \) | wc -l)
echo "corpus: $(ls "$build/corpus" | wc -l) inputs; findings: $findings (in $build/findings)"
[[ $status -eq 0 && $findings -eq 0 ]]
