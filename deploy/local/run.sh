#!/usr/bin/env bash
# Starts the flashsale pipeline natively (ingress, 2 consumer replicas,
# reaper) against the local stack, waits until each is ready, runs the demo
# flash sale and prints where to look. The deployables keep running after it
# returns; `deploy/local/run.sh stop` stops them (by pid file).
#
# Expects the FLASHSALE_* settings of the local stack in the environment
# (make run does `eval "$(deploy/local/stack.sh env --tls)"`: every connection
# over TLS with credentials; run by hand, it reads those itself) and binaries in bin/. The ingress and the demo's tokens share
# the stack's random JWT secret (.stack/jwt-secret).
set -euo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
if [[ -z ${FLASHSALE_JWT_SECRET:-} ]]; then
  eval "$("$REPO/deploy/local/stack.sh" env --tls)"
fi
STATE=${FLASHSALE_STATE_DIR:-$REPO/.stack}/run
BIN=$REPO/bin
mkdir -p "$STATE"
# shellcheck source=deploy/local/pidfile.sh
source "$REPO/deploy/local/pidfile.sh"
alive() { pidfile_alive "$STATE/$1.pid"; } # name

# Short windows so the reaper's work is visible during the demo.
export FLASHSALE_PAYMENT_WINDOW=${FLASHSALE_PAYMENT_WINDOW:-20s}
export FLASHSALE_ORPHAN_GRACE=${FLASHSALE_ORPHAN_GRACE:-60s}
export FLASHSALE_REAP_INTERVAL=${FLASHSALE_REAP_INTERVAL:-1s}
# The demo load comes from one address with many users: per-IP limits off.
export FLASHSALE_IP_RATE_LIMIT=${FLASHSALE_IP_RATE_LIMIT:-0}

INGRESS_ADDR=127.0.0.1:8080
INGRESS_OPS_ADDR=127.0.0.1:9103

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# Prometheus: 9090 unless something else holds it. Installing Debian's
# prometheus package (the stack does, for promtool) starts its own service
# on 9090 on a host with systemd; the demo's then takes the next free port
# instead of failing, and says so.
prom_port() {
  local p=9090
  if alive prometheus && [[ -f $STATE/prometheus.port ]]; then
    cat "$STATE/prometheus.port"
    return
  fi
  while port_open "$p"; do p=$((p + 1)); done
  ((p == 9090)) || echo "prometheus: 127.0.0.1:9090 is taken by a server this script did not start; using 127.0.0.1:$p instead" >&2
  echo "$p" >"$STATE/prometheus.port"
  echo "$p"
}
PROM_ADDR=127.0.0.1:$(prom_port)

start() { # name readyz-url command...
  local name=$1 url=$2; shift 2
  if alive "$name"; then
    echo "$name already running (pid $(pidfile_pid "$STATE/$name.pid"))"
    return
  fi
  setsid nohup "$@" >"$STATE/$name.log" 2>&1 </dev/null &
  pidfile_write "$STATE/$name.pid" $!
  local deadline=$((SECONDS + 60))
  until curl -fsS -o /dev/null "$url" 2>/dev/null; do
    alive "$name" || { tail -n 20 "$STATE/$name.log" >&2; echo "$name exited (log: $STATE/$name.log)" >&2; exit 1; }
    ((SECONDS < deadline)) || { echo "$name not ready after 60s (log: $STATE/$name.log)" >&2; exit 1; }
    sleep 0.3
  done
  echo "$name ready: $url (log: $STATE/$name.log)"
}

stop_all() {
  for name in ingress consumer-1 consumer-2 reaper prometheus alertmanager; do
    if alive "$name"; then
      kill -TERM "$(pidfile_pid "$STATE/$name.pid")" 2>/dev/null || true
      echo "$name stopping"
    fi
    rm -f "$STATE/$name.pid"
  done
}

if [[ ${1:-} == stop ]]; then
  stop_all
  exit 0
fi

start ingress "http://$INGRESS_OPS_ADDR/readyz" env FLASHSALE_HTTP_ADDR=$INGRESS_ADDR FLASHSALE_METRICS_ADDR=$INGRESS_OPS_ADDR "$BIN/ingress"
start consumer-1 "http://127.0.0.1:9101/readyz" env FLASHSALE_METRICS_ADDR=127.0.0.1:9101 "$BIN/consumer"
start consumer-2 "http://127.0.0.1:9111/readyz" env FLASHSALE_METRICS_ADDR=127.0.0.1:9111 "$BIN/consumer"
# The live auditor every 2 s (15 s in production): a demo or bench sale
# lasts tens of seconds, and bench reads its reports
# (flashsale_audit_reported_total) to hold every sale to none.
start reaper "http://127.0.0.1:9102/readyz" env FLASHSALE_METRICS_ADDR=127.0.0.1:9102 FLASHSALE_AUDIT_INTERVAL="${FLASHSALE_AUDIT_INTERVAL:-2s}" "$BIN/reaper"
# Alertmanager on 9193, where deploy/local/prometheus.yml sends the alerts;
# its UI lists what fires. Not its usual 9093: that is the native stack's
# Kafka controller (stack.sh), and the Debian package's own service takes
# 9093 on a host with systemd. Debian's prometheus-alertmanager package
# (the stack installs it) names the binary prometheus-alertmanager. If
# something else holds 9193, Prometheus sends there, and this says so.
if command -v prometheus-alertmanager >/dev/null && ! alive alertmanager && port_open 9193; then
  echo "alertmanager: 127.0.0.1:9193 is taken by a server this script did not start (the package's own service?); Prometheus sends its alerts there" >&2
elif command -v prometheus-alertmanager >/dev/null; then
  start alertmanager "http://127.0.0.1:9193/-/ready" prometheus-alertmanager \
    --config.file="$REPO/deploy/alertmanager/alertmanager.yml" --storage.path="$STATE/alertmanager-data" \
    --web.listen-address=127.0.0.1:9193 --cluster.listen-address=
fi
if command -v prometheus >/dev/null && [[ -f $REPO/deploy/local/prometheus.yml ]]; then
  start prometheus "http://$PROM_ADDR/-/ready" prometheus --config.file="$REPO/deploy/local/prometheus.yml" \
    --storage.tsdb.path="$STATE/prometheus-data" --web.listen-address=$PROM_ADDR
fi

# The demo's HTML report: charts of the sale's time line, one file that
# opens offline (bench inlines the charting script).
REPORT=${FLASHSALE_HTML:-$STATE/report.html}
if [[ -x $BIN/bench ]]; then
  echo
  echo "== demo flash sale =="
  rc=0
  rm -f "$REPORT"
  "$BIN/bench" -target "http://$INGRESS_ADDR" -html "$REPORT" ${FLASHSALE_DEMO_ARGS:-} || rc=$?
  if [[ -s $REPORT ]]; then
    echo
    echo "report: $REPORT   (open it in a browser: file://$REPORT)"
  fi
  ((rc == 0)) || exit "$rc"
fi

cat <<EOF

flashsale is running:
  ingress     http://$INGRESS_ADDR   (API, /openapi.yaml)  http://$INGRESS_OPS_ADDR/metrics
  console     http://$INGRESS_ADDR/admin/console   (token: eval "\$(deploy/local/stack.sh env)"; bin/flashsalectl token --admin)
  consumers   http://127.0.0.1:9101/metrics  http://127.0.0.1:9111/metrics
  reaper      http://127.0.0.1:9102/metrics
  prometheus  http://$PROM_ADDR     (if installed)
  alerts      http://127.0.0.1:9193  (Alertmanager, if installed)
  logs        $STATE/*.log
Stop the pipeline with: deploy/local/run.sh stop   (the stack: make stack-down)
EOF
