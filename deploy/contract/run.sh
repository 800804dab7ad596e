#!/usr/bin/env bash
# The API contract, checked by a tool nobody here wrote: Schemathesis reads the
# description the ingress serves (/openapi.yaml) and runs all of its checks,
# in every phase (examples, coverage, fuzzing, and the stateful chain the
# description's links make: create item -> order -> poll -> pay), against a
# real ingress, consumer and reaper (whose rebalancer moves stock between the
# buckets of the bucketed items the fuzzer creates, as in production: without
# it a buyer whose bucket is empty is answered 503 stock_moving, which the
# server-error check counts); then every item the run saved is audited
# (invariants I1-I7). Any failure fails `make test`.
#
# Isolation, so the shared stack's other tests never notice: a Redis process
# of its own (item ids are the fuzzer's to pick, boundary values included),
# a database of its own (flashsale_contract, recreated every run), Kafka
# topics and a consumer group of the run's own, its own ports. The ingress it
# starts keeps both rate limits on but high (FLASHSALE_USER_RATE_LIMIT,
# FLASHSALE_IP_RATE_LIMIT below), so the fuzzer meets the 429 path without
# being throttled into testing nothing else. Its status polls wait at most
# 2 s (FLASHSALE_STATUS_WAIT_MAX), well inside Schemathesis' 10 s request
# timeout whatever ?wait= the fuzzer sends.
#
# Expects the stack's FLASHSALE_* settings (make test passes them; run by
# hand, it reads them itself). FLASHSALE_CONTRACT_TIME is the budget of the
# Schemathesis run in seconds (default 60). Schemathesis comes from PyPI,
# pinned in requirements.txt, into a virtualenv in the cache directory.
set -euo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
cd "$REPO"
if [[ -z ${FLASHSALE_JWT_SECRET:-} ]]; then
  eval "$("$REPO/deploy/local/stack.sh" env)"
fi
HERE=$REPO/deploy/contract
STATE=${FLASHSALE_STATE_DIR:-$REPO/.stack}/contract
CACHE=${FLASHSALE_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/flashsale}
BUDGET=${FLASHSALE_CONTRACT_TIME:-60}
started=$SECONDS

say() { echo "contract: $*"; }
die() { echo "contract: $*" >&2; exit 1; }

# ------------------------------------------------------------ schemathesis
# python3 >= 3.11 with venv (schemathesis 4 needs 3.11); Debian's otherwise.
find_python() {
  local p
  for p in python3.13 python3.12 python3.11 python3; do
    if command -v "$p" >/dev/null && "$p" -c 'import sys, venv, ensurepip; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
      command -v "$p"
      return
    fi
  done
  return 1
}
PY=$(find_python) || {
  [[ $(id -u) == 0 ]] || die "need python3 >= 3.11 with venv (apt-get install python3-venv)"
  say "installing python3-venv from Debian's packages"
  apt-get install -y -q python3 python3-venv >/dev/null || { apt-get update -q >/dev/null && apt-get install -y -q python3 python3-venv >/dev/null; }
  PY=$(find_python) || die "no python3 >= 3.11 with venv after installing python3-venv"
}
VENV=$CACHE/venv-schemathesis-$(sha256sum "$HERE/requirements.txt" | cut -c1-12)
# .installed marks a finished install: an interrupted one is started over.
if [[ ! -f $VENV/.installed ]]; then
  say "installing Schemathesis into $VENV (pinned: deploy/contract/requirements.txt)"
  rm -rf "$VENV"
  "$PY" -m venv "$VENV"
  "$VENV/bin/pip" install -q --disable-pip-version-check --no-input -r "$HERE/requirements.txt"
  touch "$VENV/.installed"
fi
"$VENV/bin/st" --version >/dev/null || die "Schemathesis in $VENV does not run"

# ------------------------------------------------------------ processes
rm -rf "$STATE"
mkdir -p "$STATE/bin" "$STATE/redis"
pids=()
cleanup() {
  local pid
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
}
trap cleanup EXIT

free_port() { "$VENV/bin/python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
wait_ready() { # name url pid
  local deadline=$((SECONDS + 60))
  until curl -fsS -o /dev/null "$2" 2>/dev/null; do
    kill -0 "$3" 2>/dev/null || { tail -n 20 "$STATE/$1.log" >&2; die "$1 exited (log: $STATE/$1.log)"; }
    ((SECONDS < deadline)) || die "$1 not ready after 60s (log: $STATE/$1.log)"
    sleep 0.2
  done
}

go build -o "$STATE/bin/" ./ingress ./consumer ./reaper ./setup ./internal/fuzzprep

REDIS_PORT=$(free_port)
redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save "" --appendonly no --dir "$STATE/redis" >"$STATE/redis.log" 2>&1 &
pids+=($!)
until redis-cli -p "$REDIS_PORT" ping >/dev/null 2>&1; do
  kill -0 "${pids[-1]}" 2>/dev/null || die "redis-server exited (log: $STATE/redis.log)"
  sleep 0.1
done

run_id=$(date +%s)-$$
export FLASHSALE_REDIS_ADDR=127.0.0.1:$REDIS_PORT
export FLASHSALE_MYSQL_DSN
FLASHSALE_MYSQL_DSN=$("$STATE/bin/fuzzprep" database flashsale_contract)
export FLASHSALE_ORDERS_TOPIC=flashsale.contract.$run_id.orders
export FLASHSALE_DLQ_TOPIC=flashsale.contract.$run_id.dlq
export FLASHSALE_CONSUMER_GROUP=flashsale-contract-$run_id
export FLASHSALE_TOPIC_PARTITIONS=2
export FLASHSALE_LOG_LEVEL=${FLASHSALE_LOG_LEVEL:-warn}
# Tokens are minted here with the stack's HS256 secret, not by an identity provider.
unset FLASHSALE_JWT_JWKS_URL
"$STATE/bin/setup" >"$STATE/setup.log" 2>&1 || { cat "$STATE/setup.log" >&2; die "setup failed"; }

CONSUMER_OPS=127.0.0.1:$(free_port)
FLASHSALE_METRICS_ADDR=$CONSUMER_OPS "$STATE/bin/consumer" >"$STATE/consumer.log" 2>&1 &
pids+=($!)
wait_ready consumer "http://$CONSUMER_OPS/readyz" "${pids[-1]}"

REAPER_OPS=127.0.0.1:$(free_port)
FLASHSALE_METRICS_ADDR=$REAPER_OPS "$STATE/bin/reaper" >"$STATE/reaper.log" 2>&1 &
pids+=($!)
wait_ready reaper "http://$REAPER_OPS/readyz" "${pids[-1]}"

API=127.0.0.1:$(free_port)
INGRESS_OPS=127.0.0.1:$(free_port)
# The default bucket wait (1 s): the fuzzer draws extreme orders (qty 291 of
# an item of 1,808 units in 55 buckets), which the rebalancer gathers from 9
# donors at once, woken by the waiting buyer (faults/bucket_latency_test.go
# measures such a gather at about 70 ms).
FLASHSALE_HTTP_ADDR=$API FLASHSALE_METRICS_ADDR=$INGRESS_OPS \
  FLASHSALE_USER_RATE_LIMIT=50 FLASHSALE_IP_RATE_LIMIT=2000 FLASHSALE_STATUS_WAIT_MAX=2s \
  "$STATE/bin/ingress" >"$STATE/ingress.log" 2>&1 &
pids+=($!)
wait_ready ingress "http://$INGRESS_OPS/readyz" "${pids[-1]}"

# ------------------------------------------------------------ identities
token() { "$STATE/bin/fuzzprep" token "$@"; }
CONTRACT_ADMIN_TOKEN=$(token -sub 1 -admin)
export CONTRACT_ADMIN_TOKEN
cat >"$STATE/auth.json" <<EOF
{"auth": [
  {"name": "buyer", "fixedHeaders": [{"name": "Authorization", "value": "Bearer $(token -sub 1001)"}]},
  {"name": "admin", "fixedHeaders": [{"name": "Authorization", "value": "Bearer $CONTRACT_ADMIN_TOKEN"}]},
  {"name": "buyer2", "fixedHeaders": [{"name": "Authorization", "value": "Bearer $(token -sub 1002)"}]}
]}
EOF

# ------------------------------------------------------------ the run
export FLASHSALE_CONTRACT_DIR=$HERE FLASHSALE_CONTRACT_STATE=$STATE FLASHSALE_CONTRACT_ITEMS=$STATE/items
say "Schemathesis against the ingress on $API for ${BUDGET}s (setup took $((SECONDS - started))s)"
st_started=$SECONDS
rc=0
(cd "$STATE" && "$VENV/bin/st" --config-file "$HERE/schemathesis.toml" --no-color run "http://$API/openapi.yaml" \
  --url "http://$API" --checks all --phases examples,coverage,fuzzing,stateful --max-time "$BUDGET") ||
  rc=$?
st_took=$((SECONDS - st_started))
if ((rc != 0)); then
  # CI keeps only what is printed: the services' own warnings say why a
  # request failed (a 503's cause is logged, not answered).
  for svc in ingress consumer reaper; do
    if grep -q '"level":"\(WARN\|ERROR\)"' "$STATE/$svc.log"; then
      say "the last warnings and errors of the $svc:"
      grep '"level":"\(WARN\|ERROR\)"' "$STATE/$svc.log" | tail -n 20 >&2
    fi
  done
  say "Schemathesis failed (exit $rc); JUnit report in $STATE/report, logs in $STATE/*.log"
  exit "$rc"
fi
"$VENV/bin/python" "$HERE/audit.py" "http://$API" "$STATE/items" || die "audit failed (logs: $STATE/*.log)"
say "passed: Schemathesis ${st_took}s, $((SECONDS - started))s in all"
