//go:build faults

package faults

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/flashsale-dev/flashsale/internal/nemesis"
	"github.com/flashsale-dev/flashsale/internal/testenv"
)

// maxRefusal bounds how long a buyer waits for a 503 under a network
// fault: the publish bound (PublishTimeout) plus the store bound
// (StoreTimeout) of the arbiter's abort, plus slack for a loaded machine.
func maxRefusal(cfg settings) time.Duration {
	return cfg.PublishTimeout + cfg.StoreTimeout + 3*time.Second
}

// TestNetFaults runs the network faults of issue 21 on one testbed (the
// servers in test hosts, started once: most of a minute on two cores):
//
//   - KafkaLeaderPartitioned: the ingress cut off from the broker leading
//     the sale's orders partition, and from it alone, mid-sale; healed.
//   - SlowLinks/{redis,kafka,mysql}: 200 ms ± 50 ms delay, then 5% loss,
//     on that server's link (every packet it sends) under load.
//
// The reduced suite (make test) runs the leader partition alone, about
// 1.5 min with the testbed's start; FLASHSALE_FAULTS=full runs every link
// too, with longer faults.
func TestNetFaults(t *testing.T) {
	b := newTestbed(t)
	t.Run("KafkaLeaderPartitioned", func(t *testing.T) { kafkaLeaderPartitioned(t, b) })
	if !full {
		return
	}
	t.Run("KafkaLeaderIsolated", func(t *testing.T) { kafkaLeaderIsolated(t, b) })
	for _, target := range []string{"redis", "kafka", "mysql"} {
		t.Run("SlowLinks/"+target, func(t *testing.T) { slowLinks(t, b, target) })
	}
}

// singlePartitionPipeline starts a pipeline on the testbed whose orders
// topic has one partition (one consumer, 3000 units), and returns once the
// partition is replicated on all three brokers.
func singlePartitionPipeline(t *testing.T, b *testbed) *pipeline {
	t.Helper()
	cfg := defaultSettings()
	cfg.Partitions, cfg.Consumers, cfg.Units = 1, 1, 3000
	cfg.OrphanGrace = 30 * time.Second
	p := newNetPipeline(t, b, cfg)
	p.startAll()
	waitReplicated(t, b, p.orders)
	return p
}

// leaderSale is the set-up of the leader faults: a pipeline on the
// testbed whose orders topic has one partition replicated on all three
// brokers, buyers arriving at 30/s, and the node id leading the partition
// (with its in-sync replicas) once 20 orders are in.
func leaderSale(t *testing.T, b *testbed, buyers int) (*pipeline, *workload, int, []int) {
	t.Helper()
	p := singlePartitionPipeline(t, b)
	w := p.start(burst(buyers, 30))
	waitAccepted(t, w, 20)
	id, isr, err := b.leader(context.Background(), p.orders)
	if err != nil {
		t.Fatal(err)
	}
	return p, w, id, isr
}

// kafkaLeaderPartitioned: the leader stays the leader (the other brokers
// and the controller still hear it), so no failover comes to the rescue:
// the ingress's publishes to it hang until PublishTimeout and are aborted
// through the arbiter (503), until the partition heals.
func kafkaLeaderPartitioned(t *testing.T, b *testbed) {
	start := time.Now()
	p, w, id, isr := leaderSale(t, b, pick(900, 1500))
	victim := b.brokerHost(id)
	ingress := b.net.Host("ingress")
	d := pick(10*time.Second, 20*time.Second)
	f, err := b.net.Partition(context.Background(), ingress, []*nemesis.Host{victim}, d+time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	cut := time.Now()
	t.Logf("partitioned %s from %s (leader of %s, in sync %v) for %v", ingress, victim, p.orders, isr, d)
	hold(d)
	if err := f.Heal(); err != nil {
		t.Fatal(err)
	}
	healed := time.Now()
	after, isrAfter, _ := b.leader(context.Background(), p.orders)
	rec := waitRecovered(w, healed, 30*time.Second)
	ph := phaseOf(w, "ingress | leader broker", cut, healed, rec)
	t.Logf("leader after the heal: node %d (in sync %v)", after, isrAfter)
	if rec.resumed {
		// Ten more orders after the recovery, then the burst ends: its
		// other buyers would add time, not evidence.
		w.finishAfterRecovery(t)
	}
	rep := p.settle(fmt.Sprintf("ingress partitioned from the leader broker %v", d), start, w)
	n := p.checkDurable(context.Background(), w)
	p.checkNetFault(w, rep, n, []phase{ph})
	if ph.n503 == 0 {
		t.Errorf("no 503 while the ingress was cut off from the leader: the fault did not reach the publishes (answers: %s)", ph.answers)
	}
}

// kafkaLeaderIsolated: the leader of the sale's partition cut off from
// every other host (the other brokers, so the controller quorum too, and
// the pipeline) for a while: the controller fences it after
// broker.session.timeout.ms (3 s), a follower in sync leads, and the
// ingress learns of it from the others' metadata (refreshed each second)
// while the partition is still in place. Publishes in flight to the old
// leader time out (503); then they go on with 2 of 3 replicas.
func kafkaLeaderIsolated(t *testing.T, b *testbed) {
	start := time.Now()
	p, w, id, isr := leaderSale(t, b, 1500)
	victim := b.brokerHost(id)
	var rest []*nemesis.Host
	for _, h := range b.net.Hosts() {
		if h != victim {
			rest = append(rest, h)
		}
	}
	const d = 20 * time.Second
	f, err := b.net.Partition(context.Background(), victim, rest, d+time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	cut := time.Now()
	t.Logf("isolated %s (leader of %s, in sync %v) from every other host for %v", victim, p.orders, isr, d)
	hold(d)
	failover := measureStall(w, cut)
	newLeader, newISR, _ := b.leaderExcept(context.Background(), p.orders, id)
	if err := f.Heal(); err != nil {
		t.Fatal(err)
	}
	healed := time.Now()
	back := waitReplicatedFor(t, b, p.orders)
	ph := phaseOf(w, "leader broker | everyone", cut, healed, failover)
	ph.since = "the fault"
	t.Logf("publish stall after isolating the leader: %v (answers meanwhile: %s); new leader node %d (in sync %v); all 3 in sync again %v after the heal",
		failover.took.Round(10*time.Millisecond), failover.answers, newLeader, newISR, back.Round(100*time.Millisecond))
	if !failover.resumed || failover.took >= d {
		t.Errorf("no 202 while the old leader was isolated for %v: leadership never moved to a follower the ingress reaches", d)
	}
	if newLeader == id {
		t.Errorf("node %d still leads %s for the other brokers after %v isolated", id, p.orders, d)
	}
	rep := p.settle(fmt.Sprintf("leader broker isolated from every host %v", d), start, w)
	n := p.checkDurable(context.Background(), w)
	p.checkNetFault(w, rep, n, []phase{ph})
}

// waitReplicatedFor is waitReplicated, returning how long it took.
func waitReplicatedFor(t *testing.T, b *testbed, topic string) time.Duration {
	start := time.Now()
	waitReplicated(t, b, topic)
	return time.Since(start)
}

// slowLinks: the target's links to the pipeline's hosts slowed (delay ±
// jitter on every packet the server sends them) for a while, then made
// lossy, while the burst goes on; each phase heals itself, and the next
// starts once a 202 has come back.
func slowLinks(t *testing.T, b *testbed, target string) {
	start := time.Now()
	p := singlePartitionPipeline(t, b)
	// The servers' links to the pipeline's hosts, not to each other (the
	// brokers' replication keeps its pace) nor to the test.
	clients := []*nemesis.Host{b.net.Host("ingress")}
	for _, pr := range append(append([]*proc{}, p.consumers...), p.reapers...) {
		clients = append(clients, b.net.Host(pr.name))
	}
	var hosts []*nemesis.Host
	switch target {
	case "redis":
		hosts = []*nemesis.Host{b.redis}
	case "mysql":
		hosts = []*nemesis.Host{b.mysql}
	case "kafka":
		hosts = b.kafka
	}
	d := pick(8*time.Second, 15*time.Second)
	const rps = 30
	w := p.start(burst(int(rps*(2*d+40*time.Second).Seconds()), rps))
	waitAccepted(t, w, 20)
	var phases []phase
	for _, fault := range []struct {
		name   string
		inject func(h *nemesis.Host) (*nemesis.Fault, error)
	}{
		{"200ms±50ms delay", func(h *nemesis.Host) (*nemesis.Fault, error) {
			return b.net.Delay(h, 200*time.Millisecond, 50*time.Millisecond, d, clients...)
		}},
		{"5% loss", func(h *nemesis.Host) (*nemesis.Fault, error) { return b.net.Loss(h, 0.05, d, clients...) }},
	} {
		var fs []*nemesis.Fault
		for _, h := range hosts {
			f, err := fault.inject(h)
			if err != nil {
				t.Fatal(err)
			}
			fs = append(fs, f)
		}
		from := time.Now()
		for _, f := range fs {
			<-f.Healed() // they heal themselves after d
		}
		to := time.Now()
		phases = append(phases, phaseOf(w, fault.name+" on "+target, from, to, waitRecovered(w, to, 30*time.Second)))
		hold(2 * time.Second)
	}
	rep := p.settle(fmt.Sprintf("%s link: delay then loss, %v each", target, d), start, w)
	n := p.checkDurable(context.Background(), w)
	p.checkNetFault(w, rep, n, phases)
	if target == "kafka" {
		// A 250 ms produce round trip must not cap a hot item's partition
		// at one tiny batch per round trip (about 4/s against 30 arriving):
		// the publisher gathers the partition's messages while a produce is
		// in flight (pkg/orderlog/publisher.go), so most orders are served.
		// Served: a 202 (a replay's too), or the 409 of a buyer who already
		// holds one (the workload's repeat buyers, about 1 in 10). A
		// published-202 count alone sat at 82% with nothing refused.
		ph := phases[0]
		as := w.answersBetween(ph.from, ph.to)
		served := 0
		for _, a := range as {
			if a.code == 202 || (a.code == 409 && a.errKey == "already_purchased") {
				served++
			}
		}
		if served*10 < len(as)*8 {
			t.Errorf("%s: %d of %d orders sent during the delay served (202, or 409 already_purchased), want at least 80%%", ph.fault, served, len(as))
		}
	}
}

// waitRecovered waits (up to limit) until a request sent after the heal
// at healed is answered a published 202, and returns the stall since.
func waitRecovered(w *workload, healed time.Time, limit time.Duration) stall {
	deadline := time.Now().Add(limit)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for ; ; <-tick.C {
		s := measureStall(w, healed)
		if s.resumed || time.Now().After(deadline) {
			return s
		}
	}
}

// waitReplicated waits until the orders partition has a leader and all
// three replicas in sync.
func waitReplicated(t *testing.T, b *testbed, topic string) {
	t.Helper()
	var last string
	testenv.Eventually(t, 2*time.Minute, 200*time.Millisecond, func() bool {
		id, isr, err := b.leader(context.Background(), topic)
		last = fmt.Sprint(id, isr, err)
		return err == nil && len(isr) == 3
	}, "%s never had 3 replicas in sync (last: %v)", topic, lazy(func() string { return last }))
}

// phase is what buyers saw while one fault was in place.
type phase struct {
	fault    string
	from, to time.Time
	answers  string
	n503     int
	codes503 map[string]int
	// refusal is the buyer-visible time to a 503 (sent to answered):
	// median and worst; latency the same for every answer.
	refusalP50, refusalMax time.Duration
	latencyP50, latencyP99 time.Duration
	accepted               int
	noCode                 int // 503s without a JSON error code
	recovered              stall
	// since names what recovered is measured from: "the heal", or "the
	// fault" for a fault the system routes around while it lasts.
	since string
}

func phaseOf(w *workload, fault string, from, to time.Time, rec stall) phase {
	as := w.answersBetween(from, to)
	ph := phase{fault: fault, from: from, to: to, answers: codes(as), codes503: map[string]int{}, recovered: rec, since: "the heal"}
	var all, refused []time.Duration
	for _, a := range as {
		lat := a.doneAt.Sub(a.sentAt)
		all = append(all, lat)
		switch {
		case a.code == 503:
			ph.n503++
			ph.codes503[a.errKey]++
			refused = append(refused, lat)
			if a.errKey == "" || a.errKey == "bad_json" {
				ph.noCode++
			}
		case w.published(a):
			ph.accepted++
		}
	}
	ph.latencyP50, ph.latencyP99 = quantile(all, 0.5), quantile(all, 0.99)
	ph.refusalP50, ph.refusalMax = quantile(refused, 0.5), quantile(refused, 1)
	return ph
}

// timeline counts the answers to requests sent in [from, to) by slices of
// step: "+0s 12/0/1 +2s 0/14/1 ...", so a recovery that stutters shows.
func timeline(w *workload, from, to time.Time, step time.Duration) string {
	as := w.answersBetween(from, to)
	n := int(to.Sub(from)/step) + 1
	type cell struct{ ok, refused, other int }
	cells := make([]cell, n)
	last := -1
	for _, a := range as {
		i := int(a.sentAt.Sub(from) / step)
		switch {
		case w.published(a):
			cells[i].ok++
		case a.code == 503:
			cells[i].refused++
		default:
			cells[i].other++
		}
		last = max(last, i)
	}
	var sb strings.Builder
	for i := 0; i <= last; i++ {
		fmt.Fprintf(&sb, "+%ds %d/%d/%d ", int((time.Duration(i) * step).Seconds()), cells[i].ok, cells[i].refused, cells[i].other)
	}
	return strings.TrimSpace(sb.String())
}

func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	ds = slices.Clone(ds)
	slices.Sort(ds)
	return ds[min(len(ds)-1, int(q*float64(len(ds))))]
}

// checkNetFault prints what each phase cost the buyers and checks the
// promises that hold under any network fault: a 202's message is in the log
// (checkDurable, counted in inLog) and it reached a terminal status
// (settle); a refusal is a 503 with a JSON code, within maxRefusal; a buyer
// answered only 503 unavailable holds nothing; every outcome_unknown was
// decided by the arbiter one way or the other.
func (p *pipeline) checkNetFault(w *workload, rep report, inLog int, phases []phase) {
	t := p.t
	var sb strings.Builder
	for _, ph := range phases {
		fmt.Fprintf(&sb, "\n---- %s (%v) ----\n", ph.fault, ph.to.Sub(ph.from).Round(100*time.Millisecond))
		fmt.Fprintf(&sb, "answers to requests sent meanwhile: %s\n", ph.answers)
		fmt.Fprintf(&sb, "202s published %d; 503s %d by code %v; refusal time p50 %v, max %v; latency of every answer p50 %v, p99 %v\n",
			ph.accepted, ph.n503, ph.codes503, ph.refusalP50.Round(time.Millisecond), ph.refusalMax.Round(time.Millisecond),
			ph.latencyP50.Round(time.Millisecond), ph.latencyP99.Round(time.Millisecond))
		if ph.recovered.resumed {
			fmt.Fprintf(&sb, "recovery: first 202 to a request sent after %s %v after it (answers until then: %s)\n",
				ph.since, ph.recovered.took.Round(time.Millisecond), ph.recovered.answers)
		} else {
			fmt.Fprintf(&sb, "recovery: no 202 to a request sent after %s\n", ph.since)
		}
		fmt.Fprintf(&sb, "timeline (by send time, from the fault; 202 published / 503 / other): %s\n", timeline(w, ph.from, ph.to.Add(30*time.Second), 2*time.Second))
		if ph.noCode > 0 {
			t.Errorf("%s: %d 503s without a JSON error code", ph.fault, ph.noCode)
		}
		if limit := maxRefusal(p.cfg); ph.refusalMax > limit {
			t.Errorf("%s: a 503 took %v, want at most %v (publish bound + store bound + slack)", ph.fault, ph.refusalMax, limit)
		}
		if !ph.recovered.resumed {
			t.Errorf("%s: publishes never resumed after %s", ph.fault, ph.since)
		}
	}
	unknown := p.unknownOutcomes(w)
	unavailableHolding := p.unavailableHolding(w)
	fmt.Fprintf(&sb, "---- end state ----\n202s %d, their messages in the log %d; outcome_unknown answers by final arbiter outcome %v; buyers answered only 503 unavailable holding an order: %d\n",
		rep.accepted, inLog, unknown, len(unavailableHolding))
	fmt.Fprintf(&sb, "audit (I1-I7): %s\n", verdict(rep))
	// The history of every buyer call, checked with porcupine
	// (history_test.go; it fails the test itself when Illegal).
	fmt.Fprintf(&sb, "history (porcupine): %s\n", p.checkHistory())
	t.Log(sb.String())
	if len(unavailableHolding) > 0 {
		t.Errorf("%d buyers answered only 503 unavailable (nothing reserved) hold an order: users %v", len(unavailableHolding), unavailableHolding[:min(10, len(unavailableHolding))])
	}
	if n := unknown["undecided"]; n > 0 {
		t.Errorf("%d requests answered 503 outcome_unknown have no arbiter outcome at quiescence", n)
	}
}

func verdict(r report) string {
	var bad []string
	for inv, vs := range r.invariants {
		bad = append(bad, fmt.Sprintf("%s FAIL (%d)", inv, len(vs)))
	}
	if len(bad) == 0 {
		return "PASS"
	}
	sort.Strings(bad)
	return strings.Join(bad, ", ")
}

// unknownOutcomes counts the requests answered 503 outcome_unknown by the
// arbiter's final outcome ("undecided" when none).
func (p *pipeline) unknownOutcomes(w *workload) map[string]int {
	answers, _, _, _ := w.snapshot()
	out := map[string]int{}
	for _, a := range answers {
		if a.code != 503 || a.errKey != "outcome_unknown" || a.rid == "" {
			continue
		}
		var o string
		err := p.db.QueryRowContext(context.Background(), "SELECT outcome FROM request_outcomes WHERE request_id = ?", a.rid).Scan(&o)
		if err != nil {
			o = "undecided"
		}
		out[o]++
	}
	return out
}

// unavailableHolding returns the buyers every one of whose answers was 503
// unavailable ("nothing reserved") but who hold an order at quiescence.
func (p *pipeline) unavailableHolding(w *workload) []int64 {
	answers, _, _, _ := w.snapshot()
	only := map[int64]bool{}
	for _, a := range answers {
		isUnavailable := a.code == 503 && a.errKey == "unavailable"
		if v, seen := only[a.user]; !seen {
			only[a.user] = isUnavailable
		} else {
			only[a.user] = v && isUnavailable
		}
	}
	var out []int64
	for u, ok := range only {
		if !ok {
			continue
		}
		var n int
		if err := p.db.QueryRowContext(context.Background(), "SELECT COUNT(*) FROM orders WHERE item_id = ? AND user_id = ?", p.itemID, u).Scan(&n); err != nil {
			p.t.Fatal(err)
		}
		if n > 0 {
			out = append(out, u)
		}
	}
	slices.Sort(out)
	return out
}
