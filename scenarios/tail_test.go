package scenarios

import (
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/stock"
)

// TestSmallBuyerAtTheEnd is the end of a sale with quantities: 2 units
// left in an item of 8 or 64 buckets, buyers of 3 keep coming (each told
// 410 at once: 2 < 3) and a buyer of 1 whose bucket is empty orders. The
// buyer of 1 must get a unit: the buckets together hold 2, and "sold out"
// or "stock moving" would turn a buyer away from a sale that can serve
// them (issue 22: "if the buckets together hold >= a buyer's qty, some
// sequence of planned moves serves that buyer").
//
// The homes are picked with stock.HomeBucket so that the buyers of 3 land
// on every bucket holding a unit and on the buyer of 1's: their refusals
// raise those buckets' want flags to 3, which the item cannot cover.
func TestSmallBuyerAtTheEnd(t *testing.T) {
	for _, buckets := range []int{8, 64} {
		t.Run(fmt.Sprintf("buckets=%d", buckets), func(t *testing.T) {
			smallBuyerAtTheEnd(t, shared(t), buckets)
		})
	}
}

func smallBuyerAtTheEnd(t *testing.T, s *system, buckets int) {
	item := s.newItem(2, buckets, limit)
	au := s.settledAudit(item, 5*time.Second)
	var stocked []int
	empty := -1
	for _, b := range au.PerBucket {
		switch {
		case b.RedisStock > 0:
			stocked = append(stocked, b.Bucket)
		case empty < 0:
			empty = b.Bucket
		}
	}
	if len(stocked) == 0 || empty < 0 {
		t.Fatalf("layout of 2 units in %d buckets: %+v", buckets, au.PerBucket)
	}
	next := int64(60_000)
	homedOn := func(b int) int64 {
		for ; ; next++ {
			if stock.HomeBucket(next, buckets) == b {
				next++
				return next - 1
			}
		}
	}
	homes := append([]int{empty}, stocked...)
	bigUsers := make([][]int64, 150)
	for i := range bigUsers {
		for _, b := range homes {
			bigUsers[i] = append(bigUsers[i], homedOn(b))
		}
	}
	small := homedOn(empty)

	var stop atomic.Bool
	var rounds atomic.Int64 // rounds of the buyers of 3 done
	var wg sync.WaitGroup
	var bigMu sync.Mutex
	big := map[string]int{}
	wg.Go(func() {
		// A round of buyers of 3 every 10 ms at most.
		pace := time.NewTicker(10 * time.Millisecond)
		defer pace.Stop()
		for i, users := range bigUsers {
			if i > 0 {
				<-pace.C
			}
			if stop.Load() {
				return
			}
			for _, u := range users {
				a := s.order(item, u, 3, "")
				bigMu.Lock()
				big[a.String()]++
				bigMu.Unlock()
			}
			rounds.Add(1)
		}
	})
	// The buyer of 1 orders while the buyers of 3 go on, once their
	// refusals have raised the want flags of every bucket concerned: a few
	// rounds done.
	defer func() { stop.Store(true); wg.Wait() }() // if the wait below fails
	testenv.Eventually(t, 30*time.Second, 5*time.Millisecond, func() bool { return rounds.Load() >= 3 },
		"the buyers of 3 did not finish 3 rounds")
	a := s.order(item, small, 1, "")
	took := time.Since(a.Sent)
	stop.Store(true)
	wg.Wait()
	t.Logf("%d buckets, units in %v, buyer of 1 on empty bucket %d: %s %s after %v; buyers of 3: %v",
		buckets, stocked, empty, a, a.Body, took.Round(time.Millisecond), big)
	if a.Code != http.StatusAccepted {
		t.Errorf("the buyer of 1 with 2 units left was answered %s after %v, want 202", a, took.Round(time.Millisecond))
	}
	if big["202"] > 0 {
		t.Errorf("buyers of 3 with 2 units left were accepted: %v", big)
	}
}
