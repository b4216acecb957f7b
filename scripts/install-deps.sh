#!/usr/bin/env bash
# Installs everything stagemem needs to build and test, idempotently:
#   - Debian packages (compilers, Emscripten, Catch2, GLFW, Chromium, Xvfb, JSON, fonts)
#   - Dear ImGui sources, pinned to Debian trixie's imgui 1.90.1+ds-1 source package,
#     fetched with `apt-get source` through a private apt configuration (the machine's
#     apt sources are not touched) from the Debian mirror the machine's apt already uses,
#     checksum-verified and cached in third_party/ (ignored)
#   - npm playwright-core, pinned by the committed package-lock.json
# A second run with everything present finishes in about a second.
# Environment: IMGUI_DEST (default third_party/imgui) where the sources go; DEBIAN_MIRROR a
# Debian archive URI to use instead of the machine's own; IMGUI_ONLY=1 fetches only Dear ImGui.
#   scripts/install-deps.sh --print-mirror     # prints the Debian mirror it would use, and exits
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
IMGUI_DEST="${IMGUI_DEST:-third_party/imgui}"

# The Debian archive this machine's apt already uses, so the script works wherever apt works and
# names no host itself. First apt's own view of its sources (both formats, wherever Dir::Etc
# points): the repository whose Release file says Origin "Debian", Label "Debian" (not the
# security archive, not third-party repositories). Before any `apt-get update` there are no
# Release files: then the first URI of a configured source whose suite is a Debian release name.
debian_mirror() {
  local uri
  # shellcheck disable=SC2016  # $(...) is apt's format syntax, not the shell's
  uri=$(apt-get indextargets --format '$(REPO_URI) $(ORIGIN) $(LABEL)' 2>/dev/null |
        awk '$2 == "Debian" && $3 == "Debian" { print $1; exit }')
  if [[ -z $uri ]]; then
    local list parts
    eval "$(apt-config shell list Dir::Etc::sourcelist/f parts Dir::Etc::sourceparts/d)"
    local releases='^(oldoldstable|oldstable|stable|testing|unstable|sid|experimental|buster|bullseye|bookworm|trixie|forky|duke)(-updates|-backports)?$'
    local files=()
    [[ -n ${list:-} && -f $list ]] && files+=("$list")
    if [[ -n ${parts:-} && -d $parts ]]; then
      local nullglob
      nullglob=$(shopt -p nullglob || true)
      shopt -s nullglob
      files+=("${parts%/}"/*.list "${parts%/}"/*.sources)
      eval "$nullglob"
    fi
    ((${#files[@]})) || return 0
    # mawk (Debian's awk) has no ENDFILE: a new file also ends a deb822 stanza.
    uri=$(awk -v releases="$releases" '
      function flush() {
        if (uris != "" && suite_ok && !disabled && found == "") found = uris
        uris = ""; suite_ok = 0; disabled = 0
      }
      FILENAME != current { flush(); current = FILENAME }
      found != "" { exit }
      FILENAME ~ /\.sources$/ {
        if ($0 ~ /^[ \t]*$/) { flush(); next }
        if (tolower($1) == "uris:") uris = $2
        if (tolower($1) == "suites:") for (i = 2; i <= NF; i++) if ($i ~ releases) suite_ok = 1
        if (tolower($1) == "enabled:" && tolower($2) == "no") disabled = 1
        next
      }
      $1 == "deb" || $1 == "deb-src" {
        i = 2
        if ($i ~ /^\[/) { while (i <= NF && $i !~ /\]$/) i++; i++ }
        if ($(i + 1) ~ releases && found == "") found = $i
      }
      END { flush(); if (found != "") print found }
' "${files[@]}" 2>/dev/null)
  fi
  printf '%s' "${uri%/}"
}

if [[ ${1:-} == --print-mirror ]]; then
  mirror=$(debian_mirror)
  [[ -n $mirror ]] && echo "$mirror"
  [[ -n $mirror ]]
  exit
fi

missing=()
[[ ${IMGUI_ONLY:-0} == 1 ]] && APT_PACKAGES=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# Node.js: use the machine's node/npm when present (some images ship a newer Node.js whose
# package conflicts with Debian's npm); otherwise Debian's nodejs + npm.
[[ ${IMGUI_ONLY:-0} == 1 ]] || command -v npm >/dev/null 2>&1 || missing+=(nodejs npm)
if ((${#missing[@]})); then
  echo "install-deps: installing Debian packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if [[ ! -f "$IMGUI_DEST/.verified-$IMGUI_VERSION" ]]; then
  mirror=${DEBIAN_MIRROR:-$(debian_mirror)}
  if [[ -z $mirror ]]; then
    echo "install-deps: no Debian mirror found in this machine's apt sources; set DEBIAN_MIRROR" \
         "to a Debian archive URI, or put Dear ImGui $IMGUI_VERSION's sources in $IMGUI_DEST" >&2
    exit 1
  fi
  echo "install-deps: fetching Dear ImGui $IMGUI_VERSION source from $mirror (trixie)"
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  mkdir -p "$tmp/lists/partial" "$tmp/cache/archives/partial" "$tmp/empty" "$tmp/src"
  echo "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror trixie main" >"$tmp/sources.list"
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

if [[ ${IMGUI_ONLY:-0} != 1 && -f package-lock.json ]]; then
  wanted=$(node -p 'require("./package-lock.json").packages["node_modules/playwright-core"].version')
  have=$(node -p 'try{require("./node_modules/playwright-core/package.json").version}catch(e){""}')
  if [[ "$wanted" != "$have" ]]; then
    echo "install-deps: npm ci"
    npm ci --no-audit --no-fund --loglevel=error
  fi
fi
echo "install-deps: all dependencies present"
