#!/usr/bin/env bash
# Builds the browser app (preset web) and serves it on http://127.0.0.1:${PORT:-8080}/ .
# Installs what is missing on Debian 12 (as root). Ctrl-C stops the server.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
# shellcheck source=../emsdk.env
. ./emsdk.env
cmake --preset web >/dev/null
cmake --build --preset web -j "$(nproc)" --target stagemem_app
exec node scripts/static-server.mjs out/build/web/src/web "${PORT:-8080}"
