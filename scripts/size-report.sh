#!/usr/bin/env bash
# Size report of the browser app: what stagemem.wasm is made of (sections, code by origin and by
# object file, the largest functions, data) and, given a second build, what changed:
#   scripts/size-report.sh [--top N] NEW_BUILD [OLD_BUILD]
#   e.g. scripts/size-report.sh out/build/web /tmp/old/out/build/web
# A build is a web build folder (cmake --preset web: out/build/web) or a folder holding
# stagemem.wasm. Names come from the symbol map the web build writes (stagemem.js.symbols,
# emcc --emit-symbol-map), origins from the build's objects through the emsdk's emnm and
# llvm-objdump; gzip sizes are gzip -9's. To compare with an older commit, build it the same way:
#   git worktree add /tmp/old COMMIT && cd /tmp/old && . ./emsdk.env && cmake --preset web \
#     -DCMAKE_EXE_LINKER_FLAGS=--emit-symbol-map && cmake --build --preset web --target stagemem_app
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../emsdk.env
. "$here/../emsdk.env"
llvm_root=$(em-config LLVM_ROOT 2>/dev/null || true)
[[ -n $llvm_root ]] && export PATH="$llvm_root:$PATH"
exec node "$here/size-report.mjs" "$@"
