//go:build cluster

package stock_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/reqid"
	"github.com/flashsale-dev/flashsale/pkg/stock"
)

// One Redis Cluster primary SIGSTOPped (its port open, nothing answering)
// while admissions for items on every shard go through one Coalescer, as
// the ingress sends them: the admissions on the other shards must go on as
// before. A batch that mixed shards in one ClusterClient pipeline waited for
// the stalled node (go-redis' processPipeline waits for every node's
// part), so healthy-shard calls were answered after their callers'
// deadlines (an ambiguous "reply not read", which the ingress answers 503
// outcome_unknown) and every flusher was held by the stall.
//
// The stall lasts 3 s, under the cluster's node timeout (5 s), so no
// replica is promoted: the node is only slow, which is the case a kill
// (refused dials, fast failures) never shows.
func TestClusterCoalescerStalledPrimary(t *testing.T) {
	cc := testenv.RedisCluster(t)
	const flushers, deadline = 4, time.Second
	co := stock.NewCoalescer(cc, stock.CoalesceConfig{MaxBatch: 128, Flushers: flushers})
	t.Cleanup(co.Close)
	s := stock.New(cc).WithCoalescer(co)
	items := testenv.ItemsOnEveryPrimary(t, cc)
	primaries := slices.Sorted(maps.Keys(items))
	victim := primaries[len(primaries)-1]
	for _, id := range items {
		warmBig(t, s, id)
	}
	var healthy []int64
	for p, id := range items {
		if p != victim {
			healthy = append(healthy, id)
		}
	}

	normal := admitLoad(t, s, healthy, items[victim], deadline, 2*time.Second, nil)
	t.Logf("normal: %s", normal)
	if normal.errs > 0 {
		t.Fatalf("admissions failed with no fault: %s", normal)
	}

	node := "redis-" + victim[strings.LastIndex(victim, ":")+1:]
	stall := admitLoad(t, s, healthy, items[victim], deadline, 3*time.Second, func() func() {
		stackVerb(t, "pause", node)
		return func() { stackVerb(t, "resume", node) }
	})
	t.Logf("%s (primary of item %d) SIGSTOPped for 3 s: %s", node, items[victim], stall)
	if stall.errs > 0 {
		t.Errorf("%d of %d healthy-shard admissions failed while %s stalled (%d ambiguous: outcome_unknown); first: %v",
			stall.errs, stall.n, node, stall.ambiguous, stall.first)
	}
	// A generous bound: the point is that they are not held for the
	// deadline, not a latency target on a shared 2-core machine.
	if p99 := stall.pct(0.99); p99 > normal.pct(0.99)+300*time.Millisecond {
		t.Errorf("healthy-shard p99 %v while %s stalled, normal %v", p99, node, normal.pct(0.99))
	}
	if stall.victimOK > 0 {
		t.Errorf("%d admissions on the stalled primary were answered: was it stalled?", stall.victimOK)
	}
}

func warmBig(t *testing.T, s *stock.Store, id int64) {
	t.Helper()
	now := time.Now()
	if err := s.Warm(context.Background(), stock.Snapshot{ItemID: id, Stock: 1_000_000, StartsAt: now.Add(-time.Minute),
		EndsAt: now.Add(time.Hour), PerUserLimit: 1}); err != nil {
		t.Fatalf("warm item %d: %v", id, err)
	}
}

// stackVerb runs `$FLASHSALE_STACK VERB --cluster NODE`.
func stackVerb(t *testing.T, verb, node string) {
	t.Helper()
	script := os.Getenv("FLASHSALE_STACK")
	if script == "" {
		t.Fatal(`FLASHSALE_STACK unset: eval "$(deploy/local/stack.sh env --cluster)"`)
	}
	if out, err := exec.Command(script, verb, "--cluster", node).CombinedOutput(); err != nil {
		t.Fatalf("stack.sh %s --cluster %s: %v\n%s", verb, node, err, out)
	}
}

// loadResult is the healthy shards' admissions of one admitLoad.
type loadResult struct {
	lat       []time.Duration
	n, errs   int
	ambiguous int
	first     error
	victimOK  int64
}

func (r loadResult) pct(p float64) time.Duration {
	if len(r.lat) == 0 {
		return 0
	}
	return r.lat[min(len(r.lat)-1, int(p*float64(len(r.lat))))]
}

func (r loadResult) String() string {
	return fmt.Sprintf("%d healthy-shard admissions, p50 %v, p99 %v, max %v, %d failed (%d ambiguous)",
		r.n, r.pct(0.5).Round(100*time.Microsecond), r.pct(0.99).Round(100*time.Microsecond),
		r.pct(1).Round(100*time.Microsecond), r.errs, r.ambiguous)
}

var loadUser atomic.Int64

// admitLoad admits buyers for `took` from 16 goroutines on the healthy
// items and 8 on the victim's, each call bounded by deadline (its context
// and the script's Deadline, as the ingress sends them). fault, when set,
// starts once the load runs and returns its undo, called when the load ends.
func admitLoad(t *testing.T, s *stock.Store, healthy []int64, victim int64, deadline, took time.Duration, fault func() func()) loadResult {
	t.Helper()
	var mu sync.Mutex
	var r loadResult
	// victimOK counts the victim's admissions sent after the fault was in
	// place (faultAt, unix ns): one sent before it and answered just
	// before the SIGSTOP, counted late, is not one the stalled node served
	// (1 to 7 were, in runs that failed so).
	var victimOK, faultAt atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	one := func(item int64) (time.Duration, error) {
		ctx, cancel := context.WithTimeout(context.Background(), deadline)
		defer cancel()
		dl, _ := ctx.Deadline()
		start := time.Now()
		res, err := s.Admit(ctx, stock.AdmitRequest{ItemID: item, UserID: loadUser.Add(1), Qty: 1,
			RequestID: reqid.New(item, time.Now()), Deadline: dl})
		if err == nil && res.Code != stock.Admitted {
			err = fmt.Errorf("verdict %s", res.Code)
		}
		return time.Since(start), err
	}
	for i := range 16 {
		item := healthy[i%len(healthy)]
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				d, err := one(item)
				mu.Lock()
				r.n++
				r.lat = append(r.lat, d)
				if err != nil {
					r.errs++
					if !stock.NotSent(err) {
						r.ambiguous++
					}
					if r.first == nil {
						r.first = err
					}
				}
				mu.Unlock()
			}
		})
	}
	for range 8 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				sent := time.Now().UnixNano()
				if _, err := one(victim); err == nil && faultAt.Load() != 0 && sent > faultAt.Load() {
					victimOK.Add(1)
				}
			}
		})
	}
	// The fault starts once the load runs (every healthy-shard goroutine's
	// worth of answers came back), and the victim's answers are counted
	// from it on.
	testenv.Eventually(t, 10*time.Second, 5*time.Millisecond, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return r.n >= 16
	}, "the load never ran: no healthy-shard answers")
	var undo func()
	if fault != nil {
		undo = fault()
		faultAt.Store(time.Now().UnixNano())
		mu.Lock()
		r = loadResult{}
		mu.Unlock()
	}
	// Real time is the subject: the load (and the fault) last for took.
	time.Sleep(took)
	if undo != nil {
		r.victimOK = victimOK.Load()
	}
	mu.Lock()
	snap := r
	snap.lat = slices.Clone(r.lat)
	mu.Unlock()
	if undo != nil {
		undo()
	}
	close(stop)
	wg.Wait()
	slices.Sort(snap.lat)
	return snap
}
