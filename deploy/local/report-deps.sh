#!/usr/bin/env bash
# What bench's HTML report (-html FILE) needs, installed when missing:
#
#   report-deps.sh assets    checks Apache ECharts' echarts.min.js, committed
#                            in bench/assets/ with its licence, against the
#                            pinned checksum (bench/assets/SHA256SUMS); bench
#                            embeds it (go:embed) and inlines it into every
#                            report, so a report opens offline
#   report-deps.sh browser   Debian's chromium (and a font), which the
#                            report's browser test drives headless
#
# Idempotent and quiet when everything is there. make build and make test
# call it before compiling bench.
set -euo pipefail

REPO=$(cd "$(dirname "$0")/../.." && pwd)

say() { printf 'report-deps: %s\n' "$*"; }
die() { printf 'report-deps: %s\n' "$*" >&2; exit 1; }

apt_updated=0
apt_install() { # packages...
  local missing=()
  for p in "$@"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
  ((${#missing[@]})) || return 0
  command -v apt-get >/dev/null || die "missing ${missing[*]} and no apt-get: install them by hand"
  if ((apt_updated == 0)); then
    say "installing ${missing[*]} (apt-get update first)"
    apt-get update -qq >/dev/null || die "apt-get update failed: cannot install ${missing[*]}"
    apt_updated=1
  fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null ||
    die "apt-get install ${missing[*]} failed"
}

sha256() { sha256sum "$1" | cut -d' ' -f1; }

# assets checks the committed charting script: a build never fetches it
# (no Node, no npm), and a file changed by accident is refused, not embedded.
assets() {
  (cd "$REPO/bench/assets" && sha256sum --quiet -c SHA256SUMS) ||
    die "bench/assets/echarts.min.js does not match bench/assets/SHA256SUMS: restore it with git checkout bench/assets"
}

browser() {
  if ! command -v chromium >/dev/null; then
    apt_install chromium fonts-dejavu-core
  fi
  command -v chromium >/dev/null || die "chromium is not on PATH after installing it"
}

case ${1:-} in
assets) assets ;;
browser) browser ;;
all | '') assets && browser ;;
*) die "usage: $0 [assets|browser|all]" ;;
esac
