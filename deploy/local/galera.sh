# shellcheck shell=bash
# The local stack's Galera mode, sourced by stack.sh for CMD --galera: a
# MySQL that survives its primary. Three MariaDB Galera nodes (galera-4,
# synchronous, every node a full copy) as real processes on ports and data
# directories of their own, and one HAProxy in front of them in TCP mode that
# sends every connection to ONE node, the writer.
#
# Why one writer: Galera certifies a transaction at commit against every
# other node's concurrent ones, and the loser gets a deadlock error
# (wsrep_local_cert_failures, wsrep_local_bf_aborts). A flash sale writes one
# hot row per item (items.stock or its item_buckets rows) from every
# consumer, so writes spread over the nodes would conflict on every batch;
# through one node they queue on the row lock instead, as on a single
# MySQL. faults/mysql_failover_test.go measures both.
#
#   stack.sh up|down|status|env --galera
#   stack.sh start|stop|kill --galera NODE     node-1..3, haproxy
#   stack.sh where --galera writer             the node HAProxy writes to
#
# Ports (fixed, like the cluster mode's): clients 23306-23308, HAProxy (the
# writer) 23300, group communication 24567-24569, IST 24577-24579, SST
# 24587-24589. State in $STATE/galera/: node-N/ (data), node-N.log/.pid,
# haproxy.cfg/.log/.pid.
#
# Bootstrap is idempotent. With no node running, a fresh machine installs
# node-1's data directory and bootstraps a new cluster from it (the others
# join it by SST); a stopped cluster is bootstrapped again from the node
# Galera marked safe_to_bootstrap (the last to leave), or, after a crash of
# all three, from the node with the highest recovered seqno. With a node
# running, the missing ones join it: a node that was SIGKILLed finds its
# position in InnoDB and rejoins by IST (the writesets it missed, from a
# survivor's gcache) when Galera accepts that position; killed under load it
# was sent a full rsync SST (about 4 s here) and then IST.
# SST is rsync (Debian's rsync package; mariabackup would need
# mariadb-backup and an SST user).
#
# HAProxy: node-1 is the writer whenever HAProxy counts it up, node-2 (the
# first backup) while it is not; node-3 only sees reads of the tests. A
# node is up for HAProxy when it answers as Synced (wsrep_local_state 4,
# wsrep_ready ON): an external check (galera-check.sh) each second, down
# after 3 failures (checks slower than a second under load are killed and
# count as failures: a quicker fall made the writer flap), up after 2.
# Sessions on a node marked down are shut. When node-1 is up again, the
# sessions on the backup are shut too (on-marked-up
# shutdown-backup-sessions), so writes go back to one node at once instead
# of two taking writes until the pooled connections age out. A stick table
# (no fail-back) was tried first: under concurrent connects HAProxy still
# sent some to node-1 while the table named the backup, and the one-writer
# hot-row run met 1249 conflicts in 3 s.

GALERA_NODES=(1 2 3)
GALERA_PROXY_PORT=23300
GALERA_CHECK_USER=flashsale_check
GALERA_PROVIDER=/usr/lib/galera/libgalera_smm.so
# The nodes run as mysql when the stack runs as root: rsync's SST daemon,
# started by root, would write the joiner's files as nobody and be refused
# by a root-owned data directory ("mkdir ... Permission denied").
GALERA_USER=$([[ $(id -u) == 0 ]] && echo mysql || id -un)

# Where the nodes keep their state. Nodes that run as the invoking user keep
# it in $STATE/galera. Nodes that run as mysql must reach it, and a checkout
# in a private directory (a root user's home, mode 0700; a `mktemp -d`) is
# not reachable by mysql: mariadb-install-db failed there with "Permission
# denied" on the node's own data directory. So their state lives in
# /var/lib/flashsale/galera-<hash of $STATE> (one per checkout), and
# $STATE/galera is a link to it for this script's own pid files and for
# whoever reads the logs. A $STATE/galera directory that mysql can reach
# (the layout before this) is kept as it is.
galera_user_reaches() { # dir
  id "$GALERA_USER" >/dev/null 2>&1 && runuser -u "$GALERA_USER" -- test -x "$1" -a -w "$1" 2>/dev/null
}
galera_state_dir() {
  local link=$STATE/galera sum
  if [[ $GALERA_USER == "$(id -un)" ]] || { [[ -d $link && ! -L $link ]] && galera_user_reaches "$link"; }; then
    echo "$link"
    return
  fi
  sum=$(printf '%s' "$STATE" | sha256sum)
  echo "/var/lib/flashsale/galera-${sum:0:12}"
}
GSTATE=$(galera_state_dir)
# A node that stopped answering is suspected after 3 s and evicted from the
# view after 5 s (Galera's defaults: 5 s and 15 s). Until it is evicted the
# survivors cannot commit: the writes the failover test times.
GALERA_EVS="evs.keepalive_period=PT0.5S;evs.inactive_check_period=PT0.5S;evs.suspect_timeout=PT3S;evs.inactive_timeout=PT5S;evs.install_timeout=PT5S"

galera_port() { echo $((23305 + $1)); }       # node-1: 23306
galera_gcomm_port() { echo $((24566 + $1)); } # node-1: 24567
galera_ist_port() { echo $((24576 + $1)); }   # node-1: 24577
galera_sst_port() { echo $((24586 + $1)); }   # node-1: 24587
galera_names() { local n; for n in "${GALERA_NODES[@]}"; do echo "node-$n"; done; echo haproxy; }

galera_root() { local n=$1; shift; mariadb --no-defaults -uroot --socket="$GSTATE/node-$n.sock" --connect-timeout=2 "$@"; } # N args...
galera_status_var() {                                                                                     # N variable
  timeout 5 mariadb --no-defaults -uroot --socket="$GSTATE/node-$1.sock" --connect-timeout=2 -N -B \
    -e "SHOW GLOBAL STATUS LIKE '$2'" 2>/dev/null | awk '{print $2}'
}
galera_synced() { [[ $(galera_status_var "$1" wsrep_local_state) == 4 ]]; } # N
galera_nodes_csv() {
  local n out=()
  for n in "${GALERA_NODES[@]}"; do out+=("127.0.0.1:$(galera_port "$n")"); done
  (IFS=,; echo "${out[*]}")
}

galera_install() {
  local pkgs=()
  command -v mariadbd >/dev/null || pkgs+=(mariadb-server mariadb-client)
  [[ -f $GALERA_PROVIDER ]] || pkgs+=(galera-4)
  command -v rsync >/dev/null || pkgs+=(rsync)
  command -v lsof >/dev/null || pkgs+=(lsof) # wsrep_sst_rsync waits for its rsync daemon with it
  command -v haproxy >/dev/null || pkgs+=(haproxy)
  ((${#pkgs[@]} == 0)) || apt_install "${pkgs[@]}"
}

# grastate_field N KEY: a field of node N's grastate.dat (seqno, safe_to_bootstrap, uuid).
grastate_field() { awk -v k="$2:" '$1 == k {print $2}' "$GSTATE/node-$1/grastate.dat" 2>/dev/null; }

# galera_recover N: the node's last committed position (uuid:seqno) from
# InnoDB, by mariadbd --wsrep-recover (it starts InnoDB, prints, exits).
galera_recover() {
  local n=$1 log=$GSTATE/node-$1.recover.log
  mariadbd --no-defaults --user="$GALERA_USER" --datadir="$GSTATE/node-$n" --wsrep-on=ON --wsrep-provider="$GALERA_PROVIDER" \
    --binlog-format=ROW --innodb-buffer-pool-size=64M --wsrep-recover --log-error="$log" \
    --socket="$GSTATE/node-$n.recover.sock" --skip-networking >/dev/null 2>&1 || true
  sed -n 's/.*WSREP: Recovered position: *\([0-9a-f-]*:-\{0,1\}[0-9]*\).*/\1/p' "$log" | tail -n1
}

# galera_launch N [mariadbd-args...]: start node N in the background.
galera_launch() {
  local n=$1 dir=$GSTATE/node-$1 peers=() m
  shift
  for m in "${GALERA_NODES[@]}"; do peers+=("127.0.0.1:$(galera_gcomm_port "$m")"); done
  : >"$GSTATE/node-$n.log"
  chown -R "$GALERA_USER" "$dir" "$GSTATE/node-$n.log"
  setsid nohup mariadbd --no-defaults --user="$GALERA_USER" --datadir="$dir" --socket="$GSTATE/node-$n.sock" \
    --port="$(galera_port "$n")" --bind-address=127.0.0.1 --pid-file="$GSTATE/node-$n.mysqld.pid" \
    --log-error="$GSTATE/node-$n.log" --character-set-server=utf8mb4 --collation-server=utf8mb4_bin \
    --default-time-zone=+00:00 --max-connections=500 --skip-name-resolve \
    --innodb-buffer-pool-size=256M --innodb-log-file-size=64M --innodb-flush-log-at-trx-commit=1 \
    --binlog-format=ROW --innodb-autoinc-lock-mode=2 --default-storage-engine=InnoDB \
    --wsrep-on=ON --wsrep-provider="$GALERA_PROVIDER" --wsrep-cluster-name=flashsale \
    --wsrep-cluster-address="gcomm://$(IFS=,; echo "${peers[*]}")" --wsrep-node-name="node-$n" \
    --wsrep-node-address="127.0.0.1:$(galera_gcomm_port "$n")" \
    --wsrep-node-incoming-address="127.0.0.1:$(galera_port "$n")" \
    --wsrep-provider-options="gmcast.listen_addr=tcp://127.0.0.1:$(galera_gcomm_port "$n");ist.recv_addr=127.0.0.1:$(galera_ist_port "$n");gcache.size=256M;$GALERA_EVS" \
    --wsrep-sst-method=rsync --wsrep-sst-receive-address="127.0.0.1:$(galera_sst_port "$n")" \
    --wsrep-slave-threads=2 --wsrep-sync-wait=1 \
    "$@" >/dev/null 2>&1 </dev/null &
  pidfile_write "$GSTATE/node-$n.pid" $!
}

# galera_start_node N [--bootstrap]: node N, joining the running ones, or
# bootstrapping a new primary component from its data.
galera_start_node() {
  local n=$1 how=${2:-join} args=()
  if pid_alive "galera/node-$n"; then say "node-$n already running 127.0.0.1:$(galera_port "$n"), started by this stack"; return 1; fi
  port_open "$(galera_port "$n")" && die "node-$n: 127.0.0.1:$(galera_port "$n") is taken by a server this stack did not start"
  mkdir -p "$GSTATE/node-$n"
  if [[ $how == --bootstrap ]]; then
    args+=(--wsrep-new-cluster)
    [[ -f $GSTATE/node-$n/grastate.dat ]] && sed -i 's/^safe_to_bootstrap: 0/safe_to_bootstrap: 1/' "$GSTATE/node-$n/grastate.dat"
  fi
  # A node that crashed has no position in grastate.dat (seqno -1);
  # MariaDB 10.11 reads it from InnoDB at start ("Recovered position from
  # storage") and asks for IST from there, not a full SST.
  galera_launch "$n" "${args[@]}"
}

galera_wait_synced() { # N...
  local n
  for n in "$@"; do wait_for "galera/node-$n" galera_synced "$n"; done
}

# galera_users: the single-node stack's users and grants, plus the health
# check's user (no password, no privilege: it only reads SHOW STATUS). Run
# on one node; Galera replicates account statements to the others.
galera_users() {
  { mysql_app_grants; cat <<EOF; } | galera_root "$1"
CREATE USER IF NOT EXISTS '$GALERA_CHECK_USER'@'127.0.0.1';
EOF
}

# galera_start_nodes: bring every node up (see the bootstrap rules above).
galera_start_nodes() {
  local n running="" boot="" best=-2 seq pos started=()
  for n in "${GALERA_NODES[@]}"; do pid_alive "galera/node-$n" && running=$n; done
  if [[ -z $running ]]; then
    if [[ ! -d $GSTATE/node-1/mysql ]]; then
      say "galera: no data yet; installing node-1 and bootstrapping a new cluster from it"
      rm -rf "$GSTATE/node-1" && mkdir -p "$GSTATE/node-1"
      mariadb-install-db --no-defaults --user="$GALERA_USER" --datadir="$GSTATE/node-1" --auth-root-authentication-method=socket \
        --skip-test-db >"$GSTATE/node-1.install.log" 2>&1 || die "mariadb-install-db failed: $GSTATE/node-1.install.log"
      boot=1
    else
      for n in "${GALERA_NODES[@]}"; do [[ $(grastate_field "$n" safe_to_bootstrap) == 1 ]] && boot=$n && break; done
      if [[ -z $boot ]]; then
        # Every node crashed: the one that committed most goes first.
        for n in "${GALERA_NODES[@]}"; do
          [[ -d $GSTATE/node-$n/mysql ]] || continue
          seq=$(grastate_field "$n" seqno)
          if [[ $seq == -1 || -z $seq ]]; then pos=$(galera_recover "$n") && seq=${pos##*:}; fi
          [[ $seq =~ ^-?[0-9]+$ ]] || seq=-1
          ((seq > best)) && best=$seq boot=$n
        done
        [[ -n $boot ]] || die "galera: no node has data to bootstrap from; delete $GSTATE and run up --galera again"
        say "galera: no node safe to bootstrap (all crashed); bootstrapping node-$boot, highest seqno $best"
      fi
    fi
    galera_start_node "$boot" --bootstrap
    galera_wait_synced "$boot"
    say "galera: node-$boot bootstrapped a new primary component"
    started+=("$boot")
    running=$boot
  fi
  galera_users "$running" || die "galera: could not create users on node-$running"
  for n in "${GALERA_NODES[@]}"; do
    if galera_start_node "$n" 2>/dev/null; then started+=("$n"); fi
  done
  galera_wait_synced "${started[@]}"
  return 0
}

galera_haproxy_cfg() {
  local n
  cat <<EOF
# written by deploy/local/stack.sh up --galera; see galera.sh
global
    log stderr format short local0 notice
    maxconn 4000
    insecure-fork-wanted
    external-check
defaults
    mode tcp
    log global
    option dontlognull
    retries 3
    option redispatch
    timeout connect 1s
    timeout client 30m
    timeout server 30m
    timeout check 2s
frontend mysql_writer
    bind 127.0.0.1:$GALERA_PROXY_PORT
    default_backend galera
backend galera
    # node-1 whenever it is up, else the first backup that is (see the header)
    option external-check
    external-check path "/usr/bin:/bin:/usr/sbin:/sbin"
    external-check command $GSTATE/galera-check.sh
    default-server inter 1s fall 3 rise 2 on-marked-down shutdown-sessions
EOF
  for n in "${GALERA_NODES[@]}"; do
    printf '    server node-%s 127.0.0.1:%s check %s\n' "$n" "$(galera_port "$n")" \
      "$([[ $n == 1 ]] && echo on-marked-up shutdown-backup-sessions || echo backup)"
  done
}

galera_check_script() {
  cat <<EOF
#!/bin/sh
# HAProxy's external check of a Galera node (args: proxy addr, proxy port,
# server addr, server port): up when it is Synced and ready for queries.
out=\$(timeout 2 mariadb --no-defaults --connect-timeout=1 -h"\$3" -P"\$4" -u$GALERA_CHECK_USER -N -B \\
  -e "SHOW GLOBAL STATUS WHERE Variable_name IN ('wsrep_local_state', 'wsrep_ready')" 2>/dev/null) || exit 1
# Read whole by awk, never a pipe into grep -q (deploy/local/lint-scripts.sh).
awk '\$1 == "wsrep_local_state" { s = \$2 } \$1 == "wsrep_ready" { r = \$2 } END { exit !(s == "4" && r == "ON") }' <<OUT
\$out
OUT
EOF
}

galera_writer() { # the node the proxy sends connections to
  timeout 5 mariadb --no-defaults -h127.0.0.1 -P"$GALERA_PROXY_PORT" -u"$MYSQL_USER" -p"$MYSQL_PASS" \
    --connect-timeout=2 -N -B -e "SELECT @@wsrep_node_name" 2>/dev/null
}

galera_start_haproxy() {
  if pid_alive galera/haproxy; then say "haproxy already running 127.0.0.1:$GALERA_PROXY_PORT, started by this stack"; return; fi
  port_open "$GALERA_PROXY_PORT" && die "haproxy: 127.0.0.1:$GALERA_PROXY_PORT is taken by a server this stack did not start"
  galera_check_script >"$GSTATE/galera-check.sh" && chmod 755 "$GSTATE/galera-check.sh"
  galera_haproxy_cfg >"$GSTATE/haproxy.cfg"
  haproxy -c -f "$GSTATE/haproxy.cfg" >"$GSTATE/haproxy.log" 2>&1 || die "haproxy refused its configuration: $GSTATE/haproxy.log"
  setsid nohup haproxy -db -f "$GSTATE/haproxy.cfg" >>"$GSTATE/haproxy.log" 2>&1 </dev/null &
  pidfile_write "$GSTATE/haproxy.pid" $!
  wait_for galera/haproxy galera_writer
}

galera_status() {
  local n pid
  for n in "${GALERA_NODES[@]}"; do
    if ! pid_alive "galera/node-$n"; then say "node-$n not running"; continue; fi
    pid=$(pidfile_pid "$GSTATE/node-$n.pid")
    say "node-$n running (pid $pid, 127.0.0.1:$(galera_port "$n"), $(galera_status_var "$n" wsrep_local_state_comment)," \
      "cluster size $(galera_status_var "$n" wsrep_cluster_size), $(galera_status_var "$n" wsrep_cluster_status)," \
      "cert failures $(galera_status_var "$n" wsrep_local_cert_failures), bf aborts $(galera_status_var "$n" wsrep_local_bf_aborts))"
  done
  if pid_alive galera/haproxy; then
    say "haproxy running (pid $(pidfile_pid "$GSTATE/haproxy.pid"), 127.0.0.1:$GALERA_PROXY_PORT), writer $(galera_writer || echo none)"
  else
    say "haproxy not running"
  fi
}

galera_node_cmd() { # cmd name
  local cmd=$1 name=$2
  node_known "$name" galera_names
  case $cmd in
  start)
    if [[ $name == haproxy ]]; then galera_start_haproxy; return; fi
    local t0
    t0=$(now)
    pid_alive "galera/$name" && { say "$name already running, started by this stack"; return; }
    local running=""
    for n in "${GALERA_NODES[@]}"; do pid_alive "galera/node-$n" && running=$n; done
    [[ -n $running ]] || die "no Galera node is running: stack.sh up --galera bootstraps the cluster"
    galera_start_node "${name#node-}" || true
    galera_wait_synced "${name#node-}"
    say "$name joined and synced in $(elapsed "$t0") ($(grep -Eo 'IST received[^,]*|State transfer required|SST .*complete' "$GSTATE/$name.log" | tail -n1))"
    ;;
  stop) stop_svc "galera/$name" ;;
  kill) kill_svc "galera/$name" ;;
  esac
}

# galera_prepare_state: the state directory (and its link) exist, owned by
# the user the nodes run as. Only the verbs that run servers make it: a
# lookup (node, env, where) writes nothing.
galera_prepare_state() {
  mkdir -p "$GSTATE"
  if [[ $GSTATE != "$STATE/galera" ]]; then
    mkdir -p "$STATE"
    # A $STATE/galera that mysql cannot reach never held a working node:
    # it is replaced by the link.
    [[ -L $STATE/galera || ! -e $STATE/galera ]] || rm -rf "$STATE/galera"
    ln -sfn "$GSTATE" "$STATE/galera"
    chmod 755 /var/lib/flashsale
  fi
  # the nodes' sockets, pid files and logs are written here by GALERA_USER
  [[ $(stat -c %U "$GSTATE") == "$GALERA_USER" ]] || chown "$GALERA_USER" "$GSTATE"
}

galera_main() {
  local cmd=${1:-up} t0 n
  case $cmd in
  up)
    t0=$(now)
    galera_install
    galera_prepare_state
    galera_start_nodes
    galera_start_haproxy
    say "galera up in $(elapsed "$t0"): nodes $(galera_nodes_csv), writer through haproxy 127.0.0.1:$GALERA_PROXY_PORT ($(galera_writer))"
    ;;
  down)
    stop_svc galera/haproxy
    # One at a time: the last to leave is marked safe_to_bootstrap.
    for n in "${GALERA_NODES[@]}"; do stop_svc "galera/node-$n"; done
    ;;
  status) galera_status ;;
  env)
    env_plain | grep -v '^export FLASHSALE_MYSQL_DSN='
    cat <<ENV
export FLASHSALE_MYSQL_DSN='$MYSQL_USER:$MYSQL_PASS@tcp(127.0.0.1:$GALERA_PROXY_PORT)/$MYSQL_DB'
# the nodes themselves, for the tests that kill and inspect them (no deployable reads it)
export FLASHSALE_GALERA_NODES='$(galera_nodes_csv)'
ENV
    ;;
  start | stop | kill) galera_prepare_state && galera_node_cmd "$cmd" "${2:?node: $(galera_names | tr '\n' ' ')}" ;;
  state) galera_prepare_state && echo "$GSTATE" ;;
  node) node_known "${2:?node: $(galera_names | tr '\n' ' ')}" galera_names && say "$2 is a node of the Galera mode" ;;
  where)
    [[ ${2:-} == writer ]] || die "usage: stack.sh where --galera writer"
    galera_writer || die "no answer through haproxy 127.0.0.1:$GALERA_PROXY_PORT"
    ;;
  *) die "usage: stack.sh up|down|status|env|start NODE|stop NODE|kill NODE|node NAME|state|where writer --galera" ;;
  esac
}
