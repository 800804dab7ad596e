package orderstatus

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/reqid"
	"github.com/flashsale-dev/flashsale/pkg/stock"
	"github.com/flashsale-dev/flashsale/pkg/store"
)

// TestRequestCacheOneLoadPerTTL races many pollers at unknown request ids:
// MySQL is asked once per id while "no such request" is fresh, however the
// pollers' checks interleave with the flight that records the miss (a
// poller that checked just before the miss was recorded and joined just
// after that flight ended used to start a second query: the make test run
// of 2026-12-06 saw 2 queries for one id within 116 ms). Once the TTL has
// passed on the injected clock, one more load, and a found state is shared.
func TestRequestCacheOneLoadPerTTL(t *testing.T) {
	var clock atomic.Int64 // nanoseconds since base
	base := time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC)
	c := newRequestCache()
	c.now = func() time.Time { return base.Add(time.Duration(clock.Load())) }
	loads := map[string]*atomic.Int64{}
	const ids, pollers = 200, 32
	for i := range ids {
		loads[fmt.Sprint(i)] = new(atomic.Int64)
	}
	unknown := func(rid string) func(context.Context) (store.RequestState, error) {
		return func(context.Context) (store.RequestState, error) {
			loads[rid].Add(1)
			return store.RequestState{}, store.ErrNotFound
		}
	}
	poll := func() {
		var wg sync.WaitGroup
		for i := range ids {
			rid := fmt.Sprint(i)
			for range pollers {
				wg.Go(func() {
					if _, err := c.read(context.Background(), rid, unknown(rid)); !errors.Is(err, store.ErrNotFound) {
						t.Errorf("read %s: %v, want ErrNotFound", rid, err)
					}
				})
			}
		}
		wg.Wait()
	}
	poll()
	for rid, n := range loads {
		if got := n.Load(); got != 1 {
			t.Fatalf("request %s: %d loads by %d pollers within one TTL, want 1", rid, got, pollers)
		}
	}
	clock.Add(int64(unknownRequestTTL))
	poll()
	for rid, n := range loads {
		if got := n.Load(); got != 2 {
			t.Fatalf("request %s: %d loads after the TTL passed, want 2", rid, got)
		}
	}
	found := store.RequestState{Decision: store.Decision{RequestID: "x", Outcome: store.Aborted}}
	st, err := c.read(context.Background(), "x", func(context.Context) (store.RequestState, error) { return found, nil })
	if err != nil || st.Decision.RequestID != "x" {
		t.Fatalf("found state: %+v, %v", st, err)
	}
}

// TestRequestCacheCallerGivesUp: a poller whose context ends stops waiting
// with its context's error, while the shared load goes on for the others.
func TestRequestCacheCallerGivesUp(t *testing.T) {
	c := newRequestCache()
	release := make(chan struct{})
	load := func(ctx context.Context) (store.RequestState, error) {
		<-release
		return store.RequestState{}, ctx.Err()
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.read(ctx, "r", load); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled caller: %v, want context.Canceled", err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := c.read(context.Background(), "r", load)
		done <- err
	}()
	close(release)
	if err := <-done; err != nil {
		t.Fatalf("the load went on detached from the caller that gave up: %v", err)
	}
}

// TestUnknownRequestCostsOneQueryPerTTL: polling a well-formed request id
// that neither Redis nor MySQL knows costs MySQL one query per TTL; a
// decision MySQL makes later is visible once the TTL has passed, and a
// status Redis has wins at once over the remembered "unknown". The request
// cache's clock is the test's, advanced past the TTL, so counts are exact.
func TestUnknownRequestCostsOneQueryPerTTL(t *testing.T) {
	base, _ := testenv.MySQL(t)
	db, queries := testenv.CountingMySQL(t, base, "FROM request_outcomes")
	st := stock.New(testenv.Redis(t))
	r := NewReader(ReaderConfig{StoreTimeout: 2 * time.Second}, st, db, prometheus.NewRegistry(), testenv.LogTail(t))
	var clock atomic.Int64 // nanoseconds since the start
	start := time.Now()
	r.reqs.now = func() time.Time { return start.Add(time.Duration(clock.Load())) }
	want := func(what string, n int64) {
		t.Helper()
		if got := queries.Load(); got != n {
			t.Fatalf("%s: %d MySQL queries in all, want %d", what, got, n)
		}
		// flashsale_status_mysql_reads_total counts what MySQL saw.
		if got := testutil.ToFloat64(r.fromMySQL); got != float64(n) {
			t.Fatalf("%s: flashsale_status_mysql_reads_total %v, want %d", what, got, n)
		}
	}
	const user = 77
	item := testenv.ItemID()
	rid := reqid.New(item, time.Now())
	burst(t, r, 100, rid, user)
	want("200 polls of an unknown request within one TTL", 1)
	clock.Add(int64(unknownRequestTTL - time.Millisecond))
	burst(t, r, 50, rid, user)
	want("100 more polls just before the TTL ends", 1)
	clock.Add(int64(time.Millisecond))
	burst(t, r, 50, rid, user)
	want("100 more polls in the next TTL", 2)
	// MySQL decides it now (say the ingress recorded ABORTED): the poll must
	// see it once the TTL has passed.
	if _, _, err := store.Decide(context.Background(), base, store.Decision{RequestID: rid, ItemID: item, UserID: user, Qty: 1,
		Outcome: store.Aborted, Reason: store.ReasonPublishFailed}); err != nil {
		t.Fatal(err)
	}
	clock.Add(int64(unknownRequestTTL))
	v, err := r.Read(context.Background(), rid, user)
	if err != nil {
		t.Fatalf("request MySQL decided: %v one TTL after, want its status", err)
	}
	if v.Status != Rejected {
		t.Fatalf("decided request: status %v, want %s", v.Status, Rejected)
	}
	want("the poll after the TTL", 3)

	// A status in Redis beats a remembered "unknown" at once.
	rid2 := reqid.New(item, time.Now())
	burst(t, r, 10, rid2, user)
	want("20 polls of a second unknown request", 4)
	if err := Put(context.Background(), st, View{RequestID: rid2, ItemID: item, Qty: 1,
		Status: Rejected, Reason: store.ReasonSoldOut, UserID: user}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Read(context.Background(), rid2, user); err != nil {
		t.Fatalf("request with a cached status: %v, want its status at once", err)
	}
}

// burst reads rid as user n times at once, then n times one after the
// other, and checks each read is ErrNoRequest.
func burst(t *testing.T, r *Reader, n int, rid string, user int64) {
	t.Helper()
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			if _, err := r.Read(context.Background(), rid, user); !errors.Is(err, ErrNoRequest) {
				t.Errorf("read %s: %v, want ErrNoRequest", rid, err)
			}
		})
	}
	wg.Wait()
	for range n {
		if _, err := r.Read(context.Background(), rid, user); !errors.Is(err, ErrNoRequest) {
			t.Fatalf("read %s: %v, want ErrNoRequest", rid, err)
		}
	}
}
