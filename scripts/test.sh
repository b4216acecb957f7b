#!/usr/bin/env bash
# Runs every stagemem test from a clean clone on Debian 12 (as root; installs what is missing):
#   1. native build with AddressSanitizer + UndefinedBehaviorSanitizer (preset native-asan):
#      Catch2 core tests, CLI smoke tests, the native GUI smoke run under Xvfb;
#   2. a 60-second libFuzzer smoke of every fuzz target (scripts/fuzz.sh; FUZZ_SMOKE_SECONDS);
#   3. web build (preset web, Debian's Emscripten): the same core tests compiled to wasm32 and
#      run under node, and the browser tests in headless Chromium (playwright-core).
# Artifacts (screenshots) land in out/build/<preset>/artifacts/.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh

jobs=$(nproc)
summary=()
run_suite() {  # preset
  local preset=$1 log
  log=$(mktemp)
  cmake --preset "$preset" >/dev/null
  cmake --build --preset "$preset" -j "$jobs"
  set +e
  ctest --preset "$preset" -j "$jobs" 2>&1 | tee "$log"
  local status=${PIPESTATUS[0]}
  set -e
  summary+=("$preset: $(grep -E 'tests passed, [0-9]+ tests failed out of' "$log" || echo 'no ctest summary')")
  rm -f "$log"
  return "$status"
}

status=0
run_suite native-asan || status=1

# A short libFuzzer run of every target (scripts/fuzz.sh: ASan + UBSan, whole path through
# estimate() and the writers), counted like a suite: a target with a finding is a failed test.
fuzz_log=$(mktemp)
set +e
bash scripts/fuzz.sh "${FUZZ_SMOKE_SECONDS:-60}" 2>&1 | tee "$fuzz_log"
fuzz_status=${PIPESTATUS[0]}
set -e
if [[ $(grep -E '^fuzz summary:' "$fuzz_log") =~ ([0-9]+)\ targets,\ ([0-9]+)\ with\ findings ]] &&
   ((BASH_REMATCH[1] > 0)); then
  targets=${BASH_REMATCH[1]} findings=${BASH_REMATCH[2]}
  summary+=("fuzz smoke: $(((targets - findings) * 100 / targets))% tests passed, $findings tests failed out of $targets")
else
  summary+=("fuzz smoke: no fuzz summary")
fi
rm -f "$fuzz_log"
((fuzz_status == 0)) || status=1
# shellcheck source=../emsdk.env
. ./emsdk.env
run_suite web || status=1

echo
printf '%s\n' "${summary[@]}"
passed=0 failed=0
for line in "${summary[@]}"; do
  if [[ $line =~ ([0-9]+)%\ tests\ passed,\ ([0-9]+)\ tests\ failed\ out\ of\ ([0-9]+) ]]; then
    failed=$((failed + BASH_REMATCH[2]))
    passed=$((passed + BASH_REMATCH[3] - BASH_REMATCH[2]))
  else
    status=1
  fi
done
echo "$passed passed, $failed failed"
exit "$status"
