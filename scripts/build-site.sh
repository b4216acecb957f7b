#!/usr/bin/env bash
# Writes stagemem's browser app as a self-contained static folder for a team to host:
#   scripts/build-site.sh [OUT_DIR]        (default out/site)
# OUT_DIR gets index.html, stagemem.js, stagemem.wasm, a gzip -9 copy of each (.gz, for servers
# that serve pre-compressed files, e.g. nginx gzip_static) and VERSION. Every path in the page is
# relative, so the folder works from any static server and under any sub-path
# (https://wiki.example/tools/stagemem/). The status bar shows the version and the commit.
# Builds in out/build/site (preset web, the commit passed in); STAGEMEM_SITE_BUILD_DIR=DIR copies
# an existing web build from DIR instead (the tests do that).
# Installs what is missing on Debian 12 (as root), like serve.sh and test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-out/site}
files=(index.html stagemem.js stagemem.wasm)

commit=$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
if [[ $commit != unknown ]] && ! git diff --quiet HEAD -- 2>/dev/null; then commit+="-modified"; fi
version=$(sed -n 's/^project(stagemem VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)

if [[ -n ${STAGEMEM_SITE_BUILD_DIR:-} ]]; then
  app_dir=$STAGEMEM_SITE_BUILD_DIR/src/web
else
  bash scripts/install-deps.sh
  # shellcheck source=../emsdk.env
  . ./emsdk.env
  cmake --preset web -B out/build/site -DSTAGEMEM_COMMIT="$commit" >/dev/null
  cmake --build out/build/site -j "$(nproc)" --target stagemem_app
  app_dir=out/build/site/src/web
fi

mkdir -p "$out"
for f in "${files[@]}"; do
  [[ -f $app_dir/$f ]] || { echo "error: $app_dir/$f is missing (build the web preset)" >&2; exit 1; }
  cp "$app_dir/$f" "$out/$f"
  # -n: no name or time stamp inside, so the same build gives the same .gz bytes.
  gzip -9 -n -c "$out/$f" > "$out/$f.gz"
done
printf 'stagemem %s\ncommit %s\n' "${version:-unknown}" "$commit" > "$out/VERSION"
echo "stagemem site in $out:"
(cd "$out" && ls -l "${files[@]}" "${files[@]/%/.gz}" VERSION)
