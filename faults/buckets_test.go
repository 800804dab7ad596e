//go:build faults

package faults

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"
)

// TestBucketedConsumerKilled is TestConsumerKilled on an item of 8 stock
// buckets over 4 partitions: the consumer replicas write different
// buckets' rows at once, a replica SIGKILLed mid-batch leaves batches of
// several buckets uncommitted, and the rebalancer (in the reaper) moves
// stock between buckets all along, since 80 units over 8 buckets sell out
// unevenly. Every invariant must hold per item (settle), and the audit's
// per-bucket checks with it.
func TestBucketedConsumerKilled(t *testing.T) {
	start := time.Now()
	cfg := defaultSettings()
	cfg.Buckets, cfg.Partitions = 8, 4
	cfg.OrphanGrace = time.Minute // as TestConsumerKilled: consumers are away for a while
	p := newPipeline(t, cfg)
	w := p.startBurst(pick(500, 1200), 50)
	kills := killConsumers(t, p, pick(2, 6))
	p.settle(fmt.Sprintf("bucketed item (8 buckets): consumer SIGKILL x%d", kills), start, w)
}

// TestBucketedSkewedDemand: an item of 80 units in 8 buckets, and every
// buyer's home is bucket 0 or 1 (a quarter of the buckets, 20 units).
// Everyone pays, so nothing comes back: the rebalancer must move the other
// 60 units to where the buyers are, and exactly the whole stock sells. No
// buyer may hear "sold out" before the last unit was taken; waits that ran
// out (503 stock_moving) are allowed and counted. Then I1-I7 (settle) and
// every bucket empty in both stores.
func TestBucketedSkewedDemand(t *testing.T) {
	start := time.Now()
	cfg := defaultSettings()
	cfg.Buckets, cfg.Partitions, cfg.Units = 8, 4, 80
	p := newPipeline(t, cfg)
	p.startAll()
	w := p.start(spec{FirstUser: 10_000, Buyers: 400, Rate: 80, Concurrency: 24, PayFrac: 1,
		Buckets: 8, HomeBuckets: []int{0, 1}})
	p.settle("bucketed item, all demand on 2 of 8 buckets", start, w)

	answers, acc, _, _ := w.snapshot()
	if len(acc) != cfg.Units {
		t.Fatalf("%d accepted, want all %d units sold (answers %s)", len(acc), cfg.Units, codes(answers))
	}
	// The last unit was taken by an admission answered no later than the
	// latest 202; a 410 answered before the last 202 was even sent came
	// while stock was left.
	var lastSent time.Time
	for _, a := range acc {
		if a.sentAt.After(lastSent) {
			lastSent = a.sentAt
		}
	}
	moving := 0
	for _, a := range answers {
		switch {
		case a.code == http.StatusGone && a.doneAt.Before(lastSent):
			t.Errorf("410 to user %d at %v, before the last 202's request was sent (%v): sold out while stock was left",
				a.user, a.doneAt.Format(time.StampMilli), lastSent.Format(time.StampMilli))
		case a.errKey == "stock_moving":
			moving++
		}
	}
	t.Logf("answers %s; %d waits ran out (503 stock_moving); sold out in %v", codes(answers), moving, lastSent.Sub(start).Round(time.Millisecond))
	ctx := context.Background()
	left, err := p.st.BucketStocks(ctx, p.itemID, cfg.Buckets)
	if err != nil {
		t.Fatal(err)
	}
	for b, n := range left {
		if n != 0 {
			t.Errorf("bucket %d has %d units left in Redis after the whole stock sold", b, n)
		}
	}
	var mysqlLeft int64
	if err := p.db.QueryRowContext(ctx, "SELECT COALESCE(SUM(stock), 0) FROM item_buckets WHERE item_id = ?", p.itemID).Scan(&mysqlLeft); err != nil || mysqlLeft != 0 {
		t.Errorf("MySQL buckets hold %d units, %v; want 0", mysqlLeft, err)
	}
}
