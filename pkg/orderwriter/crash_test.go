package orderwriter_test

import (
	"context"
	"database/sql"
	"strconv"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/stock"
)

// A consumer process SIGKILLed with two batches in flight never committed an
// offset past unfinished work, and its successor writes every message
// exactly once.
//
// One partition holds 140 messages of item A, then 10 of item B, then 150
// more of A; batches are 100 long with 2 in flight. The test holds B's item
// row locked, so B's transaction cannot finish: the batch holding B is stuck
// while A's messages in it and the whole next batch are written (items of a
// batch are written concurrently, and the next batch is fetched while one
// is written). The committed offset must reach B's first offset (140, the
// background commit) and stay there while everything after B is written;
// then the process is killed, the lock released, and a new consumer must
// write B's messages, redelivered, and decide each of the 300 requests once.
func TestKilledWithTwoBatchesInFlight(t *testing.T) {
	t.Parallel()
	const beforeB, nB, afterB = 140, 10, 150
	e := newEnv(t, 1, 1_000, 1_000)
	itemA := e.item
	itemB := testenv.ItemID()
	e.createItem(itemB, 100)
	now := time.Now()
	if err := e.st.Warm(context.Background(), stock.Snapshot{ItemID: itemB, Stock: 100, StartsAt: now.Add(-time.Hour), EndsAt: now.Add(time.Hour), PerUserLimit: 1}); err != nil {
		t.Fatal(err)
	}
	msgs := e.admit(users(1, beforeB))
	e.item = itemB
	msgs = append(msgs, e.admit(users(1, nB))...)
	e.item = itemA
	msgs = append(msgs, e.admit(users(1+beforeB, afterB))...)

	// B's row stays locked until released: its stock CAS waits on it.
	ctx := context.Background()
	conn, err := e.db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	lock, err := conn.BeginTx(ctx, &sql.TxOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Rollback()
	var stk int64
	if err := lock.QueryRowContext(ctx, "SELECT stock FROM items WHERE id = ? FOR UPDATE", itemB).Scan(&stk); err != nil {
		t.Fatal(err)
	}

	e.produce(encode(t, msgs), true)
	cfg := e.config()
	cfg.BatchSize = 100
	cfg.BatchesInFlight = 2
	cfg.ItemParallelism = 4
	proc := e.startChild(cfg)

	// Watch the committed offset from the first poll to the kill.
	highest := int64(-1)
	poll := func() int64 {
		off := committedOffset(t, e.brokers, e.group, e.topic)
		highest = max(highest, off)
		return off
	}
	decidedA := func() int64 { return e.count("SELECT COUNT(*) FROM request_outcomes WHERE item_id = ?", itemA) }
	testenv.Eventually(t, 60*time.Second, 20*time.Millisecond, func() bool {
		poll()
		return decidedA() == beforeB+afterB
	}, "item A: %v of %d decided with B stuck (consumer output:\n%s)", lazyCount(decidedA), beforeB+afterB, lazyOut(proc))
	testenv.Eventually(t, 30*time.Second, 20*time.Millisecond, func() bool { return poll() >= beforeB },
		"committed offset %v, want %d: the done prefix before B is committed in the background", lazyCount(poll), beforeB)
	// Everything after B is written; the offset must still not pass B. A
	// commit past B would come from the child's background committer right
	// after its last rounds, and nothing outside the child marks that: the
	// check is that nothing happens, so it watches the offset for a second.
	tick := time.NewTicker(50 * time.Millisecond)
	for end := time.Now().Add(time.Second); time.Now().Before(end); <-tick.C {
		poll()
	}
	tick.Stop()
	if got := e.count("SELECT COUNT(*) FROM request_outcomes WHERE item_id = ?", itemB); got != 0 {
		t.Fatalf("item B: %d decided while its row was locked", got)
	}
	proc.kill()
	if highest != beforeB {
		t.Fatalf("committed offset reached %d with B (offset %d) unwritten; want exactly %d", highest, beforeB, beforeB)
	}
	if err := lock.Rollback(); err != nil {
		t.Fatal(err)
	}

	// The successor gets B redelivered (and the messages after it) and
	// decides each request exactly once.
	r := e.start(cfg, nil, nil)
	e.waitDrained(90 * time.Second)
	r.stop(t)
	total := int64(len(msgs))
	if got := e.count("SELECT COUNT(*) FROM request_outcomes WHERE outcome = 'ORDERED'"); got != total {
		t.Errorf("ORDERED = %d, want %d", got, total)
	}
	if got := e.count("SELECT COUNT(*) FROM orders"); got != total {
		t.Errorf("orders = %d, want %d", got, total)
	}
	for _, m := range msgs {
		if n := e.count("SELECT COUNT(*) FROM orders WHERE request_id = ?", m.RequestID); n != 1 {
			t.Fatalf("request %s (item %d): %d orders, want 1", m.RequestID, m.ItemID, n)
		}
	}
	e.checkInvariants()
	e.item = itemB
	e.checkInvariants()
}

// committedOffset is the group's committed offset of partition 0 (-1: none).
func committedOffset(t testing.TB, brokers []string, group, topic string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	client := &kafka.Client{Addr: kafka.TCP(brokers...)}
	res, err := client.OffsetFetch(ctx, &kafka.OffsetFetchRequest{GroupID: group, Topics: map[string][]int{topic: {0}}})
	if err != nil {
		t.Fatalf("offset fetch: %v", err)
	}
	if res.Error != nil {
		t.Fatalf("offset fetch: %v", res.Error)
	}
	for _, p := range res.Topics[topic] {
		if p.Partition == 0 {
			return p.CommittedOffset
		}
	}
	return -1
}

type lazyCount func() int64

func (f lazyCount) String() string { return strconv.FormatInt(f(), 10) }

type lazyOutput struct{ c *child }

func lazyOut(c *child) lazyOutput { return lazyOutput{c} }

func (l lazyOutput) String() string { return l.c.out.String() }
