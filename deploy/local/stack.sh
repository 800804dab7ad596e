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

kafka_ready() {
  port_open $KAFKA_PORT && grep -q "Kafka Server started" "$STATE/kafka.log" 2>/dev/null
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
EOF
  cat >"$dir/log4j2.properties" <<EOF
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
  local java_opts=(-Xms256m -Xmx512m -XX:+UseG1GC -Djava.awt.headless=true
    -Dlog4j2.configurationFile="$dir/log4j2.properties")
  if [[ ! -f $dir/data/meta.properties ]]; then
    local id
    id=$(java -cp "$KAFKA_LIBS/*" kafka.tools.StorageTool random-uuid 2>/dev/null | tail -n1)
    java "${java_opts[@]}" -cp "$KAFKA_LIBS/*" kafka.tools.StorageTool format -t "$id" \
      -c "$dir/server.properties" >"$STATE/kafka-format.log" 2>&1 || die "kafka storage format failed: $STATE/kafka-format.log"
  fi
  : >"$STATE/kafka.log"
  setsid nohup java "${java_opts[@]}" -cp "$KAFKA_LIBS/*" kafka.Kafka "$dir/server.properties" \
    >>"$STATE/kafka.log" 2>&1 </dev/null &
  echo $! >"$STATE/kafka.pid"
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

redis_ready() { [[ $(redis-cli -p $REDIS_PORT ping 2>/dev/null) == PONG ]]; }

start_redis() {
  if pid_alive redis; then say "redis already running 127.0.0.1:$REDIS_PORT ($(redis-server --version | awk '{print $3}')), started by this stack"; return; fi
  if port_open $REDIS_PORT; then
    redis_ready || die "127.0.0.1:$REDIS_PORT is taken by something that does not answer PING"
    say "redis: 127.0.0.1:$REDIS_PORT is a compatible server this stack did not start; using it"
    return
  fi
  local t0 dir=$STATE/redis
  t0=$(now)
  mkdir -p "$dir"
  # AOF with fsync every second: a restart keeps the stock; wipe-redis
  # simulates losing it.
  setsid nohup redis-server --port $REDIS_PORT --bind 127.0.0.1 --dir "$dir" --daemonize no \
    --appendonly yes --appendfsync everysec --save "" --maxclients 10000 --maxmemory-policy noeviction \
    --logfile "$STATE/redis.log" >/dev/null 2>&1 </dev/null &
  echo $! >"$STATE/redis.pid"
  wait_for redis redis_ready
  say "redis up 127.0.0.1:$REDIS_PORT ($(redis-server --version | awk '{print $3}')) in $(elapsed "$t0")"
}

# ---------------------------------------------------------------- stop

stop_svc() { # service
  local f=$STATE/$1.pid
  if ! pid_alive "$1"; then
    rm -f "$f"
    say "$1 not running (not started by this stack)"
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
  say "$1 stopped in $(elapsed "$t0")"
}

start_svc() {
  case $1 in
  kafka) start_kafka ;;
  mysql) start_mysql ;;
  redis) start_redis ;;
  *) die "unknown service $1 (kafka, mysql, redis)" ;;
  esac
}

# ---------------------------------------------------------------- main

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
