#!/usr/bin/env bash
# Installs everything stagemem needs to build and test, idempotently:
#   - Debian packages (compilers, Emscripten, Catch2, GLFW, Chromium, Xvfb, JSON, fonts)
#   - Dear ImGui sources, pinned to Debian trixie's imgui 1.90.1+ds-1 source package,
#     fetched with `apt-get source` through a private apt configuration (the machine's
#     apt sources are not touched), checksum-verified and cached in third_party/ (ignored)
#   - npm playwright-core, pinned by the committed package-lock.json
# A second run with everything present finishes in about a second.
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(
  build-essential cmake ninja-build clang libclang-rt-14-dev
  emscripten catch2 nlohmann-json3-dev
  libglfw3-dev libgl-dev xvfb xauth mesa-utils
  chromium fonts-dejavu-core
  python3 xz-utils debian-archive-keyring
)
IMGUI_VERSION="1.90.1+ds-1"
IMGUI_TARBALL="imgui_1.90.1+ds.orig.tar.xz"
IMGUI_SHA256="ecce377df0f90b292f15dcbd83d438bddc162b2388c881132bde18c787572a1c"
IMGUI_DEST="third_party/imgui"

missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# Node.js: use the machine's node/npm when present (some images ship a newer Node.js whose
# package conflicts with Debian's npm); otherwise Debian's nodejs + npm.
command -v npm >/dev/null 2>&1 || missing+=(nodejs npm)
if ((${#missing[@]})); then
  echo "install-deps: installing Debian packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if [[ ! -f "$IMGUI_DEST/.verified-$IMGUI_VERSION" ]]; then
  echo "install-deps: fetching Dear ImGui $IMGUI_VERSION source"
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  mkdir -p "$tmp/lists/partial" "$tmp/cache/archives/partial" "$tmp/empty" "$tmp/src"
  echo "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian trixie main" >"$tmp/sources.list"
  apt_opts=(-o APT::Sandbox::User=root -o "Dir::Etc::SourceList=$tmp/sources.list" -o "Dir::Etc::SourceParts=$tmp/empty"
            -o "Dir::State::Lists=$tmp/lists" -o "Dir::Cache=$tmp/cache")
  apt-get "${apt_opts[@]}" -qq update
  (cd "$tmp/src" && apt-get "${apt_opts[@]}" -qq source --download-only "imgui=$IMGUI_VERSION" >/dev/null)
  echo "$IMGUI_SHA256  $tmp/src/$IMGUI_TARBALL" | sha256sum -c --quiet -
  rm -rf "$IMGUI_DEST"
  mkdir -p "$IMGUI_DEST"
  tar -xJf "$tmp/src/$IMGUI_TARBALL" -C "$IMGUI_DEST" --strip-components=1
  touch "$IMGUI_DEST/.verified-$IMGUI_VERSION"
fi

if [[ -f package-lock.json ]]; then
  wanted=$(node -p 'require("./package-lock.json").packages["node_modules/playwright-core"].version')
  have=$(node -p 'try{require("./node_modules/playwright-core/package.json").version}catch(e){""}')
  if [[ "$wanted" != "$have" ]]; then
    echo "install-deps: npm ci"
    npm ci --no-audit --no-fund --loglevel=error
  fi
fi
echo "install-deps: all dependencies present"
