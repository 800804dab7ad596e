#!/usr/bin/env bash
# The native local stack: real Apache Kafka (KRaft, one node), MariaDB and
# Redis as plain processes, for machines without Docker (CI, our laptops).
#
#   stack.sh up                 install what is missing, start what is not running
#   stack.sh down               stop what this script started (by pid file only)
#   stack.sh status             one line per service
#   stack.sh env                the FLASHSALE_* settings as export lines, with
#                               the stack's random JWT secret ($STATE/jwt-secret)
#   stack.sh stop|start SVC     stop or start one service (kafka, mysql, redis)
#   stack.sh wipe-redis         stop Redis, delete its data, start it empty
#                               (the "Redis lost everything" fault)
#   stack.sh pause|resume SVC   SIGSTOP / SIGCONT a service: its port stays
#                               open but nothing answers (a black-holed broker)
#
# With --cluster, the same verbs run the cluster mode instead (see the
# "cluster" section): 3 Kafka brokers on 19092-19094, a Redis Cluster on
# 7001-7006, the single-node stack's MariaDB; state in $STATE/cluster/.
#
#   stack.sh up|down|status|env --cluster
#   stack.sh start|stop|kill|pause|resume --cluster NODE   kafka-1..3, redis-7001..7006
#   stack.sh where --cluster orders-partition N [TOPIC]    the broker leading it
#   stack.sh where --cluster item ID                       the primary of its slot
#
# Idempotent: a second "up" starts nothing and says so. All state lives in
# $FLASHSALE_STATE_DIR (default: .stack/ in the repo, git-ignored); the Kafka
# jars are cached outside the repo in $FLASHSALE_CACHE_DIR.
set -euo pipefail

KAFKA_VERSION=4.1.1
LOG4J_VERSION=2.24.3
REPO=$(cd "$(dirname "$0")/../.." && pwd)
STATE=${FLASHSALE_STATE_DIR:-$REPO/.stack}
CACHE=${FLASHSALE_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/flashsale}
KAFKA_LIBS=$CACHE/kafka-$KAFKA_VERSION/libs
WAIT_SECS=${FLASHSALE_STACK_WAIT:-90}

# Every broker's log cleaner allocates its dedupe buffer (Kafka's default:
# 128 MiB) in one piece when it starts. In a 256 MiB heap that allocation
# failed now and then on a fresh machine (OutOfMemoryError in LogCleaner,
# SkimpyOffsetMap.<init>, the broker dead during start-up), depending on how
# the heap happened to be laid out. The only compacted topic here is
# __consumer_offsets, whose keys fit a 16 MiB map many times over, so every
# broker gets 16 MiB and a heap with room for the rest.
KAFKA_DEDUPE_BUFFER=$((16 * 1024 * 1024))
CLUSTER_KAFKA_HEAP=512m

KAFKA_PORT=9092 KAFKA_CONTROLLER_PORT=9093 MYSQL_PORT=3306 REDIS_PORT=6379
MYSQL_USER=flashsale MYSQL_PASS=flashsale MYSQL_DB=flashsale

say() { printf '%s\n' "$*"; }
die() { printf 'stack: %s\n' "$*" >&2; exit 1; }

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

pid_alive() { # service
  local f=$STATE/$1.pid
  [[ -f $f ]] && kill -0 "$(cat "$f")" 2>/dev/null
}

now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN{printf "%.1fs", b-a}'; }

wait_for() { # service check-command...
  local svc=$1; shift
  local deadline=$((SECONDS + WAIT_SECS))
  until "$@" >/dev/null 2>&1; do
    if ! pid_alive "$svc"; then
      tail -n 30 "$STATE/$svc.log" >&2 || true
      die "$svc exited during start-up (log: $STATE/$svc.log)"
    fi
    ((SECONDS < deadline)) || die "$svc not up after ${WAIT_SECS}s (log: $STATE/$svc.log)"
    sleep 0.3
  done
}

# The stack's own JWT secret: random, made once, kept in the state directory
# (mode 600) so every `env` prints the same one. No default ships in the
# repository: anyone who read it could mint admin tokens. ln makes the first
# writer win when two callers race.
jwt_secret() {
  local f=$STATE/jwt-secret tmp
  if [[ ! -s $f ]]; then
    mkdir -p "$STATE"
    tmp=$(mktemp "$STATE/.jwt-secret.XXXXXX")
    od -An -tx1 -N32 /dev/urandom | tr -d ' \n' >"$tmp"
    ln "$tmp" "$f" 2>/dev/null || true
    rm -f "$tmp"
  fi
  [[ -s $f ]] || die "could not make $f"
  cat "$f"
}

# ---------------------------------------------------------------- install

apt_updated=0
apt_install() { # packages...
  local missing=()
  for p in "$@"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
  ((${#missing[@]})) || return 0
  command -v apt-get >/dev/null || die "missing ${missing[*]} and no apt-get: install them by hand"
  if ((apt_updated == 0)); then
    say "installing ${missing[*]} (apt-get update first)"
    apt-get update -qq >/dev/null
    apt_updated=1
  fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

install_kafka() {
  [[ -f $KAFKA_LIBS/kafka_2.13-$KAFKA_VERSION.jar ]] && return 0
  command -v java >/dev/null || apt_install openjdk-17-jre-headless
  command -v mvn >/dev/null || apt_install maven
  say "fetching Apache Kafka $KAFKA_VERSION jars from Maven Central into $KAFKA_LIBS"
  local tmp
  tmp=$(mktemp -d)
  cat >"$tmp/pom.xml" <<EOF
<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>
<groupId>flashsale.local</groupId><artifactId>kafka-runtime</artifactId><version>1</version><packaging>pom</packaging>
<dependencies>
<dependency><groupId>org.apache.kafka</groupId><artifactId>kafka_2.13</artifactId><version>$KAFKA_VERSION</version></dependency>
<dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-slf4j-impl</artifactId><version>$LOG4J_VERSION</version></dependency>
<dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-core</artifactId><version>$LOG4J_VERSION</version></dependency>
</dependencies></project>
EOF
  mkdir -p "$KAFKA_LIBS.partial"
  mvn -q -B -Dstyle.color=never -f "$tmp/pom.xml" dependency:copy-dependencies -DoutputDirectory="$KAFKA_LIBS.partial" ||
    die "could not fetch Kafka jars with mvn"
  rm -rf "$KAFKA_LIBS" && mv "$KAFKA_LIBS.partial" "$KAFKA_LIBS"
  rm -rf "$tmp"
}

install_all() {
  local pkgs=()
  command -v mariadbd >/dev/null || pkgs+=(mariadb-server mariadb-client)
  command -v redis-server >/dev/null || pkgs+=(redis-server)
  command -v curl >/dev/null || pkgs+=(curl)
  command -v promtool >/dev/null || pkgs+=(prometheus)
  ((${#pkgs[@]} == 0)) || apt_install "${pkgs[@]}"
  install_kafka
}

# ---------------------------------------------------------------- kafka

kafka_ready() { # [port log]: the single node's by default
  port_open "${1:-$KAFKA_PORT}" && grep -q "Kafka Server started" "${2:-$STATE/kafka.log}" 2>/dev/null
}

# kafka_log4j FILE writes the logging configuration of every broker this
# script starts: warnings, plus the start-up lines kafka_ready looks for.
kafka_log4j() {
  cat >"$1" <<EOF
rootLogger.level=WARN
rootLogger.appenderRef.stdout.ref=STDOUT
appender.stdout.type=Console
appender.stdout.name=STDOUT
appender.stdout.layout.type=PatternLayout
appender.stdout.layout.pattern=[%d] %p %m (%c)%n
logger.server.name=kafka.server.KafkaServer
logger.server.level=INFO
logger.raft.name=kafka.server.KafkaRaftServer
logger.raft.level=INFO
logger.broker.name=kafka.server.BrokerServer
logger.broker.level=INFO
EOF
}

kafka_random_id() { java -cp "$KAFKA_LIBS/*" kafka.tools.StorageTool random-uuid 2>/dev/null | tail -n1; }

kafka_format() { # dir cluster-id log java-opts...: format dir/data for dir/server.properties
  local dir=$1 id=$2 log=$3
  shift 3
  java "$@" -cp "$KAFKA_LIBS/*" kafka.tools.StorageTool format -t "$id" \
    -c "$dir/server.properties" >"$log" 2>&1 || die "kafka storage format failed: $log"
}

kafka_launch() { # service dir java-opts...: start the broker in the background
  local svc=$1 dir=$2
  shift 2
  : >"$STATE/$svc.log"
  setsid nohup java "$@" -cp "$KAFKA_LIBS/*" kafka.Kafka "$dir/server.properties" \
    >>"$STATE/$svc.log" 2>&1 </dev/null &
  echo $! >"$STATE/$svc.pid"
}

start_kafka() {
  if pid_alive kafka; then say "kafka already running 127.0.0.1:$KAFKA_PORT ($KAFKA_VERSION), started by this stack"; return; fi
  if port_open $KAFKA_PORT; then say "kafka: 127.0.0.1:$KAFKA_PORT is taken by a server this stack did not start; using it"; return; fi
  local t0 dir=$STATE/kafka
  t0=$(now)
  mkdir -p "$dir/data"
  cat >"$dir/server.properties" <<EOF
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$KAFKA_CONTROLLER_PORT
listeners=PLAINTEXT://127.0.0.1:$KAFKA_PORT,CONTROLLER://127.0.0.1:$KAFKA_CONTROLLER_PORT
advertised.listeners=PLAINTEXT://127.0.0.1:$KAFKA_PORT
controller.listener.names=CONTROLLER
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
inter.broker.listener.name=PLAINTEXT
log.dirs=$dir/data
num.partitions=1
offsets.topic.replication.factor=1
offsets.topic.num.partitions=12
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
min.insync.replicas=1
auto.create.topics.enable=false
group.initial.rebalance.delay.ms=0
log.retention.hours=24
log.cleaner.dedupe.buffer.size=$KAFKA_DEDUPE_BUFFER
EOF
  kafka_log4j "$dir/log4j2.properties"
  local java_opts=(-Xms256m -Xmx512m -XX:+UseG1GC -Djava.awt.headless=true
    -Dlog4j2.configurationFile="$dir/log4j2.properties")
  if [[ ! -f $dir/data/meta.properties ]]; then
    kafka_format "$dir" "$(kafka_random_id)" "$STATE/kafka-format.log" "${java_opts[@]}"
  fi
  kafka_launch kafka "$dir" "${java_opts[@]}"
  wait_for kafka kafka_ready
  say "kafka up 127.0.0.1:$KAFKA_PORT ($KAFKA_VERSION) in $(elapsed "$t0")"
}

# ---------------------------------------------------------------- mysql

mysql_root() { mariadb --no-defaults -uroot --socket="$STATE/mysql.sock" "$@"; }
mysql_app() { mariadb --no-defaults -h127.0.0.1 -P$MYSQL_PORT -u$MYSQL_USER -p$MYSQL_PASS "$@"; }

start_mysql() {
  if pid_alive mysql; then say "mysql already running 127.0.0.1:$MYSQL_PORT ($(mariadbd --version | awk '{print $3}')), started by this stack"; return; fi
  if port_open $MYSQL_PORT; then
    mysql_app -e "SELECT 1" $MYSQL_DB >/dev/null 2>&1 ||
      die "127.0.0.1:$MYSQL_PORT is taken by a server where $MYSQL_USER@$MYSQL_DB cannot log in"
    say "mysql: 127.0.0.1:$MYSQL_PORT is a compatible server this stack did not start; using it"
    return
  fi
  local t0 dir=$STATE/mysql
  t0=$(now)
  if [[ ! -d $dir/mysql ]]; then
    mkdir -p "$dir"
    mariadb-install-db --no-defaults --user=root --datadir="$dir" --auth-root-authentication-method=socket \
      --skip-test-db >"$STATE/mysql-install.log" 2>&1 || die "mariadb-install-db failed: $STATE/mysql-install.log"
  fi
  setsid nohup mariadbd --no-defaults --user=root --datadir="$dir" --socket="$STATE/mysql.sock" \
    --port=$MYSQL_PORT --bind-address=127.0.0.1 --pid-file="$STATE/mysqld.pid" \
    --log-error="$STATE/mysql.log" --skip-log-bin --character-set-server=utf8mb4 \
    --collation-server=utf8mb4_bin --default-time-zone=+00:00 --max-connections=500 \
    --innodb-buffer-pool-size=1G --innodb-log-file-size=256M --innodb-flush-log-at-trx-commit=1 \
    --skip-name-resolve >/dev/null 2>&1 </dev/null &
  echo $! >"$STATE/mysql.pid"
  wait_for mysql mysql_root -e "SELECT 1"
  mysql_root <<EOF
CREATE DATABASE IF NOT EXISTS $MYSQL_DB CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;
CREATE USER IF NOT EXISTS '$MYSQL_USER'@'127.0.0.1' IDENTIFIED BY '$MYSQL_PASS';
CREATE USER IF NOT EXISTS '$MYSQL_USER'@'localhost' IDENTIFIED BY '$MYSQL_PASS';
GRANT ALL PRIVILEGES ON $MYSQL_DB.* TO '$MYSQL_USER'@'127.0.0.1';
GRANT ALL PRIVILEGES ON $MYSQL_DB.* TO '$MYSQL_USER'@'localhost';
GRANT ALL PRIVILEGES ON \`${MYSQL_DB}_%\`.* TO '$MYSQL_USER'@'127.0.0.1';
GRANT PROCESS, CONNECTION ADMIN ON *.* TO '$MYSQL_USER'@'127.0.0.1';
EOF
  wait_for mysql mysql_app -e "SELECT 1" $MYSQL_DB
  say "mysql up 127.0.0.1:$MYSQL_PORT (MariaDB $(mariadbd --version | awk '{print $3}')) in $(elapsed "$t0")"
}

# ---------------------------------------------------------------- redis

redis_ready() { [[ $(redis-cli -p "${1:-$REDIS_PORT}" ping 2>/dev/null) == PONG ]]; } # [port]

# redis_launch service port dir [extra-args...] starts a redis-server in the
# background with the stack's durability: AOF with fsync every second (a
# restart keeps the stock; wipe-redis simulates losing it) and no eviction.
redis_launch() {
  local svc=$1 port=$2 dir=$3
  shift 3
  mkdir -p "$dir"
  setsid nohup redis-server --port "$port" --bind 127.0.0.1 --dir "$dir" --daemonize no \
    --appendonly yes --appendfsync everysec --save "" --maxclients 10000 --maxmemory-policy noeviction \
    --logfile "$STATE/$svc.log" "$@" >/dev/null 2>&1 </dev/null &
  echo $! >"$STATE/$svc.pid"
}

start_redis() {
  if pid_alive redis; then say "redis already running 127.0.0.1:$REDIS_PORT ($(redis-server --version | awk '{print $3}')), started by this stack"; return; fi
  if port_open $REDIS_PORT; then
    redis_ready || die "127.0.0.1:$REDIS_PORT is taken by something that does not answer PING"
    say "redis: 127.0.0.1:$REDIS_PORT is a compatible server this stack did not start; using it"
    return
  fi
  local t0 dir=$STATE/redis
  t0=$(now)
  redis_launch redis $REDIS_PORT "$dir"
  wait_for redis redis_ready
  say "redis up 127.0.0.1:$REDIS_PORT ($(redis-server --version | awk '{print $3}')) in $(elapsed "$t0")"
}

# ---------------------------------------------------------------- stop

stop_svc() { # service
  local f=$STATE/$1.pid name=${1#cluster/}
  if ! pid_alive "$1"; then
    rm -f "$f"
    say "$name not running (not started by this stack)"
    return
  fi
  local pid t0
  pid=$(cat "$f")
  t0=$(now)
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 200); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$pid" 2>/dev/null; then
    kill -KILL "$pid" 2>/dev/null || true
    sleep 0.2
  fi
  rm -f "$f"
  say "$name stopped in $(elapsed "$t0")"
}

start_svc() {
  case $1 in
  kafka) start_kafka ;;
  mysql) start_mysql ;;
  redis) start_redis ;;
  *) die "unknown service $1 (kafka, mysql, redis)" ;;
  esac
}

# ---------------------------------------------------------------- cluster
#
# stack.sh CMD --cluster: three Kafka brokers in KRaft (each broker and
# controller, the three the controller quorum's voters) and a Redis Cluster
# of three primaries with one replica each, on ports of their own so the
# single-node stack runs beside them; MariaDB is the single-node stack's. It
# is what users who outgrow one machine run, small enough for this one: a
# 512 MiB heap per broker. Nodes are services named cluster/kafka-N and
# cluster/redis-PORT for the helpers above (pid file and log in
# $STATE/cluster/), so stop_svc, pid_alive and wait_for serve both modes.

CSTATE=$STATE/cluster
CLUSTER_KAFKA_NODES=(1 2 3)
CLUSTER_REDIS_PORTS=(7001 7002 7003 7004 7005 7006)
# A failed Redis primary is noticed after this long, then its replica is
# promoted: the failover the fault tests time.
CLUSTER_REDIS_NODE_TIMEOUT_MS=5000

cluster_kafka_port() { echo $((19091 + $1)); }      # kafka-1: 19092
cluster_controller_port() { echo $((19191 + $1)); } # kafka-1: 19192
cluster_kafka_brokers() {
  local n out=()
  for n in "${CLUSTER_KAFKA_NODES[@]}"; do out+=("127.0.0.1:$(cluster_kafka_port "$n")"); done
  (IFS=,; echo "${out[*]}")
}
cluster_redis_seeds() {
  local p out=()
  for p in "${CLUSTER_REDIS_PORTS[@]}"; do out+=("127.0.0.1:$p"); done
  (IFS=,; echo "${out[*]}")
}

# cluster_kafka_properties N: broker N's settings. Internal topics get the
# same durability setup gives the pipeline's: 3 copies, 2 in sync. The
# controller fences a broker that stopped heartbeating after 3 s instead of
# Kafka's 9 s, so a killed leader's partitions move on sooner: publishes to
# them are refused until then (faults/kafka_cluster_test.go measures it).
cluster_kafka_properties() {
  local n=$1 dir=$CSTATE/kafka-$1 voters=() m
  for m in "${CLUSTER_KAFKA_NODES[@]}"; do voters+=("$m@127.0.0.1:$(cluster_controller_port "$m")"); done
  cat <<PROPS
process.roles=broker,controller
node.id=$n
controller.quorum.voters=$(IFS=,; echo "${voters[*]}")
listeners=PLAINTEXT://127.0.0.1:$(cluster_kafka_port "$n"),CONTROLLER://127.0.0.1:$(cluster_controller_port "$n")
advertised.listeners=PLAINTEXT://127.0.0.1:$(cluster_kafka_port "$n")
controller.listener.names=CONTROLLER
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
inter.broker.listener.name=PLAINTEXT
log.dirs=$dir/data
num.partitions=1
default.replication.factor=3
min.insync.replicas=2
offsets.topic.replication.factor=3
offsets.topic.num.partitions=12
transaction.state.log.replication.factor=3
transaction.state.log.min.isr=2
unclean.leader.election.enable=false
broker.heartbeat.interval.ms=500
broker.session.timeout.ms=3000
auto.create.topics.enable=false
group.initial.rebalance.delay.ms=0
log.retention.hours=24
log.cleaner.dedupe.buffer.size=$KAFKA_DEDUPE_BUFFER
num.network.threads=2
num.io.threads=4
PROPS
}

# start_cluster_kafka N...: starts the brokers that are not running, all of
# them before waiting for any: a broker reports started only once the
# controller quorum (two of three) has formed.
start_cluster_kafka() {
  local n t0 dir id started=()
  t0=$(now)
  mkdir -p "$CSTATE"
  [[ -s $CSTATE/kafka-cluster-id ]] || kafka_random_id >"$CSTATE/kafka-cluster-id"
  id=$(cat "$CSTATE/kafka-cluster-id")
  for n in "$@"; do
    if pid_alive "cluster/kafka-$n"; then
      say "kafka-$n already running 127.0.0.1:$(cluster_kafka_port "$n"), started by this stack"
      continue
    fi
    port_open "$(cluster_kafka_port "$n")" && die "kafka-$n: 127.0.0.1:$(cluster_kafka_port "$n") is taken by a server this stack did not start"
    dir=$CSTATE/kafka-$n
    mkdir -p "$dir/data"
    cluster_kafka_properties "$n" >"$dir/server.properties"
    kafka_log4j "$dir/log4j2.properties"
    local java_opts=(-Xms128m -Xmx$CLUSTER_KAFKA_HEAP -XX:+UseG1GC -Djava.awt.headless=true
      -Dlog4j2.configurationFile="$dir/log4j2.properties")
    [[ -f $dir/data/meta.properties ]] || kafka_format "$dir" "$id" "$CSTATE/kafka-$n-format.log" "${java_opts[@]}"
    kafka_launch "cluster/kafka-$n" "$dir" "${java_opts[@]}"
    started+=("$n")
  done
  for n in "${started[@]}"; do
    wait_for "cluster/kafka-$n" kafka_ready "$(cluster_kafka_port "$n")" "$CSTATE/kafka-$n.log"
  done
  ((${#started[@]} == 0)) || say "$(printf 'kafka-%s ' "${started[@]}")up ($KAFKA_VERSION) in $(elapsed "$t0")"
}

rcli() { timeout 2 redis-cli -p "$1" "${@:2}" 2>/dev/null | tr -d '\r'; } # port args...: one bounded call
redis_info_field() { rcli "$1" cluster info | awk -F: -v k="$2" '$1 == k {print $2}'; } # port field

# redis_cluster_ok: every running node sees all slots served.
redis_cluster_ok() {
  local p
  for p in "${CLUSTER_REDIS_PORTS[@]}"; do
    pid_alive "cluster/redis-$p" || continue
    [[ $(redis_info_field "$p" cluster_state) == ok ]] || return 1
  done
}

# redis_cluster_form creates the cluster the first time (every node alone,
# no slot assigned), and otherwise lets an empty node (its data wiped) join
# as a replica; restarted nodes rejoin by themselves from their nodes.conf.
redis_cluster_form() {
  local p assigned=0 member="" lonely=() addrs=()
  for p in "${CLUSTER_REDIS_PORTS[@]}"; do
    addrs+=("127.0.0.1:$p")
    pid_alive "cluster/redis-$p" || continue
    if [[ $(redis_info_field "$p" cluster_known_nodes) == 1 ]]; then
      lonely+=("$p")
    else
      member=$p
    fi
    [[ $(redis_info_field "$p" cluster_slots_assigned) == 16384 ]] && assigned=1
  done
  if ((assigned == 0)); then
    ((${#lonely[@]} == ${#CLUSTER_REDIS_PORTS[@]})) ||
      die "redis cluster: nodes know each other but no slots are served: delete $CSTATE/redis-* and run up --cluster again"
    say "redis cluster: creating (3 primaries, 1 replica each)"
    redis-cli --cluster create "${addrs[@]}" --cluster-replicas 1 --cluster-yes >"$CSTATE/redis-create.log" 2>&1 ||
      die "redis-cli --cluster create failed: $CSTATE/redis-create.log"
  elif ((${#lonely[@]})); then
    for p in "${lonely[@]}"; do
      say "redis-$p is empty: joining it to the cluster as a replica"
      redis-cli --cluster add-node "127.0.0.1:$p" "127.0.0.1:$member" --cluster-slave >>"$CSTATE/redis-create.log" 2>&1 ||
        die "redis-cli --cluster add-node failed: $CSTATE/redis-create.log"
    done
  fi
  local deadline=$((SECONDS + WAIT_SECS))
  until redis_cluster_ok; do
    ((SECONDS < deadline)) || die "redis cluster not ok after ${WAIT_SECS}s (redis-cli -p ${CLUSTER_REDIS_PORTS[0]} cluster info)"
    sleep 0.3
  done
}

start_cluster_redis() { # ports...
  local p t0 started=()
  t0=$(now)
  for p in "$@"; do
    if pid_alive "cluster/redis-$p"; then say "redis-$p already running 127.0.0.1:$p, started by this stack"; continue; fi
    port_open "$p" && die "redis-$p: 127.0.0.1:$p is taken by a server this stack did not start"
    redis_launch "cluster/redis-$p" "$p" "$CSTATE/redis-$p" --cluster-enabled yes --cluster-config-file nodes.conf \
      --cluster-node-timeout $CLUSTER_REDIS_NODE_TIMEOUT_MS
    started+=("$p")
  done
  for p in "${started[@]}"; do wait_for "cluster/redis-$p" redis_ready "$p"; done
  redis_cluster_form
  ((${#started[@]} == 0)) || say "$(printf 'redis-%s ' "${started[@]}")up, cluster ok in $(elapsed "$t0")"
}

cluster_rss_kib() { # node: resident memory of its process, in KiB (0 when not running)
  if pid_alive "cluster/$1"; then ps -o rss= -p "$(cat "$CSTATE/$1.pid")" | tr -d ' '; else echo 0; fi
}

cluster_status() {
  local n p name pid state role kib total_k=0 total_r=0
  for name in $(cluster_nodes); do
    if ! pid_alive "cluster/$name"; then say "$name not running"; continue; fi
    pid=$(cat "$CSTATE/$name.pid")
    state=running
    [[ $(ps -o stat= -p "$pid") == T* ]] && state=paused
    kib=$(cluster_rss_kib "$name")
    case $name in
    kafka-*)
      total_k=$((total_k + kib))
      say "$name $state (pid $pid, 127.0.0.1:$(cluster_kafka_port "${name#kafka-}"), RSS $((kib / 1024)) MiB)"
      ;;
    redis-*)
      total_r=$((total_r + kib))
      p=${name#redis-} role=""
      if [[ $state == running ]]; then
        role=$(rcli "$p" info replication | awk -F: '$1 == "role" {r = $2} $1 == "master_port" {m = $2}
          END {if (r == "slave") print "replica of redis-" m; else print "primary"}')
      fi
      say "$name $state (pid $pid, 127.0.0.1:$p${role:+, $role}, RSS $((kib / 1024)) MiB)"
      ;;
    esac
  done
  p=$(redis_any) && say "redis cluster_state: $(redis_info_field "$p" cluster_state)"
  say "RSS: kafka $((total_k / 1024)) MiB, redis $((total_r / 1024)) MiB, total $(((total_k + total_r) / 1024)) MiB"
}

cluster_nodes() {
  local n p
  for n in "${CLUSTER_KAFKA_NODES[@]}"; do echo "kafka-$n"; done
  for p in "${CLUSTER_REDIS_PORTS[@]}"; do echo "redis-$p"; done
}

redis_any() { # the port of a node that answers
  local p
  for p in "${CLUSTER_REDIS_PORTS[@]}"; do
    [[ $(rcli "$p" ping) == PONG ]] && { echo "$p"; return 0; }
  done
  return 1
}

# where item ID: the slot of the item's keys (hash tag {item:ID}, see
# pkg/stock/keys.go), the primary serving it and its replicas.
cluster_where_item() {
  local id=$1 p slot
  [[ $id =~ ^[0-9]+$ ]] || die "item id: $id is not a number"
  p=$(redis_any) || die "no Redis Cluster node answers (stack.sh up --cluster)"
  slot=$(rcli "$p" cluster keyslot "fs:{item:$id}:stock")
  rcli "$p" cluster nodes | awk -v slot="$slot" -v id="$id" '
    {
      addr = $2; sub(/@.*/, "", addr); port = addr; sub(/.*:/, "", port)
      name[$1] = "redis-" port; flags[$1] = $3; master[$1] = $4
      for (i = 9; i <= NF; i++) {
        if ($i ~ /^\[/) continue # a slot being migrated
        n = split($i, r, "-"); lo = r[1] + 0; hi = (n > 1 ? r[2] : r[1]) + 0
        if ($3 ~ /master/ && slot >= lo && slot <= hi) owner = $1
      }
    }
    function state(k) { return flags[k] ~ /fail/ ? " (failing: " flags[k] ")" : "" }
    END {
      if (owner == "") { printf "item %s: slot %s is served by no primary\n", id, slot; exit 1 }
      reps = ""
      for (k in master) if (master[k] == owner) reps = reps (reps == "" ? "" : ", ") name[k] state(k)
      printf "item %s: slot %s, primary %s (127.0.0.1:%s)%s, replicas %s\n", id, slot, name[owner],
        substr(name[owner], 7), state(owner), (reps == "" ? "none" : reps)
    }'
}

# where orders-partition N [TOPIC]: the broker leading partition N (kcat's
# metadata; ids are node.id, so broker 2 is kafka-2) and its in-sync replicas.
cluster_where_partition() {
  local part=$1 topic=${2:-${FLASHSALE_ORDERS_TOPIC:-flashsale.orders.v1}} out
  [[ $part =~ ^[0-9]+$ ]] || die "partition: $part is not a number"
  command -v kcat >/dev/null || apt_install kcat
  out=$(kcat -L -b "$(cluster_kafka_brokers)" -t "$topic" -m 5 2>&1) || die "kcat metadata: $out"
  awk -v part="$part" -v topic="$topic" '
    function names(list,   a, n, i, s) {
      gsub(/,$/, "", list); n = split(list, a, ",")
      for (i = 1; i <= n; i++) s = s (i > 1 ? "," : "") "kafka-" a[i]
      return s == "" ? "none" : s
    }
    $1 == "partition" && $2 == part "," {
      leader = $4; sub(/,$/, "", leader)
      printf "%s partition %s: leader %s, replicas %s, in sync %s\n", topic, part,
        (leader + 0 < 0 ? "none" : "kafka-" leader " (127.0.0.1:" 19091 + leader ")"), names($6), names($8)
      found = 1
    }
    END { if (!found) { printf "%s has no partition %s (has setup run on the cluster?)\n", topic, part; exit 1 } }' <<<"$out"
}

cluster_node_cmd() { # cmd node
  local cmd=$1 name=$2 pid
  cluster_nodes | grep -qx -- "$name" || die "unknown node $name ($(cluster_nodes | tr '\n' ' '))"
  case $cmd in
  start)
    case $name in
    kafka-*) start_cluster_kafka "${name#kafka-}" ;;
    redis-*) start_cluster_redis "${name#redis-}" ;;
    esac
    ;;
  stop)
    # A paused node must run to handle SIGTERM.
    pid_alive "cluster/$name" && kill -CONT "$(cat "$CSTATE/$name.pid")"
    stop_svc "cluster/$name"
    ;;
  kill)
    pid_alive "cluster/$name" || die "$name is not running under this stack"
    pid=$(cat "$CSTATE/$name.pid")
    kill -KILL "$pid"
    while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
    rm -f "$CSTATE/$name.pid"
    say "$name killed (SIGKILL)"
    ;;
  pause | resume)
    pid_alive "cluster/$name" || die "$name is not running under this stack"
    if [[ $cmd == pause ]]; then kill -STOP "$(cat "$CSTATE/$name.pid")"; else kill -CONT "$(cat "$CSTATE/$name.pid")"; fi
    say "$name ${cmd}d"
    ;;
  esac
}

cluster_main() {
  mkdir -p "$CSTATE"
  local cmd=${1:-up} name t0 pids=()
  case $cmd in
  up)
    t0=$(now)
    install_all
    command -v kcat >/dev/null || apt_install kcat
    start_mysql
    start_cluster_redis "${CLUSTER_REDIS_PORTS[@]}"
    start_cluster_kafka "${CLUSTER_KAFKA_NODES[@]}"
    say "cluster up in $(elapsed "$t0"): kafka $(cluster_kafka_brokers), redis $(cluster_redis_seeds)"
    ;;
  down)
    # SIGTERM to every node first: a broker left alone without a controller
    # quorum would wait for it in its controlled shutdown.
    t0=$(now)
    for name in $(cluster_nodes); do
      if ! pid_alive "cluster/$name"; then say "$name not running (not started by this stack)"; continue; fi
      pids+=("$name")
      kill -CONT "$(cat "$CSTATE/$name.pid")" 2>/dev/null || true
      kill -TERM "$(cat "$CSTATE/$name.pid")" 2>/dev/null || true
    done
    for name in "${pids[@]}"; do
      if pid_alive "cluster/$name"; then stop_svc "cluster/$name"; else rm -f "$CSTATE/$name.pid" && say "$name stopped in $(elapsed "$t0")"; fi
    done
    say "mysql left running: it is the single-node stack's (stack.sh down stops it)"
    ;;
  status) cluster_status ;;
  env)
    cat <<ENV
export FLASHSALE_MYSQL_DSN='$MYSQL_USER:$MYSQL_PASS@tcp(127.0.0.1:$MYSQL_PORT)/$MYSQL_DB'
export FLASHSALE_REDIS_ADDR='$(cluster_redis_seeds)'
export FLASHSALE_KAFKA_BROKERS='$(cluster_kafka_brokers)'
export FLASHSALE_TOPIC_REPLICATION=3
export FLASHSALE_JWT_SECRET='${FLASHSALE_JWT_SECRET:-$(jwt_secret)}'
export FLASHSALE_STACK='$REPO/deploy/local/stack.sh'
ENV
    ;;
  start | stop | kill | pause | resume) cluster_node_cmd "$cmd" "${2:?node: $(cluster_nodes | tr '\n' ' ')}" ;;
  where)
    case ${2:-} in
    orders-partition) cluster_where_partition "${3:?partition}" "${4:-}" ;;
    item) cluster_where_item "${3:?item id}" ;;
    *) die "usage: stack.sh where --cluster orders-partition N [TOPIC] | item ID" ;;
    esac
    ;;
  *) die "usage: stack.sh up|down|status|env|start NODE|stop NODE|kill NODE|pause NODE|resume NODE|where orders-partition N [TOPIC]|where item ID --cluster" ;;
  esac
}

# ---------------------------------------------------------------- main

if [[ " $* " == *" --cluster "* ]]; then
  args=()
  for a in "$@"; do [[ $a == --cluster ]] || args+=("$a"); done
  cluster_main "${args[@]}"
  exit
fi

mkdir -p "$STATE"
cmd=${1:-up}
case $cmd in
up)
  install_all
  start_mysql
  start_redis
  start_kafka
  ;;
down)
  for s in kafka redis mysql; do stop_svc $s; done
  ;;
start) start_svc "${2:?service}" ;;
stop) stop_svc "${2:?service}" ;;
pause | resume)
  svc=${2:?service}
  pid_alive "$svc" || die "$svc is not running under this stack"
  if [[ $cmd == pause ]]; then kill -STOP "$(cat "$STATE/$svc.pid")"; else kill -CONT "$(cat "$STATE/$svc.pid")"; fi
  say "$svc ${cmd}d"
  ;;
wipe-redis)
  stop_svc redis
  rm -rf "$STATE/redis"
  start_redis
  ;;
status)
  for s in kafka mysql redis; do
    if pid_alive $s; then say "$s running (pid $(cat "$STATE/$s.pid"))"; else say "$s not running"; fi
  done
  ;;
env)
  cat <<EOF
export FLASHSALE_MYSQL_DSN='$MYSQL_USER:$MYSQL_PASS@tcp(127.0.0.1:$MYSQL_PORT)/$MYSQL_DB'
export FLASHSALE_REDIS_ADDR='127.0.0.1:$REDIS_PORT'
export FLASHSALE_KAFKA_BROKERS='127.0.0.1:$KAFKA_PORT'
export FLASHSALE_JWT_SECRET='${FLASHSALE_JWT_SECRET:-$(jwt_secret)}'
export FLASHSALE_STACK='$REPO/deploy/local/stack.sh'
EOF
  ;;
*) die "usage: stack.sh up|down|status|env|start SVC|stop SVC|pause SVC|resume SVC|wipe-redis" ;;
esac
