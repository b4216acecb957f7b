#!/usr/bin/env bash
# Checks that scripts/install-deps.sh finds the Debian mirror in apt's own configuration, in
# both source formats, skipping disabled stanzas, third-party and security repositories. Each
# case is a private apt configuration (APT_CONFIG) with empty lists, so the sources files are
# all there is; nothing is fetched. Mirror URIs here are placeholders under the reserved
# .invalid top-level domain.
set -euo pipefail
script="$(cd "$(dirname "$0")/../.." && pwd)/scripts/install-deps.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0

# case NAME EXPECTED: the sources are already in $work/NAME/{sources.list,parts/}.
expect() {
  local name=$1 expected=$2 dir=$work/$1 got
  mkdir -p "$dir/lists/partial" "$dir/parts"
  cat >"$dir/apt.conf" <<CONF
Dir::Etc::sourcelist "$dir/sources.list";
Dir::Etc::sourceparts "$dir/parts";
Dir::State::Lists "$dir/lists";
CONF
  got=$(APT_CONFIG=$dir/apt.conf bash "$script" --print-mirror 2>&1) || true
  if [[ $got == "$expected" ]]; then
    echo "ok: $name -> ${got:-(none)}"
  else
    echo "FAILED: $name: got '${got}', expected '${expected}'"
    failures=$((failures + 1))
  fi
}

mkdir -p "$work/deb822/parts"
cat >"$work/deb822/parts/a-thirdparty.sources" <<'S'
Types: deb
URIs: https://vendor.invalid/node_20.x
Suites: nodistro
Components: main
S
cat >"$work/deb822/parts/debian.sources" <<'S'
Types: deb
# a comment line
URIs: http://disabled.invalid/debian
Suites: bookworm
Enabled: no
Components: main

Types: deb
URIs: http://mirror.invalid/debian/
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://mirror.invalid/debian-security
Suites: bookworm-security
Components: main
S
expect deb822 "http://mirror.invalid/debian"

mkdir -p "$work/oneline/parts"
cat >"$work/oneline/sources.list" <<'S'
# deb http://commented.invalid/debian bookworm main
deb https://vendor.invalid/apt cloud-sdk-bookworm main
deb [arch=amd64 signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://mirror.invalid/debian bookworm main
deb http://mirror.invalid/debian-security bookworm-security main
S
expect oneline "http://mirror.invalid/debian"

# Only the security archive and a vendor: no Debian mirror, so the script says so (exit 1).
mkdir -p "$work/none/parts"
printf 'deb http://mirror.invalid/debian-security bookworm-security main\n' >"$work/none/sources.list"
expect none ""

((failures == 0)) && echo "debian mirror: all cases passed"
exit "$failures"
