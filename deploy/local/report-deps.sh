#!/usr/bin/env bash
# What bench's HTML report (-html FILE) needs, installed when missing:
#
#   report-deps.sh assets    Apache ECharts' echarts.min.js, pinned, from the
#                            npm registry into bench/assets/ (git-ignored);
#                            bench embeds it (go:embed) and inlines it into
#                            every report, so a report opens offline
#   report-deps.sh browser   Debian's chromium (and a font), which the
#                            report's browser test drives headless
#
# Idempotent and quiet when everything is there. make build and make test
# call it before compiling bench.
set -euo pipefail

# The charting library. go-echarts v2 writes ECharts 5 options; 5.6.0 is the
# last 5.x release. The checksum is of dist/echarts.min.js in its npm tarball.
ECHARTS_VERSION=5.6.0
ECHARTS_SHA256=bf4a223524e40b77c304bec67e1222cf551f14880cf42c69dc046558e11c07b1

REPO=$(cd "$(dirname "$0")/../.." && pwd)
ASSET=$REPO/bench/assets/echarts.min.js

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

assets() {
  if [[ -f $ASSET && $(sha256 "$ASSET") == "$ECHARTS_SHA256" ]]; then
    return 0
  fi
  command -v npm >/dev/null || apt_install npm
  say "fetching echarts@$ECHARTS_VERSION from the npm registry into ${ASSET#"$REPO"/}"
  local tmp tgz
  tmp=$(mktemp -d)
  # npm pack fetches only this package's tarball (checked against the
  # registry's integrity hash), no dependencies, no node_modules.
  tgz=$(cd "$tmp" && npm pack --silent "echarts@$ECHARTS_VERSION") || die "npm pack echarts@$ECHARTS_VERSION failed"
  tar -xzf "$tmp/$tgz" -C "$tmp" package/dist/echarts.min.js || die "$tgz has no dist/echarts.min.js"
  local got
  got=$(sha256 "$tmp/package/dist/echarts.min.js")
  [[ $got == "$ECHARTS_SHA256" ]] || die "echarts.min.js of echarts@$ECHARTS_VERSION has sha256 $got, expected $ECHARTS_SHA256"
  mkdir -p "$(dirname "$ASSET")"
  mv "$tmp/package/dist/echarts.min.js" "$ASSET"
  rm -rf "$tmp"
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
