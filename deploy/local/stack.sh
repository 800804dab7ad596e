#!/usr/bin/env bash
# The native local stack: real Apache Kafka (KRaft, one node), MariaDB and
# Redis as plain processes, for machines without Docker (CI, our laptops).
#
#   stack.sh up                 install what is missing, start what is not running
#   stack.sh down               stop what this script started (by pid file only)
#   stack.sh status             one line per service
#   stack.sh env                the FLASHSALE_* settings as export lines, with
#                               the stack's random JWT secret ($STATE/jwt-secret)
#   stack.sh stop|start SVC     stop or start one service (kafka, mysql, redis, sentinel)
#   stack.sh wipe-redis         stop Redis, delete its data, start it empty
#                               (the "Redis lost everything" fault)
#   stack.sh pause|resume SVC   SIGSTOP / SIGCONT a service: its port stays
#                               open but nothing answers (a black-holed broker)
#   stack.sh env --tls          the same over TLS with credentials: Kafka
#                               SASL_SSL (SCRAM), rediss:// with an ACL user,
#                               MariaDB with a REQUIRE SSL user
#   stack.sh env --sentinel     plain env, Redis reached through the Sentinel
#   stack.sh check-tls          every TLS listener tried with real clients
#                               (openssl, redis-cli, mariadb, kcat)
#   stack.sh probe kafka-metadata  the plaintext broker lists itself (kcat)
#
# Besides its plaintext ports the single node serves TLS as managed services
# do: a CA, server and client certificate made once with openssl in
# $STATE/tls/, Kafka SASL_SSL (SCRAM-SHA-512/256, user flashsale) on 9094,
# Redis TLS on 6380 (ACL user flashsale), MariaDB TLS on 3306 (user
# flashsale_tls, REQUIRE SSL) and a Redis Sentinel on 26379 watching the Redis
# as master "flashsale". Passwords are random, made once, mode 600 in $STATE.
#
# Ports: each service takes its default port when it is free. When something
# this stack did not start holds it (Debian's own mariadb or redis service,
# another checkout's stack), it takes the next free port from a base of its
# own instead (13306, 16379, 16380, 36379, 29092-29094) and says so; the ports
# chosen are recorded in $STATE/ports, which every verb reads, so env, status,
# stop and start agree.
#
# With --cluster, the same verbs run the cluster mode instead (see the
# "cluster" section): 3 Kafka brokers on 19092-19094, a Redis Cluster on
# 7001-7006, the single-node stack's MariaDB; state in $STATE/cluster/.
#
#   stack.sh up|down|status|env --cluster
#   stack.sh start|stop|kill|pause|resume --cluster NODE   kafka-1..3, redis-7001..7006
#   stack.sh node --cluster NAME                           exit 0 when NAME is a node (the lookup every node verb makes)
#   stack.sh where --cluster orders-partition N [TOPIC]    the broker leading it
#   stack.sh where --cluster item ID                       the primary of its slot
#
# With --galera, the Galera mode instead (deploy/local/galera.sh): three
# MariaDB Galera nodes on 23306-23308 and an HAProxy on 23300 that sends every
# connection to one of them, the writer; env --galera prints the single-node
# settings with FLASHSALE_MYSQL_DSN on the proxy. State in $STATE/galera/.
#
#   stack.sh up|down|status|env --galera
#   stack.sh start|stop|kill --galera NODE     node-1..3, haproxy
#   stack.sh node --galera NAME                exit 0 when NAME is a node
#   stack.sh state --galera                    make and print the nodes' state directory
#   stack.sh where --galera writer
#
# Idempotent: a second "up" starts nothing and says so. All state lives in
# $FLASHSALE_STATE_DIR (default: .stack/ in the repo, git-ignored); the Kafka
# jars are cached outside the repo in $FLASHSALE_CACHE_DIR.
set -euo pipefail

# Close every file descriptor above stderr before anything is started: the
# servers this script starts live on after it, and would otherwise keep the
# caller's open files (a `flock` lock file, a CI step's pipe) open for as long
# as they run. A lock taken by `flock file stack.sh up` was then held by
# redis-server and Kafka forever, and every later `flock` waited.
for fd in /proc/$$/fd/*; do
  fd=${fd##*/}
  if [[ $fd =~ ^[0-9]+$ ]] && ((fd > 2 && fd != 255)); then
    eval "exec $fd>&-" 2>/dev/null || true
  fi
done

KAFKA_VERSION=4.1.1
LOG4J_VERSION=2.24.3
REPO=$(cd "$(dirname "$0")/../.." && pwd)
STATE=${FLASHSALE_STATE_DIR:-$REPO/.stack}
# shellcheck source=deploy/local/pidfile.sh
source "$REPO/deploy/local/pidfile.sh"
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

KAFKA_PORT=9092 KAFKA_CONTROLLER_PORT=9093 KAFKA_SASL_PORT=9094 MYSQL_PORT=3306
REDIS_PORT=6379 REDIS_TLS_PORT=6380 SENTINEL_PORT=26379
MYSQL_USER=flashsale MYSQL_PASS=flashsale MYSQL_DB=flashsale
# The credentialed users of the TLS listeners; their passwords are random
# files in $STATE (state_secret), never in the repository.
MYSQL_TLS_USER=flashsale_tls KAFKA_SASL_USER=flashsale REDIS_TLS_USER=flashsale
SENTINEL_MASTER=flashsale
TLS=$STATE/tls

# Every port of the single-node stack: its default, and where the search for
# a free one starts when something else holds the default (clear of the
# cluster mode's 7001-7006, 17001-17006, 19092-19094 and 19192-19194).
PORT_VARS=(MYSQL_PORT REDIS_PORT REDIS_TLS_PORT SENTINEL_PORT KAFKA_PORT KAFKA_CONTROLLER_PORT KAFKA_SASL_PORT)
declare -A PORT_DEFAULT=([MYSQL_PORT]=3306 [REDIS_PORT]=6379 [REDIS_TLS_PORT]=6380 [SENTINEL_PORT]=26379
  [KAFKA_PORT]=9092 [KAFKA_CONTROLLER_PORT]=9093 [KAFKA_SASL_PORT]=9094)
declare -A PORT_BASE=([MYSQL_PORT]=13306 [REDIS_PORT]=16379 [REDIS_TLS_PORT]=16380 [SENTINEL_PORT]=36379
  [KAFKA_PORT]=29092 [KAFKA_CONTROLLER_PORT]=29093 [KAFKA_SASL_PORT]=29094)

say() { printf '%s\n' "$*"; }

# is_one_of NAME WORD...: NAME is one of the words. Membership is tested
# without a pipe: under pipefail, a list piped into grep -q lost the race it always
# runs (grep -q exits at the first match, the list's next echo dies of
# SIGPIPE, the pipeline's status is 141) and a listed node read "unknown"
# 227 times in 300. deploy/local/lint-scripts.sh refuses that shape.
is_one_of() {
  local name=$1 w
  shift
  for w in "$@"; do [[ $w == "$name" ]] && return 0; done
  return 1
}

# node_known NAME LISTER: dies unless NAME is one of the nodes LISTER prints,
# one a line (cluster_nodes, galera_names): every verb of a mode that names a
# node (start, stop, kill, pause, resume, node) asks it, so the cluster and
# the Galera modes refuse an unknown node alike.
node_known() {
  local names
  mapfile -t names < <("$2")
  is_one_of "$1" "${names[@]}" || die "unknown node $1 (${names[*]})"
}

die() { printf 'stack: %s\n' "$*" >&2; exit 1; }

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

pid_alive() { pidfile_alive "$STATE/$1.pid"; } # service

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

# state_secret NAME: a random secret (64 hex digits), made once and kept in
# $STATE/NAME (mode 600) so every caller gets the same one. No default ships
# in the repository: anyone who read it could mint admin tokens or log in.
# ln makes the first writer win when two callers race.
state_secret() {
  local f=$STATE/$1 tmp
  if [[ ! -s $f ]]; then
    mkdir -p "$STATE"
    tmp=$(mktemp "$STATE/.$1.XXXXXX")
    od -An -tx1 -N32 /dev/urandom | tr -d ' \n' >"$tmp"
    ln "$tmp" "$f" 2>/dev/null || true
    rm -f "$tmp"
  fi
  [[ -s $f ]] || die "could not make $f"
  cat "$f"
}

# The stack's own JWT secret, which every `env` prints.
jwt_secret() { state_secret jwt-secret; }

# ---------------------------------------------------------------- ports

# ports_load reads the ports recorded in $STATE/ports (NAME=number lines, only
# the names above) over the defaults.
ports_load() {
  local k v
  [[ -f $STATE/ports ]] || return 0
  while IFS='=' read -r k v; do
    [[ -n ${PORT_DEFAULT[$k]:-} && $v =~ ^[0-9]+$ ]] && printf -v "$k" '%s' "$v"
  done <"$STATE/ports"
}

ports_save() {
  local k tmp
  mkdir -p "$STATE"
  tmp=$(mktemp "$STATE/.ports.XXXXXX")
  {
    echo "# the ports of this stack's services, chosen by stack.sh up/start, read by every verb"
    for k in "${PORT_VARS[@]}"; do echo "$k=${!k}"; done
  } >"$tmp"
  chmod 644 "$tmp"
  mv -f "$tmp" "$STATE/ports"
}

port_spoken_for() { # var port: another of this stack's ports, or one of the cluster mode's
  local k
  for k in "${PORT_VARS[@]}"; do [[ $k != "$1" && ${!k} == "$2" ]] && return 0; done
  case $2 in 700[1-6] | 1700[1-6] | 1909[2-4] | 1919[2-4]) return 0 ;; esac
  return 1
}

# pick_port SVC VAR...: before SVC starts, each VAR keeps the port recorded
# for it in $STATE/ports while that is free (a service started again must
# be where its clients, who read the ports once, still dial), else gets its
# default port when that is free, else the first free port from its base;
# the choice is recorded in $STATE/ports. A taken default is never used
# silently: a server this stack did not start (Debian's own service,
# another stack) is not one the tests may write to or stop.
pick_port() {
  local svc=$1 var def p
  shift
  for var in "$@"; do
    def=${PORT_DEFAULT[$var]} p=${!var}
    if [[ $p != "$def" ]] && (port_open "$p" || port_spoken_for "$var" "$p"); then
      p=$def
    fi
    if port_open "$p" || port_spoken_for "$var" "$p"; then
      p=${PORT_BASE[$var]}
      while port_open "$p" || port_spoken_for "$var" "$p"; do
        p=$((p + 1))
        ((p < ${PORT_BASE[$var]} + 1000)) || die "$svc: no free port from ${PORT_BASE[$var]} on"
      done
      say "$svc: 127.0.0.1:$def is taken by a server this stack did not start; using 127.0.0.1:$p instead"
    fi
    printf -v "$var" '%s' "$p"
  done
  ports_save
}

# ---------------------------------------------------------------- tls

# tls_make: the stack's CA and the certificates it signs, in $STATE/tls/,
# made once with openssl: server.pem (SAN IP:127.0.0.1, DNS:localhost; every
# TLS listener serves it), client.pem (for clients that present one) and a
# PKCS12 copy of the server's key and chain for Kafka. A certificate is made
# again only when it is missing, no longer verifies against ca.pem, or expires
# within 30 days. Keys are mode 600.
tls_make() {
  command -v openssl >/dev/null || apt_install openssl
  mkdir -p "$TLS"
  if [[ ! -s $TLS/ca.pem || ! -s $TLS/ca-key.pem ]] ||
    ! openssl x509 -checkend $((30 * 86400)) -noout -in "$TLS/ca.pem" >/dev/null 2>&1; then
    (umask 077 && openssl req -x509 -newkey rsa:2048 -nodes -sha256 -days 3650 -subj "/CN=flashsale local stack CA" \
      -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
      -keyout "$TLS/ca-key.pem.tmp" -out "$TLS/ca.pem.tmp" >"$TLS/openssl.log" 2>&1) ||
      die "openssl could not make the CA: $TLS/openssl.log"
    chmod 600 "$TLS/ca-key.pem.tmp" && chmod 644 "$TLS/ca.pem.tmp"
    mv -f "$TLS/ca-key.pem.tmp" "$TLS/ca-key.pem" && mv -f "$TLS/ca.pem.tmp" "$TLS/ca.pem"
  fi
  tls_leaf server "/CN=localhost" "subjectAltName=IP:127.0.0.1,DNS:localhost" "extendedKeyUsage=serverAuth"
  tls_leaf client "/CN=flashsale" "extendedKeyUsage=clientAuth"
  if [[ ! -s $TLS/kafka-server.p12 || $TLS/server.pem -nt $TLS/kafka-server.p12 ]]; then
    state_secret kafka-keystore-password >/dev/null
    (umask 077 && openssl pkcs12 -export -name server -in "$TLS/server.pem" -inkey "$TLS/server-key.pem" \
      -certfile "$TLS/ca.pem" -passout "file:$STATE/kafka-keystore-password" -out "$TLS/kafka-server.p12.tmp" \
      >"$TLS/openssl.log" 2>&1) || die "openssl could not make Kafka's keystore: $TLS/openssl.log"
    mv -f "$TLS/kafka-server.p12.tmp" "$TLS/kafka-server.p12"
  fi
}

tls_leaf() { # name subject extension...: NAME.pem and NAME-key.pem signed by the CA
  local n=$1 subj=$2 c=$TLS/$1
  shift 2
  if [[ -s $c.pem && -s $c-key.pem ]] && openssl verify -CAfile "$TLS/ca.pem" "$c.pem" >/dev/null 2>&1 &&
    openssl x509 -checkend $((30 * 86400)) -noout -in "$c.pem" >/dev/null 2>&1; then
    return 0
  fi
  printf '%s\n' basicConstraints=CA:FALSE keyUsage=critical,digitalSignature,keyEncipherment \
    subjectKeyIdentifier=hash authorityKeyIdentifier=keyid "$@" >"$c.ext"
  (umask 077 && openssl req -new -newkey rsa:2048 -nodes -subj "$subj" -keyout "$c-key.pem.tmp" -out "$c.csr" &&
    openssl x509 -req -sha256 -days 825 -in "$c.csr" -CA "$TLS/ca.pem" -CAkey "$TLS/ca-key.pem" \
      -set_serial "0x$(od -An -tx1 -N15 /dev/urandom | tr -d ' \n')" -extfile "$c.ext" -out "$c.pem.tmp") \
    >"$TLS/openssl.log" 2>&1 || die "openssl could not make $n.pem: $TLS/openssl.log"
  chmod 600 "$c-key.pem.tmp" && chmod 644 "$c.pem.tmp"
  mv -f "$c-key.pem.tmp" "$c-key.pem" && mv -f "$c.pem.tmp" "$c.pem"
  rm -f "$c.csr" "$c.ext"
}

# ---------------------------------------------------------------- install

apt_updated=0
apt_install() { # packages...
  local missing=()
  # Installed means dpkg's "install ok installed": dpkg -s also succeeds for a
  # package removed with its configuration left ("rc"), whose files are gone.
  for p in "$@"; do
    [[ $(dpkg-query -W -f='${Status}' "$p" 2>/dev/null) == "install ok installed" ]] || missing+=("$p")
  done
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
  command -v openssl >/dev/null || pkgs+=(openssl)
  command -v promtool >/dev/null || pkgs+=(prometheus)
  # Alertmanager: make run's and deploy/alertmanager_e2e_test.go's
  command -v prometheus-alertmanager >/dev/null || pkgs+=(prometheus-alertmanager)
  # nft: the network nemesis' partitions (internal/nemesis, faults/netfaults_test.go)
  command -v nft >/dev/null || pkgs+=(nftables)
  # iptables: its NFQUEUE target (the kernel may lack nft's queue and tc netem) for the nemesis' delays
  command -v iptables >/dev/null || pkgs+=(iptables)
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
    -c "$dir/server.properties" "${KAFKA_FORMAT_ARGS[@]}" >"$log" 2>&1 || die "kafka storage format failed: $log"
}
KAFKA_FORMAT_ARGS=() # more StorageTool arguments: the single node's SCRAM user

# kafka_scram_stamp: what the single node's SCRAM credential was last set
# for (its cluster id and password, hashed), kept in $STATE/kafka/scram-set.
kafka_scram_stamp() {
  { grep '^cluster.id=' "$STATE/kafka/data/meta.properties" && cat "$STATE/kafka-sasl-password"; } 2>/dev/null |
    sha256sum | cut -c1-64
}

# kafka_configs ARGS...: Kafka's kafka-configs tool (ConfigCommand), bounded.
kafka_configs() {
  timeout 120 java -Xmx256m -Dlog4j2.configurationFile="$STATE/kafka/log4j2.properties" -cp "$KAFKA_LIBS/*" \
    kafka.admin.ConfigCommand "$@"
}

# kafka_scram_set: the SCRAM-SHA-512 and -256 credential of the SASL_SSL
# listener's user. A data directory formatted by this script has it from
# StorageTool's --add-scram; one formatted before (or whose password file was
# made again) gets it from kafka-configs over the plaintext listener, once,
# one mechanism per call (one call with both is refused: "A user credential
# cannot be altered twice in the same request"). kafka-configs takes SCRAM
# passwords on its command line only (--add-config-file refuses them); its
# log has the password taken out.
kafka_scram_set() {
  local stamp pass m out
  stamp=$(kafka_scram_stamp)
  [[ $(cat "$STATE/kafka/scram-set" 2>/dev/null) == "$stamp" ]] && return 0
  pass=$(state_secret kafka-sasl-password)
  : >"$STATE/kafka-scram.log"
  for m in SCRAM-SHA-512 SCRAM-SHA-256; do
    if ! out=$(kafka_configs --bootstrap-server "127.0.0.1:$KAFKA_PORT" --alter --entity-type users \
      --entity-name "$KAFKA_SASL_USER" --add-config "$m=[password=$pass]" 2>&1); then
      printf '%s\n' "${out//$pass/<password>}" >>"$STATE/kafka-scram.log"
      die "kafka: could not set the $m credential of $KAFKA_SASL_USER: $STATE/kafka-scram.log"
    fi
    printf '%s\n' "${out//$pass/<password>}" >>"$STATE/kafka-scram.log"
  done
  echo "$stamp" >"$STATE/kafka/scram-set"
  say "kafka: SCRAM-SHA-512/256 credential of $KAFKA_SASL_USER set"
}

kafka_launch() { # service dir java-opts...: start the broker in the background
  local svc=$1 dir=$2
  shift 2
  : >"$STATE/$svc.log"
  setsid nohup java "$@" -cp "$KAFKA_LIBS/*" kafka.Kafka "$dir/server.properties" \
    >>"$STATE/$svc.log" 2>&1 </dev/null &
  pidfile_write "$STATE/$svc.pid" $!
}

# The single node: PLAINTEXT for the tests, CONTROLLER for KRaft, and
# SASL_SSL (SCRAM over TLS, the server certificate from a PKCS12 keystore) for
# clients tested as against a managed Kafka.
start_kafka() {
  if pid_alive kafka; then
    say "kafka already running 127.0.0.1:$KAFKA_PORT ($KAFKA_VERSION), started by this stack"
    port_open "$KAFKA_SASL_PORT" ||
      say "kafka: started before SASL_SSL was added; stack.sh stop kafka && stack.sh start kafka adds 127.0.0.1:$KAFKA_SASL_PORT"
    return
  fi
  pick_port kafka KAFKA_PORT KAFKA_CONTROLLER_PORT KAFKA_SASL_PORT
  tls_make
  local t0 dir=$STATE/kafka pass kspass
  t0=$(now)
  pass=$(state_secret kafka-sasl-password)
  kspass=$(state_secret kafka-keystore-password)
  mkdir -p "$dir/data"
  # mode 600: it holds the keystore's password
  (umask 077 && cat >"$dir/server.properties.tmp") <<EOF
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$KAFKA_CONTROLLER_PORT
listeners=PLAINTEXT://127.0.0.1:$KAFKA_PORT,CONTROLLER://127.0.0.1:$KAFKA_CONTROLLER_PORT,SASL_SSL://127.0.0.1:$KAFKA_SASL_PORT
advertised.listeners=PLAINTEXT://127.0.0.1:$KAFKA_PORT,SASL_SSL://127.0.0.1:$KAFKA_SASL_PORT
controller.listener.names=CONTROLLER
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SASL_SSL:SASL_SSL
inter.broker.listener.name=PLAINTEXT
sasl.enabled.mechanisms=SCRAM-SHA-512,SCRAM-SHA-256
listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
listener.name.sasl_ssl.ssl.keystore.type=PKCS12
listener.name.sasl_ssl.ssl.keystore.location=$TLS/kafka-server.p12
listener.name.sasl_ssl.ssl.keystore.password=$kspass
listener.name.sasl_ssl.ssl.key.password=$kspass
listener.name.sasl_ssl.ssl.client.auth=none
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
  chmod 600 "$dir/server.properties.tmp" && mv -f "$dir/server.properties.tmp" "$dir/server.properties"
  kafka_log4j "$dir/log4j2.properties"
  local java_opts=(-Xms256m -Xmx512m -XX:+UseG1GC -Djava.awt.headless=true
    -Dlog4j2.configurationFile="$dir/log4j2.properties")
  if [[ ! -f $dir/data/meta.properties ]]; then
    local KAFKA_FORMAT_ARGS=(--add-scram "SCRAM-SHA-512=[name=$KAFKA_SASL_USER,password=$pass]"
      --add-scram "SCRAM-SHA-256=[name=$KAFKA_SASL_USER,password=$pass]")
    kafka_format "$dir" "$(kafka_random_id)" "$STATE/kafka-format.log" "${java_opts[@]}"
    kafka_scram_stamp >"$dir/scram-set"
  fi
  kafka_launch kafka "$dir" "${java_opts[@]}"
  wait_for kafka kafka_ready
  kafka_scram_set
  say "kafka up 127.0.0.1:$KAFKA_PORT, SASL_SSL 127.0.0.1:$KAFKA_SASL_PORT ($KAFKA_VERSION) in $(elapsed "$t0")"
}

# ---------------------------------------------------------------- mysql

mysql_root() { mariadb --no-defaults -uroot --socket="$STATE/mysql.sock" "$@"; }
mysql_app() { mariadb --no-defaults -h127.0.0.1 -P$MYSQL_PORT -u$MYSQL_USER -p$MYSQL_PASS "$@"; }

# The settings of every MariaDB this script starts (start_mysql, serve mysql).
MARIADB_SETTINGS=(--skip-log-bin --character-set-server=utf8mb4 --collation-server=utf8mb4_bin
  --default-time-zone=+00:00 --max-connections=500 --innodb-flush-log-at-trx-commit=1 --skip-name-resolve)

# mysql_app_grants prints the SQL that creates the database and the
# pipeline's user (the one setup and every deployable log in as) with its
# grants: the single node (start_mysql) and the Galera mode (galera_users)
# both run it, so the two cannot drift apart.
mysql_app_grants() {
  cat <<EOF
CREATE DATABASE IF NOT EXISTS $MYSQL_DB CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;
CREATE USER IF NOT EXISTS '$MYSQL_USER'@'127.0.0.1' IDENTIFIED BY '$MYSQL_PASS';
CREATE USER IF NOT EXISTS '$MYSQL_USER'@'localhost' IDENTIFIED BY '$MYSQL_PASS';
GRANT ALL PRIVILEGES ON $MYSQL_DB.* TO '$MYSQL_USER'@'127.0.0.1';
GRANT ALL PRIVILEGES ON $MYSQL_DB.* TO '$MYSQL_USER'@'localhost';
GRANT ALL PRIVILEGES ON \`${MYSQL_DB}_%\`.* TO '$MYSQL_USER'@'127.0.0.1';
GRANT PROCESS, CONNECTION ADMIN ON *.* TO '$MYSQL_USER'@'127.0.0.1';
EOF
}

# MariaDB serves TLS on its one port (the server certificate; a client asks
# for it): user flashsale connects with or without, flashsale_tls only with.
start_mysql() {
  if pid_alive mysql; then
    say "mysql already running 127.0.0.1:$MYSQL_PORT ($(mariadbd --version | awk '{print $3}')), started by this stack"
    [[ $(mysql_root -N -e "SELECT @@have_ssl" 2>/dev/null) == YES ]] ||
      say "mysql: started before TLS was added; stack.sh stop mysql && stack.sh start mysql adds it"
    return
  fi
  pick_port mysql MYSQL_PORT
  tls_make
  local t0 dir=$STATE/mysql tlspass
  t0=$(now)
  tlspass=$(state_secret mysql-tls-password)
  if [[ ! -d $dir/mysql ]]; then
    mkdir -p "$dir"
    mariadb-install-db --no-defaults --user=root --datadir="$dir" --auth-root-authentication-method=socket \
      --skip-test-db >"$STATE/mysql-install.log" 2>&1 || die "mariadb-install-db failed: $STATE/mysql-install.log"
  fi
  setsid nohup mariadbd --no-defaults --user=root --datadir="$dir" --socket="$STATE/mysql.sock" \
    --port=$MYSQL_PORT --bind-address=127.0.0.1 --pid-file="$STATE/mysqld.pid" \
    --log-error="$STATE/mysql.log" "${MARIADB_SETTINGS[@]}" \
    --innodb-buffer-pool-size=1G --innodb-log-file-size=256M --ssl-ca="$TLS/ca.pem" --ssl-cert="$TLS/server.pem" --ssl-key="$TLS/server-key.pem" \
    >/dev/null 2>&1 </dev/null &
  pidfile_write "$STATE/mysql.pid" $!
  wait_for mysql mysql_root -e "SELECT 1"
  { mysql_app_grants; cat <<EOF; } | mysql_root
CREATE USER IF NOT EXISTS '$MYSQL_TLS_USER'@'127.0.0.1' IDENTIFIED BY '$tlspass' REQUIRE SSL;
CREATE USER IF NOT EXISTS '$MYSQL_TLS_USER'@'localhost' IDENTIFIED BY '$tlspass' REQUIRE SSL;
ALTER USER '$MYSQL_TLS_USER'@'127.0.0.1' IDENTIFIED BY '$tlspass' REQUIRE SSL;
ALTER USER '$MYSQL_TLS_USER'@'localhost' IDENTIFIED BY '$tlspass' REQUIRE SSL;
GRANT ALL PRIVILEGES ON $MYSQL_DB.* TO '$MYSQL_TLS_USER'@'127.0.0.1';
GRANT ALL PRIVILEGES ON $MYSQL_DB.* TO '$MYSQL_TLS_USER'@'localhost';
GRANT ALL PRIVILEGES ON \`${MYSQL_DB}_%\`.* TO '$MYSQL_TLS_USER'@'127.0.0.1';
GRANT PROCESS, CONNECTION ADMIN ON *.* TO '$MYSQL_TLS_USER'@'127.0.0.1';
EOF
  wait_for mysql mysql_app -e "SELECT 1" $MYSQL_DB
  say "mysql up 127.0.0.1:$MYSQL_PORT, TLS ($(mariadbd --version | awk '{print $3}')) in $(elapsed "$t0")"
}

# ---------------------------------------------------------------- redis

redis_ready() { [[ $(redis-cli -p "${1:-$REDIS_PORT}" ping 2>/dev/null) == PONG ]]; } # [port]

# redis_launch service port dir [extra-args...] starts a redis-server in the
# background with the stack's durability: AOF with fsync every second (a
# restart keeps the stock; wipe-redis simulates losing it) and no eviction.
REDIS_DURABILITY=(--appendonly yes --appendfsync everysec --save "" --maxclients 10000 --maxmemory-policy noeviction)
redis_launch() {
  local svc=$1 port=$2 dir=$3
  shift 3
  mkdir -p "$dir"
  setsid nohup redis-server --port "$port" --bind 127.0.0.1 --dir "$dir" --daemonize no \
    "${REDIS_DURABILITY[@]}" --logfile "$STATE/$svc.log" "$@" >/dev/null 2>&1 </dev/null &
  pidfile_write "$STATE/$svc.pid" $!
}

# The single node's Redis: plain on REDIS_PORT, TLS on REDIS_TLS_PORT (a
# client certificate is optional), the default user unchanged on both, and
# an ACL user flashsale whose password (given to redis-server as its SHA-256
# only) is $STATE/redis-password.
start_redis() {
  if pid_alive redis; then
    say "redis already running 127.0.0.1:$REDIS_PORT ($(redis-server --version | awk '{print $3}')), started by this stack"
    port_open "$REDIS_TLS_PORT" ||
      say "redis: started before TLS was added; stack.sh stop redis && stack.sh start redis adds 127.0.0.1:$REDIS_TLS_PORT"
    return
  fi
  pick_port redis REDIS_PORT REDIS_TLS_PORT
  tls_make
  local t0 dir=$STATE/redis hash
  t0=$(now)
  hash=$(state_secret redis-password | tr -d '\n' | sha256sum | cut -c1-64)
  redis_launch redis "$REDIS_PORT" "$dir" --tls-port "$REDIS_TLS_PORT" --tls-cert-file "$TLS/server.pem" \
    --tls-key-file "$TLS/server-key.pem" --tls-ca-cert-file "$TLS/ca.pem" --tls-auth-clients optional \
    --user "$REDIS_TLS_USER" on "#$hash" "~*" "&*" "+@all"
  wait_for redis redis_ready
  sentinel_follow
  say "redis up 127.0.0.1:$REDIS_PORT, TLS 127.0.0.1:$REDIS_TLS_PORT ($(redis-server --version | awk '{print $3}')) in $(elapsed "$t0")"
}

# ---------------------------------------------------------------- sentinel

# One Redis Sentinel watching the single node's Redis as master "flashsale"
# (quorum 1), for clients tested in sentinel mode. With no replica it can
# never fail over: it only reports where the master is. Its configuration is
# written afresh at each start (Sentinel rewrites the file as it runs).
sentinel_ready() {
  [[ $(timeout 2 redis-cli -p "$SENTINEL_PORT" sentinel get-master-addr-by-name "$SENTINEL_MASTER" 2>/dev/null | tr '\n' ' ') == "127.0.0.1 $REDIS_PORT " ]]
}

start_sentinel() {
  if pid_alive sentinel; then say "sentinel already running 127.0.0.1:$SENTINEL_PORT, master $SENTINEL_MASTER at 127.0.0.1:$REDIS_PORT, started by this stack"; return; fi
  pick_port sentinel SENTINEL_PORT
  local t0
  t0=$(now)
  mkdir -p "$STATE/sentinel"
  cat >"$STATE/sentinel.conf" <<EOF
port $SENTINEL_PORT
bind 127.0.0.1
daemonize no
dir $STATE/sentinel
logfile $STATE/sentinel.log
sentinel monitor $SENTINEL_MASTER 127.0.0.1 $REDIS_PORT 1
sentinel down-after-milliseconds $SENTINEL_MASTER 5000
sentinel failover-timeout $SENTINEL_MASTER 60000
EOF
  setsid nohup redis-server "$STATE/sentinel.conf" --sentinel >/dev/null 2>&1 </dev/null &
  pidfile_write "$STATE/sentinel.pid" $!
  wait_for sentinel sentinel_ready
  say "sentinel up 127.0.0.1:$SENTINEL_PORT, master $SENTINEL_MASTER at 127.0.0.1:$REDIS_PORT in $(elapsed "$t0")"
}

# sentinel_follow: a running Sentinel watches the Redis where it now is (its
# port may have changed when it started again).
sentinel_follow() {
  pid_alive sentinel || return 0
  sentinel_ready && return 0
  timeout 2 redis-cli -p "$SENTINEL_PORT" sentinel remove "$SENTINEL_MASTER" >/dev/null 2>&1 || true
  timeout 2 redis-cli -p "$SENTINEL_PORT" sentinel monitor "$SENTINEL_MASTER" 127.0.0.1 "$REDIS_PORT" 1 >/dev/null 2>&1 || true
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
  pid=$(pidfile_pid "$f")
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

# kill_svc SERVICE: SIGKILLs a node this stack started (cluster/NAME,
# galera/NAME: $STATE/galera leads to the Galera state) and waits until it is
# gone: a crash, with no shutdown of its own, for the modes' kill verbs.
kill_svc() {
  local f=$STATE/$1.pid name=${1##*/} pid
  pid_alive "$1" || die "$name is not running under this stack"
  pid=$(pidfile_pid "$f")
  kill -KILL "$pid"
  while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
  rm -f "$f"
  say "$name killed (SIGKILL)"
}

start_svc() {
  case $1 in
  kafka) start_kafka ;;
  mysql) start_mysql ;;
  redis) start_redis ;;
  sentinel) start_sentinel ;;
  *) die "unknown service $1 (kafka, mysql, redis, sentinel)" ;;
  esac
}

# ---------------------------------------------------------------- env

env_plain() {
  cat <<EOF
export FLASHSALE_MYSQL_DSN='$MYSQL_USER:$MYSQL_PASS@tcp(127.0.0.1:$MYSQL_PORT)/$MYSQL_DB'
export FLASHSALE_REDIS_ADDR='127.0.0.1:$REDIS_PORT'
export FLASHSALE_KAFKA_BROKERS='127.0.0.1:$KAFKA_PORT'
export FLASHSALE_JWT_SECRET='${FLASHSALE_JWT_SECRET:-$(jwt_secret)}'
export FLASHSALE_STACK='$REPO/deploy/local/stack.sh'
EOF
}

# env --tls: every client over TLS with credentials, secrets by file only
# (the files are made here if the stack has not made them yet; a service
# started before they existed does not know them until it starts again).
env_tls() {
  local f
  for f in kafka-sasl-password redis-password mysql-tls-password; do state_secret "$f" >/dev/null; done
  cat <<EOF
export FLASHSALE_KAFKA_BROKERS='127.0.0.1:$KAFKA_SASL_PORT'
export FLASHSALE_KAFKA_TLS=true
export FLASHSALE_KAFKA_TLS_CA_FILE='$TLS/ca.pem'
export FLASHSALE_KAFKA_SASL_MECHANISM=SCRAM-SHA-512
export FLASHSALE_KAFKA_SASL_USERNAME=$KAFKA_SASL_USER
export FLASHSALE_KAFKA_SASL_PASSWORD_FILE='$STATE/kafka-sasl-password'
unset FLASHSALE_REDIS_ADDR # FLASHSALE_REDIS_URL replaces it
export FLASHSALE_REDIS_URL='rediss://$REDIS_TLS_USER@127.0.0.1:$REDIS_TLS_PORT'
export FLASHSALE_REDIS_PASSWORD_FILE='$STATE/redis-password'
export FLASHSALE_REDIS_TLS_CA_FILE='$TLS/ca.pem'
export FLASHSALE_MYSQL_DSN='$MYSQL_TLS_USER@tcp(127.0.0.1:$MYSQL_PORT)/$MYSQL_DB'
export FLASHSALE_MYSQL_PASSWORD_FILE='$STATE/mysql-tls-password'
export FLASHSALE_MYSQL_TLS_CA_FILE='$TLS/ca.pem'
export FLASHSALE_JWT_SECRET='${FLASHSALE_JWT_SECRET:-$(jwt_secret)}'
export FLASHSALE_STACK='$REPO/deploy/local/stack.sh'
# sentinel (plain, instead of FLASHSALE_REDIS_URL; stack.sh env --sentinel):
# sentinel: export FLASHSALE_REDIS_MODE=sentinel
# sentinel: export FLASHSALE_REDIS_ADDR='127.0.0.1:$SENTINEL_PORT'
# sentinel: export FLASHSALE_REDIS_SENTINEL_MASTER=$SENTINEL_MASTER
EOF
}

# env --sentinel: plain env, Redis found through the Sentinel.
env_sentinel() {
  env_plain | grep -v '^export FLASHSALE_REDIS_ADDR='
  cat <<EOF
unset FLASHSALE_REDIS_URL
export FLASHSALE_REDIS_MODE=sentinel
export FLASHSALE_REDIS_ADDR='127.0.0.1:$SENTINEL_PORT'
export FLASHSALE_REDIS_SENTINEL_MASTER=$SENTINEL_MASTER
EOF
}

# ---------------------------------------------------------------- check-tls

# check-tls tries every TLS listener with real clients, each call bounded by
# a timeout: the handshake and certificate (openssl s_client, verified
# against ca.pem and 127.0.0.1), a login with the right password, and one
# with a wrong password or without TLS that must be refused. Passwords go to
# the clients by environment or a mode-600 file, never on a command line or
# in the output. Exit status 1 when any check failed.
tls_checks_failed=0
tls_secrets=()
# tls_check WANT DESCRIPTION COMMAND...: one check, one line. WANT is ok (the
# command succeeds) or refused:PATTERN (it fails, and says PATTERN: refused
# for the reason checked, not merely unreachable).
tls_check() {
  local want=$1 what=$2 out rc=0 p
  shift 2
  out=$("$@" 2>&1) || rc=$?
  if [[ $want == ok && $rc == 0 ]] || [[ $want == refused:* && $rc != 0 && $out == *"${want#refused:}"* ]]; then
    say "ok   $what"
  else
    say "FAIL $what"
    for p in "${tls_secrets[@]}"; do out=${out//$p/<password>}; done
    printf '%s\n' "$out" | tail -n 5 | sed 's/^/     /'
    tls_checks_failed=$((tls_checks_failed + 1))
  fi
}

tls_handshake() { # port [s_client args...]: the server certificate verifies for 127.0.0.1
  local port=$1 out
  shift
  out=$(timeout 10 openssl s_client -connect "127.0.0.1:$port" -CAfile "$TLS/ca.pem" -verify_return_error \
    -verify_ip 127.0.0.1 -brief "$@" </dev/null 2>&1) || { echo "$out"; return 1; }
  grep -q '^Verification: OK' <<<"$out" || { echo "$out"; return 1; }
  grep '^Protocol version' <<<"$out"
}

redis_tls_as() { # password command...: redis-cli over TLS as the ACL user
  local pass=$1
  shift
  REDISCLI_AUTH=$pass timeout 10 redis-cli --tls --cacert "$TLS/ca.pem" -h 127.0.0.1 -p "$REDIS_TLS_PORT" \
    --user "$REDIS_TLS_USER" --no-auth-warning "$@" | tr -d '\r'
}
redis_tls_ping() { [[ $(redis_tls_as "$1" ping) == PONG ]]; }
redis_tls_whoami() { local out; out=$(redis_tls_as "$1" acl whoami 2>&1); echo "$out"; [[ $out == "$REDIS_TLS_USER" ]]; }
redis_plain_ping() { [[ $(timeout 5 redis-cli -h 127.0.0.1 -p "$REDIS_PORT" ping) == PONG ]]; }

sentinel_master_ok() {
  local flags
  sentinel_ready || { timeout 2 redis-cli -p "$SENTINEL_PORT" sentinel get-master-addr-by-name "$SENTINEL_MASTER"; return 1; }
  local out
  out=$(timeout 2 redis-cli -p "$SENTINEL_PORT" sentinel master "$SENTINEL_MASTER") || return 1
  flags=$(awk 'p {print; exit} $0 == "flags" {p = 1}' <<<"$out")
  echo "flags $flags"
  [[ $flags == master ]]
}

mysql_tls_as() { # password mariadb-args...: user flashsale_tls
  local pass=$1
  shift
  MYSQL_PWD=$pass timeout 10 mariadb --no-defaults --protocol=tcp -h127.0.0.1 -P"$MYSQL_PORT" -u"$MYSQL_TLS_USER" \
    --connect-timeout=5 "$@" "$MYSQL_DB"
}
mysql_tls_cipher() {
  local out
  out=$(mysql_tls_as "$1" --ssl --ssl-ca="$TLS/ca.pem" --ssl-verify-server-cert -N -e "SHOW STATUS LIKE 'Ssl_cipher'") || return 1
  echo "$out"
  [[ $(awk '{print $2}' <<<"$out") != "" ]]
}

# kafka_sasl_login MECHANISM PASSWORD: Kafka's own Java client (kafka-configs,
# an admin request) over SASL_SSL, the CA as its PEM truststore and the
# server's name checked (https). Not kcat: Debian 12's librdkafka 2.0.2 sends
# a SCRAM client-final-message that Kafka 4.x rejects as invalid credentials
# (librdkafka#4895, fixed in 2.6.1), whatever the password.
kafka_sasl_login() {
  local cfg rc=0 out
  cfg=$(mktemp "$STATE/.kafka-client.XXXXXX")
  cat >"$cfg" <<EOF
security.protocol=SASL_SSL
sasl.mechanism=$1
sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="$KAFKA_SASL_USER" password="$2";
ssl.truststore.type=PEM
ssl.truststore.location=$TLS/ca.pem
ssl.endpoint.identification.algorithm=https
request.timeout.ms=15000
default.api.timeout.ms=20000
EOF
  out=$(kafka_configs --bootstrap-server "127.0.0.1:$KAFKA_SASL_PORT" --command-config "$cfg" --describe \
    --entity-type users --entity-name "$KAFKA_SASL_USER" 2>&1) || rc=$?
  rm -f "$cfg"
  echo "$out"
  ((rc == 0)) && grep -q "SCRAM credential configs for user-principal '$KAFKA_SASL_USER'" <<<"$out"
}
# kafka_plain_metadata: the broker lists itself in its metadata. The output
# is read whole before it is matched: kcat piped into grep -q under pipefail
# reported a healthy broker as down whenever grep left first.
kafka_plain_metadata() {
  local out
  out=$(timeout 20 kcat -b "127.0.0.1:$KAFKA_PORT" -L -m 8) || return 1
  [[ $out == *"at 127.0.0.1:$KAFKA_PORT"* ]]
}

check_tls() {
  command -v openssl >/dev/null || apt_install openssl
  command -v kcat >/dev/null || apt_install kcat
  [[ -f $KAFKA_LIBS/kafka_2.13-$KAFKA_VERSION.jar ]] || die "no Kafka jars in $KAFKA_LIBS: stack.sh up fetches them"
  [[ -s $TLS/ca.pem ]] || die "no $TLS/ca.pem: stack.sh up makes it"
  local kpass rpass mpass wrong
  kpass=$(state_secret kafka-sasl-password)
  rpass=$(state_secret redis-password)
  mpass=$(state_secret mysql-tls-password)
  wrong=not-the-password-$RANDOM
  tls_secrets=("$kpass" "$rpass" "$mpass")
  say "server certificate: $(openssl x509 -noout -subject -ext subjectAltName -in "$TLS/server.pem" | tr '\n' ' ' | tr -s ' ')"
  tls_check ok "redis 127.0.0.1:$REDIS_TLS_PORT: TLS handshake, certificate verified" tls_handshake "$REDIS_TLS_PORT"
  tls_check ok "redis 127.0.0.1:$REDIS_TLS_PORT: $REDIS_TLS_USER PING = PONG" redis_tls_ping "$rpass"
  tls_check ok "redis 127.0.0.1:$REDIS_TLS_PORT: ACL WHOAMI = $REDIS_TLS_USER" redis_tls_whoami "$rpass"
  tls_check refused:WRONGPASS "redis 127.0.0.1:$REDIS_TLS_PORT: a wrong password is refused" redis_tls_whoami "$wrong"
  tls_check ok "redis 127.0.0.1:$REDIS_PORT: plaintext PING = PONG, no password" redis_plain_ping
  tls_check ok "sentinel 127.0.0.1:$SENTINEL_PORT: master $SENTINEL_MASTER at 127.0.0.1:$REDIS_PORT, up" sentinel_master_ok
  tls_check ok "mysql 127.0.0.1:$MYSQL_PORT: TLS handshake (STARTTLS), certificate verified" tls_handshake "$MYSQL_PORT" -starttls mysql
  tls_check ok "mysql 127.0.0.1:$MYSQL_PORT: $MYSQL_TLS_USER over TLS, Ssl_cipher set" mysql_tls_cipher "$mpass"
  tls_check refused:"Access denied" "mysql 127.0.0.1:$MYSQL_PORT: $MYSQL_TLS_USER without TLS is refused" mysql_tls_as "$mpass" --skip-ssl -e "SELECT 1"
  tls_check refused:"Access denied" "mysql 127.0.0.1:$MYSQL_PORT: $MYSQL_TLS_USER with a wrong password is refused" mysql_tls_as "$wrong" --ssl --ssl-ca="$TLS/ca.pem" -e "SELECT 1"
  tls_check ok "mysql 127.0.0.1:$MYSQL_PORT: $MYSQL_USER still logs in without TLS" mysql_app --skip-ssl -e "SELECT 1" "$MYSQL_DB"
  tls_check ok "kafka 127.0.0.1:$KAFKA_SASL_PORT: TLS handshake, certificate verified" tls_handshake "$KAFKA_SASL_PORT"
  tls_check ok "kafka 127.0.0.1:$KAFKA_SASL_PORT: SASL_SSL SCRAM-SHA-512 login (Java client)" kafka_sasl_login SCRAM-SHA-512 "$kpass"
  tls_check ok "kafka 127.0.0.1:$KAFKA_SASL_PORT: SASL_SSL SCRAM-SHA-256 login (Java client)" kafka_sasl_login SCRAM-SHA-256 "$kpass"
  tls_check refused:SaslAuthenticationException "kafka 127.0.0.1:$KAFKA_SASL_PORT: a wrong password is refused" kafka_sasl_login SCRAM-SHA-512 "$wrong"
  tls_check ok "kafka 127.0.0.1:$KAFKA_PORT: plaintext metadata" kafka_plain_metadata
  if ((tls_checks_failed)); then die "check-tls: $tls_checks_failed check(s) failed"; fi
  say "check-tls: every check passed"
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
# With IP PORT CPORT DIR VOTERS it is the same broker on another address
# (stack.sh serve kafka: a broker in a test's network namespace).
cluster_kafka_properties() {
  local n=$1 ip=${2:-127.0.0.1} port=${3:-$(cluster_kafka_port "$1")} cport=${4:-$(cluster_controller_port "$1")}
  local dir=${5:-$CSTATE/kafka-$1} voters=${6:-} m vs=()
  if [[ -z $voters ]]; then
    for m in "${CLUSTER_KAFKA_NODES[@]}"; do vs+=("$m@127.0.0.1:$(cluster_controller_port "$m")"); done
    voters=$(IFS=,; echo "${vs[*]}")
  fi
  cat <<PROPS
process.roles=broker,controller
node.id=$n
controller.quorum.voters=$voters
listeners=PLAINTEXT://$ip:$port,CONTROLLER://$ip:$cport
advertised.listeners=PLAINTEXT://$ip:$port
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
  if pid_alive "cluster/$1"; then ps -o rss= -p "$(pidfile_pid "$CSTATE/$1.pid")" | tr -d ' '; else echo 0; fi
}

cluster_status() {
  local n p name pid state role kib total_k=0 total_r=0
  for name in $(cluster_nodes); do
    if ! pid_alive "cluster/$name"; then say "$name not running"; continue; fi
    pid=$(pidfile_pid "$CSTATE/$name.pid")
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
  local cmd=$1 name=$2
  node_known "$name" cluster_nodes
  case $cmd in
  start)
    case $name in
    kafka-*) start_cluster_kafka "${name#kafka-}" ;;
    redis-*) start_cluster_redis "${name#redis-}" ;;
    esac
    ;;
  stop)
    # A paused node must run to handle SIGTERM.
    pid_alive "cluster/$name" && kill -CONT "$(pidfile_pid "$CSTATE/$name.pid")"
    stop_svc "cluster/$name"
    ;;
  kill) kill_svc "cluster/$name" ;;
  pause | resume)
    pid_alive "cluster/$name" || die "$name is not running under this stack"
    if [[ $cmd == pause ]]; then kill -STOP "$(pidfile_pid "$CSTATE/$name.pid")"; else kill -CONT "$(pidfile_pid "$CSTATE/$name.pid")"; fi
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
      kill -CONT "$(pidfile_pid "$CSTATE/$name.pid")" 2>/dev/null || true
      kill -TERM "$(pidfile_pid "$CSTATE/$name.pid")" 2>/dev/null || true
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
  node) node_known "${2:?node: $(cluster_nodes | tr '\n' ' ')}" cluster_nodes && say "$2 is a node of the cluster mode" ;;
  where)
    case ${2:-} in
    orders-partition) cluster_where_partition "${3:?partition}" "${4:-}" ;;
    item) cluster_where_item "${3:?item id}" ;;
    *) die "usage: stack.sh where --cluster orders-partition N [TOPIC] | item ID" ;;
    esac
    ;;
  *) die "usage: stack.sh up|down|status|env|start NODE|stop NODE|kill NODE|pause NODE|resume NODE|node NAME|where orders-partition N [TOPIC]|where item ID --cluster" ;;
  esac
}

# ---------------------------------------------------------------- serve
#
# stack.sh serve SVC --ip IP --dir DIR [--port P]: one server in the
# foreground (the script execs it; its log on stdout), listening on IP only,
# its state in DIR, with the settings the stack's own servers have. A test
# runs it inside a network namespace of its own (internal/nemesis,
# faults/hosts_test.go) and kills it when done.
#
#   serve redis --ip IP --dir DIR [--port 6379]
#   serve mysql --ip IP --dir DIR [--port 3306]   user flashsale (password flashsale) from any
#                                                 address, every privilege (the tests make databases)
#   serve kafka --ip IP --dir DIR --node-id N --voters 1@IP1:9093,2@IP2:9093,... --cluster-id ID
#               [--port 9092 --controller-port 9093]   a broker and controller of the cluster mode
#   serve kafka-id                                prints a fresh cluster id

serve_main() {
  local svc=${1:?usage: stack.sh serve redis|mysql|kafka|kafka-id ...} ip="" dir="" port="" cport=9093 node="" voters="" cid=""
  shift
  while (($#)); do
    case $1 in
    --ip) ip=$2 ;;
    --dir) dir=$2 ;;
    --port) port=$2 ;;
    --controller-port) cport=$2 ;;
    --node-id) node=$2 ;;
    --voters) voters=$2 ;;
    --cluster-id) cid=$2 ;;
    *) die "serve: unknown argument $1" ;;
    esac
    shift 2
  done
  if [[ $svc == kafka-id ]]; then
    install_kafka >&2
    kafka_random_id
    return
  fi
  [[ -n $ip && -n $dir ]] || die "serve $svc: --ip and --dir are required"
  mkdir -p "$dir"
  case $svc in
  redis)
    exec redis-server --port "${port:-6379}" --bind "$ip" --dir "$dir" --daemonize no --protected-mode no \
      "${REDIS_DURABILITY[@]}"
    ;;
  mysql)
    if [[ ! -d $dir/data/mysql ]]; then
      mariadb-install-db --no-defaults --user=root --datadir="$dir/data" --auth-root-authentication-method=socket \
        --skip-test-db >"$dir/install.log" 2>&1 || die "mariadb-install-db failed: $dir/install.log"
    fi
    cat >"$dir/init.sql" <<SQL
CREATE USER IF NOT EXISTS '$MYSQL_USER'@'%' IDENTIFIED BY '$MYSQL_PASS';
GRANT ALL PRIVILEGES ON *.* TO '$MYSQL_USER'@'%' WITH GRANT OPTION;
CREATE DATABASE IF NOT EXISTS $MYSQL_DB CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;
SQL
    exec mariadbd --no-defaults --user=root --datadir="$dir/data" --socket="$dir/mysql.sock" \
      --port="${port:-3306}" --bind-address="$ip" --pid-file="$dir/mysqld.pid" --init-file="$dir/init.sql" \
      "${MARIADB_SETTINGS[@]}" --innodb-buffer-pool-size=128M
    ;;
  kafka)
    [[ -n $node && -n $voters && -n $cid ]] || die "serve kafka: --node-id, --voters and --cluster-id are required"
    install_kafka >&2
    cluster_kafka_properties "$node" "$ip" "${port:-9092}" "$cport" "$dir" "$voters" >"$dir/server.properties"
    kafka_log4j "$dir/log4j2.properties"
    local java_opts=(-Xms128m -Xmx$CLUSTER_KAFKA_HEAP -XX:+UseG1GC -Djava.awt.headless=true
      -Dlog4j2.configurationFile="$dir/log4j2.properties")
    [[ -f $dir/data/meta.properties ]] || kafka_format "$dir" "$cid" "$dir/format.log" "${java_opts[@]}"
    exec java "${java_opts[@]}" -cp "$KAFKA_LIBS/*" kafka.Kafka "$dir/server.properties"
    ;;
  *) die "serve: unknown service $svc (redis, mysql, kafka, kafka-id)" ;;
  esac
}

if [[ ${1:-} == serve ]]; then
  shift
  serve_main "$@"
  exit
fi

# ---------------------------------------------------------------- main

ports_load

if [[ " $* " == *" --galera "* ]]; then
  # shellcheck source=deploy/local/galera.sh
  source "$REPO/deploy/local/galera.sh"
  args=()
  for a in "$@"; do [[ $a == --galera ]] || args+=("$a"); done
  galera_main "${args[@]}"
  exit
fi

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
  start_sentinel
  start_kafka
  ;;
down)
  for s in kafka sentinel redis mysql; do stop_svc $s; done
  ;;
start) start_svc "${2:?service}" ;;
stop) stop_svc "${2:?service}" ;;
pause | resume)
  svc=${2:?service}
  pid_alive "$svc" || die "$svc is not running under this stack"
  if [[ $cmd == pause ]]; then kill -STOP "$(pidfile_pid "$STATE/$svc.pid")"; else kill -CONT "$(pidfile_pid "$STATE/$svc.pid")"; fi
  say "$svc ${cmd}d"
  ;;
wipe-redis)
  stop_svc redis
  rm -rf "$STATE/redis"
  start_redis
  ;;
status)
  for s in kafka mysql redis sentinel; do
    case $s in
    kafka) where="127.0.0.1:$KAFKA_PORT, SASL_SSL $KAFKA_SASL_PORT, controller $KAFKA_CONTROLLER_PORT" ;;
    mysql) where="127.0.0.1:$MYSQL_PORT" ;;
    redis) where="127.0.0.1:$REDIS_PORT, TLS $REDIS_TLS_PORT" ;;
    sentinel) where="127.0.0.1:$SENTINEL_PORT" ;;
    esac
    if pid_alive $s; then say "$s running (pid $(pidfile_pid "$STATE/$s.pid"), $where)"; else say "$s not running"; fi
  done
  ;;
env)
  case ${2:-} in
  "") env_plain ;;
  --tls) env_tls ;;
  --sentinel) env_sentinel ;;
  *) die "usage: stack.sh env [--tls|--sentinel|--cluster]" ;;
  esac
  ;;
check-tls) check_tls ;;
ports)
  # ports SVC: the ports SVC would start on now (the recorded ones while
  # free), recorded as start records them; deploy/scripts_test.go asks.
  case ${2:-} in
  kafka) pick_port kafka KAFKA_PORT KAFKA_CONTROLLER_PORT KAFKA_SASL_PORT ;;
  mysql) pick_port mysql MYSQL_PORT ;;
  redis) pick_port redis REDIS_PORT REDIS_TLS_PORT ;;
  sentinel) pick_port sentinel SENTINEL_PORT ;;
  *) die "usage: stack.sh ports kafka|mysql|redis|sentinel" ;;
  esac
  grep -v '^#' "$STATE/ports"
  ;;
probe)
  # probe kafka-metadata: the readiness probe check-tls makes of the
  # plaintext listener, alone (deploy/scripts_test.go calls it repeatedly).
  [[ ${2:-} == kafka-metadata ]] || die "usage: stack.sh probe kafka-metadata"
  command -v kcat >/dev/null || apt_install kcat
  kafka_plain_metadata || die "kafka 127.0.0.1:$KAFKA_PORT: no metadata naming itself"
  say "kafka 127.0.0.1:$KAFKA_PORT lists itself"
  ;;
*) die "usage: stack.sh up|down|status|env [--tls|--sentinel]|check-tls|probe kafka-metadata|ports SVC|start SVC|stop SVC|pause SVC|resume SVC|wipe-redis" ;;
esac
