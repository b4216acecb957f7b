#!/usr/bin/env bash
# Builds and runs the estimate benchmark natively (preset native-release) and compiled to wasm
# with the web build's flags (preset web, run under node), so both figures come from one command:
#   scripts/bench.sh [ITERATIONS]      # default 2000
# Medians are printed by the benchmark itself; compare versions in the same run (farm-bench).
set -euo pipefail
cd "$(dirname "$0")/.."
iterations=${1:-2000}
cmake --preset native-release >/dev/null
cmake --build --preset native-release --target stagemem_bench >/dev/null
echo "native:"
out/build/native-release/stagemem_bench "$iterations"
# shellcheck source=../emsdk.env
. ./emsdk.env
cmake --preset web >/dev/null
cmake --build --preset web --target stagemem_bench_wasm >/dev/null
echo "wasm (node $(node --version)):"
node --no-experimental-fetch out/build/web/stagemem_bench_wasm.js "$iterations"
