package lease_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/lease"
)

// tenure is a span in which a holder may act on the lease: from the end of
// the call that took or renewed it to its start plus the TTL, less a margin
// for Redis' millisecond expiry clock. Redis ran the call somewhere between
// its start and end, so a lease that works is really held over the whole
// span, and two holders' spans never overlap.
type tenure struct {
	holder   string
	from, to time.Time
}

// Many holders race for one short lease: each renews at random moments
// around its expiry (so it often expires under a renewal), and now and then
// gives it up. A renewal that runs after the lease expired and another took
// it must not extend the other's lease, nor a give-up delete it; either
// would let two holders act at once, seen as overlapping tenures.
func TestLeaseNeverTwoHolders(t *testing.T) {
	t.Parallel()
	rdb := testenv.Redis(t)
	key := "fs:test:lease:" + testenv.Suffix()
	t.Cleanup(func() { rdb.Del(context.Background(), key) })
	const (
		holders = 16
		ttl     = 8 * time.Millisecond
		margin  = 2 * time.Millisecond
		runFor  = 3 * time.Second
	)
	var (
		mu      sync.Mutex
		tenures []tenure
		wg      sync.WaitGroup
	)
	ctx := context.Background()
	stop := time.Now().Add(runFor)
	for h := range holders {
		name := fmt.Sprintf("h%d", h)
		wg.Go(func() {
			for time.Now().Before(stop) {
				start := time.Now()
				ok, err := lease.Hold(ctx, rdb, key, name, ttl)
				end := time.Now()
				if err != nil {
					t.Errorf("%s: hold: %v", name, err)
					return
				}
				// Real time is the subject: the lease expires by Redis'
				// clock, so a holder renews (or gives up) at random moments
				// around the real expiry, and a loser retries after a moment.
				pause := time.Duration(rand.N(200)) * time.Microsecond
				if ok {
					pause = ttl - time.Millisecond + time.Duration(rand.N(2000))*time.Microsecond
				}
				time.Sleep(pause)
				if !ok {
					continue
				}
				until := start.Add(ttl - margin)
				if rand.N(8) == 0 {
					// Give it up late, around its expiry.
					dropAt := time.Now()
					if dropAt.Before(until) {
						until = dropAt
					}
					if err := lease.Drop(ctx, rdb, key, name); err != nil {
						t.Errorf("%s: drop: %v", name, err)
						return
					}
				}
				if end.Before(until) {
					mu.Lock()
					tenures = append(tenures, tenure{name, end, until})
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	if len(tenures) < 50 {
		t.Fatalf("only %d tenures in %v: the race was not run", len(tenures), runFor)
	}
	holdersSeen := map[string]bool{}
	overlaps := 0
	for i, a := range tenures {
		holdersSeen[a.holder] = true
		for _, b := range tenures[i+1:] {
			if a.holder != b.holder && a.from.Before(b.to) && b.from.Before(a.to) {
				if overlaps < 5 {
					t.Errorf("%s held the lease over [%v, %v] and %s over [%v, %v] at once",
						a.holder, a.from.Sub(stop.Add(-runFor)), a.to.Sub(stop.Add(-runFor)),
						b.holder, b.from.Sub(stop.Add(-runFor)), b.to.Sub(stop.Add(-runFor)))
				}
				overlaps++
			}
		}
	}
	t.Logf("%d tenures by %d holders, %d overlapping pairs", len(tenures), len(holdersSeen), overlaps)
	if len(holdersSeen) < 2 {
		t.Fatalf("one holder kept the lease throughout: the race was not run")
	}
}

// A holder whose lease expired and was taken by another can neither renew
// it nor give it up: the new holder keeps it.
func TestLeaseExpiredHolderCannotTouchTheNext(t *testing.T) {
	t.Parallel()
	rdb := testenv.Redis(t)
	ctx := context.Background()
	key := "fs:test:lease:" + testenv.Suffix()
	t.Cleanup(func() { rdb.Del(context.Background(), key) })
	if ok, err := lease.Hold(ctx, rdb, key, "a", 20*time.Millisecond); err != nil || !ok {
		t.Fatalf("a takes a free lease: %v, %v", ok, err)
	}
	if ok, _ := lease.Hold(ctx, rdb, key, "b", time.Second); ok {
		t.Fatal("b took a's lease")
	}
	testenv.Eventually(t, 5*time.Second, 5*time.Millisecond, func() bool { return rdb.Exists(ctx, key).Val() == 0 },
		"a's 20 ms lease never expired")
	if ok, err := lease.Hold(ctx, rdb, key, "b", time.Second); err != nil || !ok {
		t.Fatalf("b takes the lease a let expire: %v, %v", ok, err)
	}
	if ok, _ := lease.Hold(ctx, rdb, key, "a", 10*time.Second); ok {
		t.Fatal("a renewed the lease b holds")
	}
	if err := lease.Drop(ctx, rdb, key, "a"); err != nil {
		t.Fatal(err)
	}
	if cur := rdb.Get(ctx, key).Val(); cur != "b" {
		t.Fatalf("after a's renewal and drop the lease is %q's; want b's", cur)
	}
	if ttl := rdb.PTTL(ctx, key).Val(); ttl <= 0 || ttl > time.Second {
		t.Fatalf("b's lease TTL = %v; want within (0, 1s] (a's renewal must not extend it)", ttl)
	}
	if ok, _ := lease.Hold(ctx, rdb, key, "b", 5*time.Second); !ok {
		t.Fatal("b could not renew its lease")
	}
	if ttl := rdb.PTTL(ctx, key).Val(); ttl <= time.Second {
		t.Fatalf("b's renewed lease TTL = %v; want above 1s", ttl)
	}
	if err := lease.Drop(ctx, rdb, key, "b"); err != nil {
		t.Fatal(err)
	}
	if rdb.Exists(ctx, key).Val() != 0 {
		t.Fatal("b's drop left the lease")
	}
}
