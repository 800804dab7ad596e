# flashsale — the two commands a newcomer needs are `make run` and `make test`.
SHELL := /bin/bash
STACK := deploy/local/stack.sh
GO ?= go
# The local stack's settings, unless the caller already exported FLASHSALE_*.
STACK_ENV = eval "$$($(STACK) env)" &&
CLUSTER_ENV = eval "$$($(STACK) env --cluster)" &&
# The same stack reached over TLS with credentials, as a managed service is:
# Kafka SASL_SSL (SCRAM-SHA-512), Redis TLS with an ACL user, MariaDB TLS
# with a REQUIRE SSL user (deploy/local/stack.sh env --tls).
TLS_ENV = eval "$$($(STACK) env --tls)" &&
# The Galera mode: three MariaDB Galera nodes written through one HAProxy
# writer (deploy/local/galera.sh), with the single node's Redis and Kafka.
GALERA_ENV = eval "$$($(STACK) env --galera)" &&
GOTEST_FLAGS ?= -race -count=1 -timeout 30m
# make test's step times (deploy/local/timings.sh prints them).
TIMINGS := bin/test-timings.tsv
# $(call timed,NAME,COMMAND): run COMMAND, record its wall time under NAME;
# a failing step prints the table so far and fails make with its status.
timed = t0=$$(date +%s); rc=0; { $(2); } || rc=$$?; \
	printf '%s\t%s\t%s\n' '$(1)' $$(($$(date +%s) - t0)) $$rc >>$(TIMINGS); \
	if ((rc)); then deploy/local/timings.sh $(TIMINGS); exit $$rc; fi

.PHONY: report-deps report-assets run test test-unit lint generate test-tls test-faults test-cluster test-cluster-reduced test-faults-cluster cluster-up galera-up test-faults-galera test-netfaults bench stack-up stack-down stack-status env setup build vet fmt lint clean

## run: bring up the stack, migrate, start the pipeline and run the demo flash
## sale, every connection over TLS with credentials (stack.sh env --tls)
run: stack-up setup build
	@$(TLS_ENV) deploy/local/run.sh

# Every benchmark once, given to the test binaries themselves: go test's own
# -bench runs the packages one after another ("Force benchmarks to run in
# serial", cmd/go), which made go-test 514 s instead of about 300 here.
BENCH_ONCE = -test.bench=. -test.benchtime=1x
# go-test runs two packages at a time (one a core, go test's default here).
# Three took 232 s warm where two took 303 s, but on a cold cache the first
# packages' tests then run beside three compiles, and bench's
# TestQueueHoldsBotsToTheirShare failed (cold run 25: the humans' orders
# with grants answered in 1.1 s at p50, and the bots won 31 of 60 units).

## test: bring up the stack and run every test: the lint (scripts, gofmt,
## vet), then the stack (run beside lint in cold runs 24-26, it saved
## nothing measurable: lint took 4:23-4:31 beside it, 4:24 before it in run
## 27, for a stack-up of 0:13-0:19), then unit, integration and race
## tests in parallel with every Go benchmark once in the same binaries
## (-benchtime 1x: a benchmark that breaks fails CI instead of rotting
## unseen; a separate non-race run of them built every test binary a second
## time), the API contract
## (Schemathesis against a real ingress, deploy/contract/run.sh), the
## reduced fault suite alone (it stops servers; it includes the reduced
## network faults on test hosts in namespaces and the history checks), the
## reduced cluster run (test-cluster-reduced), then the Galera writer loss
## (test-faults-galera). Each step's wall time is printed as a table at the
## end, or where a step failed.
test:
	@mkdir -p bin && rm -f $(TIMINGS)
	@$(call timed,lint,$(MAKE) --no-print-directory lint)
	@$(call timed,stack-up,$(MAKE) --no-print-directory stack-up setup report-deps)
	@$(call timed,go-test,$(STACK_ENV) $(GO) test $(GOTEST_FLAGS) ./... -args $(BENCH_ONCE))
	@$(call timed,test-tls,$(MAKE) --no-print-directory test-tls)
	@$(call timed,contract,$(STACK_ENV) deploy/contract/run.sh)
	@$(call timed,faults-reduced,$(STACK_ENV) $(GO) test -tags faults -count=1 -p 1 -timeout 40m ./faults/)
	@$(call timed,cluster-reduced,$(MAKE) --no-print-directory test-cluster-reduced)
	@$(call timed,galera,$(MAKE) --no-print-directory test-faults-galera)
	@deploy/local/timings.sh $(TIMINGS)

## test-unit: the logic's tests alone, with no stack running and none
## started: go test -short -race ./... (every test that needs Kafka, Redis,
## MySQL or a server binary skips under -short with its reason). Needs
## only Go. docs/testing.md lists the tiers.
test-unit:
	@$(GO) test -short -race -count=1 ./...

## lint: what make test checks first, in seconds: no pipe into an
## early-exiting reader in the scripts (deploy/local/lint-scripts.sh),
## gofmt, go vet of every build tag
lint: vet
	@deploy/local/lint-scripts.sh

## test-cluster-reduced: what make test runs on the local clusters: the
## cluster tests, then five of the cluster fault tests (the orders' leader
## broker SIGKILLed, the sale item's Redis primary SIGKILLed with and
## without WAIT, one primary SIGSTOPped, and one cut off from the ingress
## alone, while the others serve, the item's slot migrated under long
## polls); test-faults-cluster runs all of them
test-cluster-reduced: test-cluster
	@$(CLUSTER_ENV) $(GO) test -tags 'faults cluster' -count=1 -p 1 -timeout 20m -run '^TestCluster(LeaderKilled|RedisPrimaryKilled|RedisPrimaryStalled|RedisPrimaryPartitioned|SlotMigrationLongPolls)$$' ./faults/

## test-tls: what make test runs over TLS and credentials: every listener of
## the stack tried with real clients (stack.sh check-tls), the Go tests of
## build tag tls (logins, wrong passwords, untrusted CAs, plaintext against
## TLS ports, Sentinel), then the whole pipeline (ingress, 2 consumers,
## reaper) and a demo sale with its audit over SASL_SSL, rediss and MySQL TLS
test-tls: stack-up setup build
	@$(STACK) check-tls
	@$(TLS_ENV) $(GO) test $(GOTEST_FLAGS) -tags tls -run '^Test(TLS|MySQLOverTLS|Sentinel)' ./pkg/config/ ./pkg/orderlog/ ./pkg/stock/
	@$(TLS_ENV) $(GO) run ./setup >/dev/null
	@rc=0; $(TLS_ENV) FLASHSALE_DEMO_ARGS='-buyers 5000 -units 200' deploy/local/run.sh || rc=$$?; deploy/local/run.sh stop >/dev/null; exit $$rc

## test-faults: the full fault-injection suite (kills and cuts servers)
test-faults: stack-up setup
	@$(STACK_ENV) FLASHSALE_FAULTS=full $(GO) test -tags faults -count=1 -p 1 -timeout 60m -v ./faults/

## galera-up: the local stack's Galera mode beside the single-node stack:
## three MariaDB Galera nodes and an HAProxy writer (stack.sh up --galera)
galera-up:
	@$(STACK) up --galera

## test-faults-galera: bring the Galera mode up, run setup on it, then the
## Galera fault tests (build tags faults and galera): the writer SIGKILLed
## mid-sale, and the hot-row conflict measurement
test-faults-galera: stack-up galera-up
	@$(GO) vet -tags 'faults galera' ./faults/
	@$(GALERA_ENV) $(GO) run ./setup >/dev/null
	@$(GALERA_ENV) $(GO) test -tags 'faults galera' -count=1 -p 1 -timeout 20m -v -run '^TestGalera' ./faults/

## test-netfaults: the nemesis and the network faults alone, full length
## (servers of their own in network namespaces; needs root)
test-netfaults: build
	@$(GO) test -count=1 -v ./internal/nemesis/
	@FLASHSALE_FAULTS=full $(GO) test -tags faults -count=1 -p 1 -timeout 20m -v -run '^TestNetFaults$$' ./faults/

## generate: rewrite what is generated from a source in the repository
## (deploy/k8s/monitoring's PrometheusRule and dashboard ConfigMap, from
## deploy/prometheus/alerts.yml and the Grafana dashboard); a test fails
## when they differ
generate:
	@$(GO) generate ./deploy/monitoringgen

## bench: Go benchmarks of the hot paths
bench: stack-up setup
	@$(STACK_ENV) $(GO) test -run '^$$' -bench . -benchtime 2s ./...

## cluster-up: the local stack's cluster mode beside the single-node stack:
## 3 Kafka brokers (KRaft), a Redis Cluster of 3 primaries and 3 replicas,
## the same MariaDB (deploy/local/stack.sh up --cluster)
cluster-up:
	@$(STACK) up --cluster

## test-cluster: bring the cluster up, run setup on it, then the tests of
## build tag cluster (stores and topics on the clusters) against it
test-cluster: cluster-up
	@$(GO) vet -tags cluster ./pkg/stock/ ./pkg/orderstatus/ ./pkg/reap/ ./pkg/orderlog/ ./pkg/rebalance/
	@$(CLUSTER_ENV) $(GO) run ./setup
	@$(CLUSTER_ENV) $(GO) test $(GOTEST_FLAGS) -tags cluster -run Cluster ./pkg/stock/ ./pkg/orderstatus/ ./pkg/reap/ ./pkg/orderlog/ ./pkg/rebalance/

## test-faults-cluster: bring the cluster up, run setup on it, then the
## cluster fault tests (a broker or a Redis primary killed, paused or
## stopped mid-sale; build tags faults and cluster) alone against it
test-faults-cluster: cluster-up
	@$(GO) vet -tags 'faults cluster' ./faults/
	@$(CLUSTER_ENV) $(GO) run ./setup
	@$(CLUSTER_ENV) $(GO) test -tags 'faults cluster' -count=1 -p 1 -timeout 30m -v -run '^TestCluster' ./faults/

stack-up:
	@$(STACK) up

stack-down:
	@$(STACK) down

stack-status:
	@$(STACK) status

## env: the FLASHSALE_* settings of the local stack: eval "$(make -s env)"
env:
	@$(STACK) env

## report-deps: what bench's HTML report needs (ECharts, committed, checked by checksum,
## embedded into bench) and Chromium for its browser test (Debian package)
report-deps:
	@deploy/local/report-deps.sh all

report-assets:
	@deploy/local/report-deps.sh assets

## setup: apply migrations and create Kafka topics (idempotent)
setup:
	@$(STACK_ENV) $(GO) run ./setup

# The build's identity for -version and flashsale_build_info (pkg/buildinfo),
# set explicitly: GOFLAGS=-buildvcs=false, common on CI, drops the stamp.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo unknown)
REVISION ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
BUILDINFO = github.com/flashsale-dev/flashsale/pkg/buildinfo
LDFLAGS = -X $(BUILDINFO).Version=$(VERSION) -X $(BUILDINFO).Revision=$(REVISION)

build: report-assets
	@mkdir -p bin && $(GO) build -ldflags "$(LDFLAGS)" -o bin/ ./ingress ./consumer ./reaper ./setup ./bench ./flashsalectl

# vet builds what it checks: with -race for what go-test and test-tls build
# with -race (their compile is then shared through the build cache, not done
# twice on a cold machine), without it for the fault suites, which the
# faults steps build without -race.
vet:
	@test -z "$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null; git ls-files -o --exclude-standard '*.go' 2>/dev/null))" || { echo "gofmt needed:"; gofmt -l .; exit 1; }
	@$(GO) vet -race ./...
	@$(GO) vet -tags faults ./faults/
	@$(GO) vet -tags 'faults cluster' ./faults/
	@$(GO) vet -tags 'faults galera' ./faults/
	@$(GO) vet -race -tags tls ./pkg/config/ ./pkg/orderlog/ ./pkg/stock/

fmt:
	@gofmt -w $$(git ls-files '*.go'; git ls-files -o --exclude-standard '*.go')

clean:
	rm -rf bin
