//go:build faults

package faults

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/orderlog"
	"github.com/flashsale-dev/flashsale/pkg/reap"
)

// pick returns the reduced value, or the full one under FLASHSALE_FAULTS=full.
func pick[T any](reduced, fullValue T) T {
	if full {
		return fullValue
	}
	return reduced
}

// burst is the default workload: more buyers than units, a few duplicate
// buyers and replayed keys, a third paying.
func burst(buyers int, rps float64) spec {
	return spec{FirstUser: 10_000, Buyers: buyers, Rate: rps, Concurrency: 24, DupFrac: 0.1, ReplayFrac: 0.1, PayFrac: 0.3}
}

func waitAccepted(t *testing.T, w *workload, n int64) {
	t.Helper()
	testenv.Eventually(t, time.Minute, 20*time.Millisecond, func() bool { return w.nAccept.Load() >= n },
		"fewer than %d requests accepted (answers so far: %v)", n, lazy(func() string { a, _, _, _ := w.snapshot(); return codes(a) }))
}

// startBurst starts every process of p, then a burst of buyers arriving at
// rps a second, and returns once 20 of them have their 202.
func (p *pipeline) startBurst(buyers int, rps float64) *workload {
	p.t.Helper()
	p.startAll()
	w := p.start(burst(buyers, rps))
	waitAccepted(p.t, w, 20)
	return w
}

// waitLag waits (bounded) until messages are waiting for the consumers, so
// a kill lands while a batch is in hand; it reports whether it saw any.
func waitLag(p *pipeline, timeout time.Duration) bool {
	deadline := time.After(timeout)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		if n, err := p.lag(context.Background()); err == nil && n > 0 {
			return true
		}
		select {
		case <-deadline:
			return false
		case <-tick.C:
		}
	}
}

// hold keeps a fault in place for d while the burst goes on: the fault's
// duration is the point of the test, not a guess at a condition.
func hold(d time.Duration) {
	// Real time is the subject: a fault (a server paused, stopped or cut
	// off) must really last d while the load goes on.
	time.Sleep(d)
}

// TestConsumerKilled: a consumer replica SIGKILLed mid-batch (its batch
// written or not, offsets uncommitted) and restarted, several times; then
// every consumer down for 10 s while the ingress keeps admitting.
func TestConsumerKilled(t *testing.T) {
	start := time.Now()
	cfg := defaultSettings()
	// Consumers down for 10 s plus a group rebalance (a SIGKILLed member
	// holds its partitions until its 30 s session times out) is a lag far
	// beyond the usual 10 s grace: with it, the reaper would void most
	// requests before they are written and the redelivery this test is
	// about would only meet decided requests. The other faults keep 10 s.
	cfg.OrphanGrace = time.Minute
	p := newPipeline(t, cfg)
	w := p.startBurst(pick(500, 1200), 50)
	kills := killConsumers(t, p, pick(3, 8))
	for _, c := range p.consumers {
		c.kill()
	}
	t.Logf("all consumers SIGKILLed for 10s")
	hold(10 * time.Second)
	for _, c := range p.consumers {
		c.start()
	}
	p.settle(fmt.Sprintf("consumer SIGKILL x%d, all consumers down 10s", kills), start, w)
}

// killConsumers SIGKILLs a random consumer replica n times, each once
// messages wait for the consumers (so a batch is in hand), and restarts it
// at once; it returns the number of kills.
func killConsumers(t *testing.T, p *pipeline, n int) int {
	for range n {
		inHand := waitLag(p, 5*time.Second)
		victim := p.consumers[rand.IntN(len(p.consumers))]
		victim.kill()
		t.Logf("SIGKILL %s (messages in hand: %v)", victim.name, inHand)
		victim.start()
	}
	return n
}

// TestIngressKilled: the ingress SIGKILLed under load, and once more while
// requests sit reserved in Redis but unpublished (Kafka paused so their
// publishes hang). Those reservations are orphans: the reaper voids them
// after the grace (or settles them, if the bytes reached the broker).
func TestIngressKilled(t *testing.T) {
	start := time.Now()
	s := newStack(t)
	p := newPipeline(t, defaultSettings())
	w := p.startBurst(pick(400, 1000), 50)
	for range pick(1, 3) {
		p.ingress.kill()
		t.Logf("SIGKILL ingress under load")
		p.ingress.start()
		waitAccepted(t, w, w.nAccept.Load()+10)
	}

	// Requests reserved, publish in flight: pause Kafka, let them pile up,
	// kill the ingress, then resume.
	before, err := p.st.ReadState(context.Background(), p.itemID)
	if err != nil {
		t.Fatal(err)
	}
	s.pause("kafka")
	var pending int64
	testenv.Eventually(t, 20*time.Second, 20*time.Millisecond, func() bool {
		st, err := p.st.ReadState(context.Background(), p.itemID)
		pending = st.Pending
		return err == nil && st.Pending >= before.Pending+5
	}, "no reservations piled up behind the paused broker")
	p.ingress.kill()
	t.Logf("SIGKILL ingress with %d reservations pending (publishes hanging)", pending)
	s.resume("kafka")
	p.ingress.start()
	rep := p.settle("ingress SIGKILL under load and with publishes in flight", start, w)
	t.Logf("orphans voided by the reaper: %d", rep.outcomes["VOIDED"])
}

// TestKafkaStopped: the broker stopped for 15 s during the burst and started
// again. Publishes fail (503, aborted through the arbiter), consumers wait.
func TestKafkaStopped(t *testing.T) { stoppedDuringBurst(t, "kafka", waitKafka) }

// stoppedDuringBurst stops service for 15 s during the burst and starts it
// again; once back says it answers and ten more orders are accepted, the
// burst ends there (finish) and everything must settle.
func stoppedDuringBurst(t *testing.T, service string, back func(*testing.T, *pipeline)) {
	start := time.Now()
	s := newStack(t)
	p := newPipeline(t, defaultSettings())
	w := p.startBurst(pick(900, 1500), 30)
	// settle reads the orders topic's end after the restart; read it once
	// before too, so that a client keeping its connection across the
	// restart fails here every time, not only when an earlier test left
	// one behind (cold run 29: unexpected EOF).
	if _, err := p.topicEnd(context.Background(), p.orders); err != nil {
		t.Fatalf("orders topic %s before the stop: %v", p.orders, err)
	}
	s.stop(service)
	hold(15 * time.Second)
	s.start(service)
	back(t, p)
	w.finishAfterRecovery(t)
	p.settle(service+" stopped 15s", start, w)
}

// TestKafkaPaused: the broker black-holed (SIGSTOP: the port accepts, nothing
// answers), so publishes time out ambiguously: the message may or may not be
// in the log. The arbiter decides each request exactly once.
func TestKafkaPaused(t *testing.T) {
	start := time.Now()
	s := newStack(t)
	p := newPipeline(t, defaultSettings())
	w := p.startBurst(pick(600, 1200), 40)
	for range pick(1, 2) {
		s.pause("kafka")
		hold(pick(8*time.Second, 15*time.Second))
		s.resume("kafka")
		waitKafka(t, p)
		waitAccepted(t, w, w.nAccept.Load()+10)
	}
	w.finish()
	p.settle("kafka paused (ambiguous publish timeouts)", start, w)
}

func waitKafka(t *testing.T, p *pipeline) {
	t.Helper()
	testenv.Eventually(t, 2*time.Minute, 200*time.Millisecond, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		return orderlog.Ping(ctx, p.kafka) == nil
	}, "kafka did not come back")
}

// TestMySQLStopped: MariaDB stopped for 15 s during the burst and started
// again. Admission goes on (Redis, Kafka); consumers and reaper retry.
func TestMySQLStopped(t *testing.T) {
	stoppedDuringBurst(t, "mysql", func(t *testing.T, p *pipeline) {
		testenv.Eventually(t, time.Minute, 200*time.Millisecond, func() bool {
			return p.db.PingContext(context.Background()) == nil
		}, "mysql did not come back")
	})
}

// consumerStatements match the statements only the order writer runs (the
// order insert and the stock CAS) or a COMMIT in the test's database: a KILL
// of such a session lands inside, or at the commit of, a write transaction.
const consumerSessions = `SELECT id, COALESCE(info, '') FROM information_schema.processlist
 WHERE db = DATABASE() AND id <> CONNECTION_ID() AND command = 'Query'
   AND (info LIKE 'INSERT INTO orders%' OR info LIKE 'UPDATE items SET stock = stock - %' OR info LIKE 'COMMIT%')`

// TestMySQLSessionKilled: the consumer's MySQL session KILLed in the middle
// of its write transaction (or its commit), repeatedly during the burst.
func TestMySQLSessionKilled(t *testing.T) {
	start := time.Now()
	p := newPipeline(t, defaultSettings())
	p.startAll()
	w := p.start(burst(pick(600, 1200), 80))
	waitAccepted(t, w, 10)
	ctx := context.Background()
	killed, want := 0, pick(5, 15)
	deadline := time.Now().Add(pick(40*time.Second, 90*time.Second))
	// The processlist is sampled every 5 ms: often enough to catch a write
	// transaction in flight, not so often as to load the server.
	sample := time.NewTicker(5 * time.Millisecond)
	defer sample.Stop()
	for ; killed < want && time.Now().Before(deadline); <-sample.C {
		rows, err := p.db.QueryContext(ctx, consumerSessions)
		if err != nil {
			t.Fatalf("processlist: %v", err)
		}
		var ids []int64
		var infos []string
		for rows.Next() {
			var id int64
			var info string
			if err := rows.Scan(&id, &info); err != nil {
				t.Fatal(err)
			}
			ids, infos = append(ids, id), append(infos, info)
		}
		rows.Close()
		for i, id := range ids {
			if _, err := p.db.ExecContext(ctx, fmt.Sprintf("KILL %d", id)); err == nil {
				killed++
				t.Logf("KILL session %d during %.60q", id, infos[i])
			}
		}
	}
	if killed == 0 {
		t.Fatalf("no write transaction of the consumer was caught in the processlist")
	}
	p.settle(fmt.Sprintf("mysql session of the order writer KILLed x%d", killed), start, w)
}

// TestRedisWiped: Redis restarted without persistence mid-sale. Admission
// must stop safely (no 202 while Redis knows nothing), the order log drains into
// MySQL, the admin warm rebuilds Redis from MySQL, and the sale goes on.
//
// The reaper's live auditor (every second here) must see the wipe: the
// item unknown to Redis is a violation it reports, and the only one.
func TestRedisWiped(t *testing.T) {
	start := time.Now()
	s := newStack(t)
	p := newPipeline(t, defaultSettings())
	p.tolerated = map[string]string{"live-audit": "Redis lost the item until the warm: the auditor's reports are true, and required below"}
	p.startAll()
	w := p.start(burst(pick(500, 1000), 50))
	waitAccepted(t, w, 30)
	s.wipeRedis()
	wiped := time.Now()
	// Let the burst go on against the empty Redis for a while, then wait
	// for the order log to drain before warming.
	hold(3 * time.Second)
	testenv.Eventually(t, 2*time.Minute, 200*time.Millisecond, func() bool {
		n, err := p.lag(context.Background())
		return err == nil && n == 0
	}, "the order log did not drain after the wipe")
	blind := w.answersBetween(wiped, time.Now())
	t.Logf("answers to requests sent between the wipe and the warm: %s", codes(blind))
	for _, a := range blind {
		if a.code >= 200 && a.code < 300 {
			t.Errorf("request of user %d sent after Redis lost everything was admitted blind: %d %s", a.user, a.code, a.rid)
		}
	}
	p.warm(time.Minute)
	w.wait()
	// The sale continues: new buyers, and old buyers who hold an order are
	// still refused (buyers were rebuilt from MySQL).
	w2 := p.start(spec{FirstUser: 50_000, Buyers: pick(200, 400), Rate: 50, Concurrency: 16, DupFrac: 0.1, ReplayFrac: 0.1, PayFrac: 0.3})
	var holder int64
	if err := p.db.QueryRow("SELECT user_id FROM orders WHERE item_id = ? ORDER BY id LIMIT 1", p.itemID).Scan(&holder); err == nil {
		// A fresh Idempotency-Key skips the ingress' sold-out memory, so the
		// answer comes from the rebuilt buyer set.
		code, b := p.call(context.Background(), http.MethodPost, "/api/v1/orders", p.bearer(holder), map[string]any{"item_id": p.itemID, "qty": 1},
			map[string]string{"Idempotency-Key": "after-warm-check"})
		if code != http.StatusConflict {
			t.Errorf("buyer %d who holds an order ordered again after the warm: %d %s", holder, code, b)
		}
	}
	rep := p.settle("redis wiped (no persistence), warm from MySQL", start, w, w2)
	reports := p.reapers[0].logLines("invariant violated")
	for _, r := range reports {
		if !strings.Contains(r, "not warmed") {
			t.Errorf("the live auditor reported something else than the wiped item: %s", r)
		}
	}
	if len(reports) == 0 {
		t.Errorf("the live auditor never reported the item Redis lost")
	}
	t.Logf("the live auditor reported the wiped item %d times", len(reports))
	if w2.nAccept.Load() == 0 && rep.direct.DBStock > 0 {
		t.Errorf("the sale did not continue after the warm: no 202 in the second wave with %d units left", rep.direct.DBStock)
	}
}

// TestReaperKilled: the reaper SIGKILLed between its MySQL cancel commit and
// its Redis restore, repeatedly during a long expiry wave, and two reapers at
// once. To land the kill in that window every time, Redis is paused (the
// reaper commits the cancel batch, then hangs on the restore) and the kill
// is fired as soon as the committed but unconfirmed restore record shows up;
// the restarted reaper must finish those restores exactly once. Between
// those, more kills land at random points. Then a second reaper joins and
// both work the rest of the wave at once.
func TestReaperKilled(t *testing.T) {
	start := time.Now()
	s := newStack(t)
	cfg := defaultSettings()
	cfg.Units, cfg.Reapers, cfg.ReapBatch = pick(300, 800), 2, 10
	p := newPipeline(t, cfg)
	p.ingress.start()
	for _, c := range p.consumers {
		c.start()
	}
	p.reapers[0].start()
	p.createItem()
	// Orders created over 12-32 s, so they expire over as long: each round
	// of the loop below takes a few seconds and needs orders left to expire.
	b := burst(cfg.Units, 25)
	b.PayFrac, b.DupFrac, b.ReplayFrac = 0.1, 0.05, 0.05
	w := p.start(b)
	ctx := context.Background()
	unconfirmed := func() int64 {
		n, err := p.unappliedRestores(ctx)
		if err != nil {
			return -1
		}
		return n
	}
	testenv.Eventually(t, time.Minute, 10*time.Millisecond, func() bool {
		var n int64
		err := p.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM orders WHERE item_id = ? AND status = 'CANCELLED'", p.itemID).Scan(&n)
		return err == nil && n > 0
	}, "no expiry wave")
	// waveOver: every order has been answered and none is left to expire,
	// so a pause can no longer catch a cancel batch. The rounds stop there
	// rather than wait for a commit that cannot come.
	waveOver := func() bool {
		select {
		case <-w.done:
		default:
			return false
		}
		var n int64
		err := p.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM orders WHERE item_id = ? AND status = 'UNPAID'", p.itemID).Scan(&n)
		return err == nil && n == 0
	}
	kills, caught := 0, 0
	for range pick(3, 6) {
		s.pause("redis")
		testenv.Eventually(t, 10*time.Second, 5*time.Millisecond, func() bool { return unconfirmed() > 0 || waveOver() },
			"the reaper committed no cancel batch while Redis was paused")
		if unconfirmed() == 0 {
			s.resume("redis")
			t.Logf("the expiry wave ended after %d caught kills; no order left to expire", caught)
			break
		}
		p.reapers[0].kill()
		kills++
		n := unconfirmed()
		if n > 0 {
			caught++
		}
		t.Logf("SIGKILL reaper-0 with %d restores committed in MySQL, not confirmed in Redis", n)
		s.resume("redis")
		p.reapers[0].start()
		testenv.Eventually(t, 30*time.Second, 20*time.Millisecond, func() bool { return unconfirmed() == 0 },
			"the restarted reaper did not finish the restores left by the killed one")
		// A few kills at random points of the passes in between.
		for range 5 {
			hold(time.Duration(50+rand.IntN(250)) * time.Millisecond)
			p.reapers[0].kill()
			kills++
			p.reapers[0].start()
		}
	}
	t.Logf("reaper-0 SIGKILLed %d times, %d of them between a MySQL cancel commit and the Redis restore", kills, caught)
	if caught == 0 {
		t.Errorf("no kill landed between the MySQL commit and the Redis restore: the fault was not exercised")
	}
	p.reapers[1].start()
	t.Logf("two reapers running at once")
	rep := p.settle(fmt.Sprintf("reaper SIGKILL x%d (%d between commit and Redis restore), then two reapers", kills, caught), start, w)
	if rep.direct.Cancelled == 0 {
		t.Errorf("no order was cancelled: the expiry wave never happened")
	}
}

// TestReaperClockAhead: a reaper whose host clock runs minutes ahead must not
// cancel early: expiry is judged by MySQL's NOW(3), orphans by Redis' TIME.
// Go reads the clock through the vDSO (faketime cannot skew a Go binary), so
// pkg/reap runs in-process with its Clock skewed.
func TestReaperClockAhead(t *testing.T) {
	start := time.Now()
	cfg := defaultSettings()
	cfg.Reapers, cfg.PaymentWindow = 0, pick(15*time.Second, 30*time.Second)
	p := newPipeline(t, cfg)
	p.startAll()
	w := p.start(burst(pick(200, 400), 100))
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	r := reap.New(reap.Config{
		Interval: cfg.ReapInterval, BatchSize: 50, OrphanGrace: cfg.OrphanGrace, StoreTimeout: cfg.StoreTimeout,
	}, reap.Deps{DB: p.db, Stock: p.st}, reap.NewMetrics(prometheus.NewRegistry()), log)
	skew := 10 * time.Minute
	r.Clock = func() time.Time { return time.Now().Add(skew) }
	ctx := context.Background()
	waitAccepted(t, w, 20)
	// Passes while every order is still inside its window by the database's
	// clock: none may be cancelled.
	var firstExpiry time.Time
	passes := 0
	// One pass per reap interval, as the reaper's own loop paces them.
	pace := time.NewTicker(cfg.ReapInterval)
	defer pace.Stop()
	for ; ; <-pace.C {
		var unpaidBefore int64
		err := p.db.QueryRowContext(ctx, "SELECT COUNT(*), COALESCE(MIN(expires_at), NOW(3) + INTERVAL 1 HOUR) FROM orders WHERE item_id = ? AND status = 'UNPAID'", p.itemID).Scan(&unpaidBefore, &firstExpiry)
		if err != nil {
			t.Fatal(err)
		}
		var dbNow time.Time
		if err := p.db.QueryRowContext(ctx, "SELECT NOW(3)").Scan(&dbNow); err != nil {
			t.Fatal(err)
		}
		if firstExpiry.Sub(dbNow) < 2*time.Second { // stop well before the first deadline
			break
		}
		if !r.RunPass(ctx) {
			t.Fatalf("skewed reaper pass failed")
		}
		passes++
		var cancelled int64
		if err := p.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM orders WHERE item_id = ? AND status = 'CANCELLED'", p.itemID).Scan(&cancelled); err != nil {
			t.Fatal(err)
		}
		if cancelled > 0 {
			t.Fatalf("reaper with its clock %v ahead cancelled %d orders before their expires_at (by MySQL)", skew, cancelled)
		}
	}
	t.Logf("%d passes of a reaper %v ahead before the first deadline: nothing cancelled early", passes, skew)
	if passes == 0 {
		t.Fatalf("no pass ran before the first deadline (payment window %v too short)", cfg.PaymentWindow)
	}
	// After the deadlines the same skewed reaper does its job.
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = r.Run(rctx) }()
	t.Cleanup(func() { cancel(); <-done })
	p.settle(fmt.Sprintf("reaper clock %v ahead (in-process pkg/reap)", skew), start, w)
}

// TestDuplicateMessages: the orders topic read back and re-produced straight
// into Kafka, shuffled, some messages many times, during the burst and again
// after it: no extra order, no extra outcome.
func TestDuplicateMessages(t *testing.T) {
	start := time.Now()
	p := newPipeline(t, defaultSettings())
	p.startAll()
	w := p.start(burst(pick(400, 1000), 60))
	waitAccepted(t, w, 40)
	n1 := p.reinject(t, pick(3, 6))
	w.wait()
	first := p.settle("duplicates injected mid-burst", start, w)
	n2 := p.reinject(t, pick(3, 6))
	start2 := time.Now()
	second := p.settle(fmt.Sprintf("duplicates injected (%d mid-burst, %d after)", n1, n2), start2, w)
	for o, n := range first.outcomes {
		if second.outcomes[o] != n {
			t.Errorf("outcome %s: %d before the replay, %d after", o, n, second.outcomes[o])
		}
	}
	if first.direct.Paid != second.direct.Paid || first.direct.Cancelled != second.direct.Cancelled {
		t.Errorf("orders changed by replayed messages: paid %d -> %d, cancelled %d -> %d",
			first.direct.Paid, second.direct.Paid, first.direct.Cancelled, second.direct.Cancelled)
	}
}

// reinject reads every message of the orders topic so far and produces each
// again 1..maxCopies times, in shuffled order; it returns how many it wrote.
func (p *pipeline) reinject(t *testing.T, maxCopies int) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := kafka.DialContext(ctx, "tcp", p.kafka[0])
	if err != nil {
		t.Fatal(err)
	}
	parts, err := conn.ReadPartitions(p.orders)
	conn.Close()
	if err != nil {
		t.Fatal(err)
	}
	var msgs []kafka.Message
	for _, pt := range parts {
		pc, err := kafka.DialLeader(ctx, "tcp", p.kafka[0], p.orders, pt.ID)
		if err != nil {
			t.Fatal(err)
		}
		end, err := pc.ReadLastOffset()
		pc.Close()
		if err != nil {
			t.Fatal(err)
		}
		r := kafka.NewReader(kafka.ReaderConfig{Brokers: p.kafka, Topic: p.orders, Partition: pt.ID, MinBytes: 1, MaxBytes: 10 << 20, MaxWait: 100 * time.Millisecond})
		for off := int64(0); off < end; off++ {
			m, err := r.ReadMessage(ctx)
			if err != nil {
				r.Close()
				t.Fatalf("read back partition %d offset %d: %v", pt.ID, off, err)
			}
			if _, err := orderlog.Decode(m.Value); err != nil {
				t.Fatalf("read back: %v", err)
			}
			for range 1 + rand.IntN(maxCopies) {
				msgs = append(msgs, kafka.Message{Key: m.Key, Value: m.Value})
			}
		}
		r.Close()
	}
	rand.Shuffle(len(msgs), func(i, j int) { msgs[i], msgs[j] = msgs[j], msgs[i] })
	wr := &kafka.Writer{Addr: kafka.TCP(p.kafka...), Topic: p.orders, Balancer: &kafka.Hash{}, RequiredAcks: kafka.RequireAll, BatchTimeout: 5 * time.Millisecond}
	defer wr.Close()
	// Small batches so copies of one message land far apart, out of order.
	for i := 0; i < len(msgs); i += 25 {
		if err := wr.WriteMessages(ctx, msgs[i:min(i+25, len(msgs))]...); err != nil {
			t.Fatalf("re-produce: %v", err)
		}
	}
	t.Logf("re-produced %d copies of the topic's messages", len(msgs))
	return len(msgs)
}
