package admission

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/segmentio/kafka-go"
	"pgregory.net/rapid"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/stock"
)

// TestPropBucketPromise checks the bucket promise (promise.go) clause by
// clause, on a Redis of the test's own: rapid draws an item of 2 to 8
// buckets holding 0 to 4 units each, a per-user limit of 1 to 3, and a
// run of steps, each a buyer of qty 1 to the limit homed on a bucket of
// rapid's choice, or a transfer between buckets taking its units out of
// the donor (in flight, in TransfersLive) or giving them to the recipient.
// No rebalancer runs, so a buyer whose home bucket is short waits out a
// short bucket wait; the model is the stocks, and the units in flight.
// rapid's 100 cases (and their shrinking, on a failure).
func TestPropBucketPromise(t *testing.T) {
	svc, rdb, st, pub := privateService(t, Config{SoldOutTTL: time.Minute, PublishTimeout: 5 * time.Second, IdempotencyTTL: time.Minute,
		StoreTimeout: 5 * time.Second, BucketWait: 5 * time.Millisecond, BucketPoll: time.Millisecond})
	ctx := context.Background()
	var user int64
	checks := 0
	rapid.Check(t, func(t *rapid.T) {
		checks++
		n := rapid.IntRange(2, 8).Draw(t, "buckets")
		stocks := rapid.SliceOfN(rapid.Int64Range(0, 4), n, n).Draw(t, "stocks")
		limit := rapid.IntRange(1, 3).Draw(t, "limit")
		item := testenv.ItemID()
		now := time.Now()
		if err := st.Warm(ctx, stock.Snapshot{ItemID: item, BucketStock: stocks, StartsAt: now.Add(-time.Minute),
			EndsAt: now.Add(time.Hour), PerUserLimit: limit}); err != nil {
			t.Fatalf("warm: %v", err)
		}
		stocks = append([]int64(nil), stocks...)
		k := stock.KeysOf(item)
		// flight is the transfer under way: units out of a donor, not yet
		// in the recipient.
		var flight struct {
			on       bool
			to       int
			qty      int64
			id, done int64
		}
		total := func() (sum int64) {
			for _, s := range stocks {
				sum += s
			}
			if flight.on {
				sum += flight.qty
			}
			return sum
		}
		for step := range rapid.IntRange(1, 12).Draw(t, "steps") {
			switch rapid.IntRange(0, 5).Draw(t, fmt.Sprintf("action%d", step)) {
			case 0: // a transfer takes its units out of a donor
				from := rapid.IntRange(0, n-1).Draw(t, fmt.Sprintf("from%d", step))
				if flight.on || stocks[from] == 0 {
					continue
				}
				flight.on, flight.id = true, flight.id+1
				flight.to = (from + 1 + rapid.IntRange(0, n-2).Draw(t, fmt.Sprintf("to%d", step))) % n
				flight.qty = rapid.Int64Range(1, stocks[from]).Draw(t, fmt.Sprintf("qty%d", step))
				must(t, rdb.SAdd(ctx, k.TransfersLive(), flight.id).Err())
				must(t, rdb.DecrBy(ctx, stock.BucketKeys(item, from).Stock, flight.qty).Err())
				stocks[from] -= flight.qty
			case 1: // and gives them to the recipient
				if !flight.on {
					continue
				}
				must(t, rdb.IncrBy(ctx, stock.BucketKeys(item, flight.to).Stock, flight.qty).Err())
				_, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
					p.SRem(ctx, k.TransfersLive(), flight.id)
					p.Incr(ctx, k.TransfersDone())
					return nil
				})
				must(t, err)
				stocks[flight.to] += flight.qty
				flight.on = false
			default: // a buyer
				home := rapid.IntRange(0, n-1).Draw(t, fmt.Sprintf("home%d", step))
				qty := rapid.IntRange(1, limit).Draw(t, fmt.Sprintf("buy%d", step))
				user = testenv.UserIn(home, n, user+1)
				left, inFlight := total(), flight.on
				res := svc.Admit(ctx, Request{ItemID: item, UserID: user, Qty: qty})
				switch res.Outcome {
				case Accepted: // clause 1
					if stocks[home] < int64(qty) {
						t.Fatalf("202 for %d from bucket %d holding %d (stocks %v)", qty, home, stocks[home], stocks)
					}
					stocks[home] -= int64(qty)
					got, err := st.BucketStocks(ctx, item, n)
					must(t, err)
					if got[home] != stocks[home] {
						t.Fatalf("202 for %d: bucket %d holds %d in Redis; want %d", qty, home, got[home], stocks[home])
					}
				case SoldOut, SoldOutMem: // clauses 2 and 3
					// The read may be BucketPoll old, from before a
					// transfer took units out: the units in flight count,
					// and the total with them never grows here.
					if left >= int64(qty) {
						t.Fatalf("%s to a buyer of %d while the buckets held %v (+%d in flight: %v)",
							res.Outcome, qty, stocks, flight.qty, inFlight)
					}
					if res.Outcome == SoldOutMem && left > 0 {
						t.Fatalf("410 from memory to a buyer of %d with %d units left %v", qty, left, stocks)
					}
				case StockMoving: // clause 4
					if stocks[home] >= int64(qty) {
						t.Fatalf("503 stock_moving to a buyer of %d homed on bucket %d holding %d", qty, home, stocks[home])
					}
				default:
					t.Fatalf("buyer of %d on bucket %d: unexpected %+v", qty, home, res)
				}
			}
		}
	})
	if pub.n.Load() == 0 {
		t.Fatal("no buyer was ever admitted: the cases prove nothing")
	}
	t.Logf("%d cases, %d buyers admitted", checks, pub.n.Load())
}

// countingPublisher acknowledges every message at once and counts them.
type countingPublisher struct{ n atomic.Int64 }

func (p *countingPublisher) WriteMessages(_ context.Context, msgs ...kafka.Message) error {
	p.n.Add(int64(len(msgs)))
	return nil
}

func must(t *rapid.T, err error) {
	if err != nil {
		t.Helper()
		t.Fatal(err)
	}
}
