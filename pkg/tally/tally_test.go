package tally

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/stock"
)

// answersOf reads item's tally and fails the test if Redis does not answer.
func answersOf(t *testing.T, tl *Tally, item int64) Snapshot {
	t.Helper()
	s, err := Read(context.Background(), tl.rdb, item)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestReplicasAddUp: two replicas' counts, recorded concurrently, add up in
// Redis to exactly what was recorded, answers and latency buckets both, and
// the hash carries a TTL.
func TestReplicasAddUp(t *testing.T) {
	rdb := testenv.Redis(t)
	a := New(rdb, time.Hour, 2*time.Second, testenv.LogTail(t))
	b := New(rdb, time.Hour, 2*time.Second, testenv.LogTail(t))
	item := testenv.ItemID()
	t.Cleanup(func() { rdb.Del(context.Background(), stock.TallyKey(item)) })
	lats := []time.Duration{500 * time.Microsecond, 3 * time.Millisecond, 40 * time.Millisecond, 7 * time.Second}
	var wg sync.WaitGroup
	for g := range 8 {
		tl := a
		if g%2 == 1 {
			tl = b
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 1000 {
				tl.Record(item, Accepted, lats[i%len(lats)])
				tl.Record(item, "sold_out", 0)
				if i%10 == 0 {
					tl.Record(item, "a_code_never_seen", 0)
				}
			}
		}()
		if g == 3 { // a flush mid-way: counts taken while others are added
			ctx := context.Background()
			if err := a.Flush(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	wg.Wait()
	for _, tl := range []*Tally{a, b} {
		if err := tl.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	s := answersOf(t, a, item)
	if s.Answers[Accepted] != 8000 || s.Answers["sold_out"] != 8000 || s.Answers["a_code_never_seen"] != 800 {
		t.Fatalf("answers %v, want 8000 accepted, 8000 sold_out, 800 a_code_never_seen", s.Answers)
	}
	for _, k := range Known {
		if _, ok := s.Answers[k]; !ok {
			t.Errorf("known outcome %s missing from %v", k, s.Answers)
		}
	}
	h := s.Accepted
	// 2000 each at 0.5 ms (le .001), 3 ms (le .005), 40 ms (le .05), 7 s (+Inf).
	want := map[float64]int64{.001: 2000, .0025: 2000, .005: 4000, .01: 4000, .025: 4000, .05: 6000, 5: 6000}
	for _, bk := range h.Buckets {
		if w, ok := want[bk.LE]; ok && bk.Count != w {
			t.Errorf("bucket le=%v count %d, want %d (%v)", bk.LE, bk.Count, w, h.Buckets)
		}
	}
	if h.Count != 8000 {
		t.Errorf("histogram count %d, want 8000", h.Count)
	}
	if wantSum := 2000 * (0.0005 + 0.003 + 0.040 + 7); h.SumSeconds < wantSum-1e-6 || h.SumSeconds > wantSum+1e-6 {
		t.Errorf("sum %v s, want %v", h.SumSeconds, wantSum)
	}
	ttl := rdb.TTL(context.Background(), stock.TallyKey(item)).Val()
	if ttl <= 0 || ttl > TTL {
		t.Errorf("tally TTL %v, want (0, %v]", ttl, TTL)
	}
}

// TestRedisOutageKeepsCounts: while Redis hangs (SIGSTOP) answers are
// counted, not held behind the flush that waits on it, and that flush
// fails; while Redis is gone, flushes fail; once it is back, the next flush
// adds every count kept.
func TestRedisOutageKeepsCounts(t *testing.T) {
	pr := testenv.StartPrivateRedis(t)
	// Timeouts far beyond the test: the hung flush lasts until the test
	// ends it, so the answers below are counted while it provably waits
	// (a hang guard, not a bound the flush is held to).
	rdb := pr.Client(time.Minute)
	tl := New(rdb, time.Hour, time.Minute, testenv.LogTail(t))
	item := testenv.ItemID()
	for range 100 {
		tl.Record(item, Accepted, time.Millisecond)
	}
	if err := tl.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}

	for range 50_000 {
		tl.Record(item, "sold_out", 0)
	}
	pr.Pause()
	flushed := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		flushed <- tl.Flush(ctx)
	}()
	soldOut := tl.entry(item).counter("sold_out")
	testenv.Eventually(t, 10*time.Second, time.Millisecond, func() bool { return soldOut.Load() == 0 },
		"the flush never took the 50,000 answers")
	for range 50_000 {
		tl.Record(item, "sold_out", 0)
	}
	select {
	case err := <-flushed:
		t.Fatalf("the flush to a hung Redis returned (%v) before the test ended it", err)
	default: // the 50,000 were counted while the flush waited on Redis
	}
	if n := soldOut.Load(); n != 50_000 {
		t.Fatalf("%d answers counted while the flush waited, want 50000", n)
	}
	pr.Stop() // the hung server dies: the flush's connection with it
	if err := <-flushed; err == nil {
		t.Fatal("a flush to a hung Redis succeeded")
	}
	for range 10 {
		tl.Record(item, Accepted, 2*time.Millisecond)
	}
	if err := tl.Flush(context.Background()); err == nil {
		t.Fatal("a flush to a stopped Redis succeeded")
	}
	pr.Start() // empty: the first 100 are gone with it, the rest must arrive
	testenv.Eventually(t, 5*time.Second, 50*time.Millisecond, func() bool {
		return tl.Flush(context.Background()) == nil
	}, "flush did not succeed after Redis came back")
	s := answersOf(t, tl, item)
	// The 50,000 sold_out the hung flush gave back, the 50,000 counted
	// meanwhile and the 10 accepted recorded while Redis was down.
	if s.Answers["sold_out"] != 100_000 || s.Answers[Accepted] != 10 || s.Accepted.Count != 10 {
		t.Fatalf("after the outage: %v, %d 202s in the histogram; want 100000 sold_out, 10 accepted", s.Answers, s.Accepted.Count)
	}
}

// TestEvictionLosesNothing: items that fall idle leave memory while other
// goroutines keep answering for them; no count is lost (run it with -race).
func TestEvictionLosesNothing(t *testing.T) {
	rdb := testenv.Redis(t)
	tl := New(rdb, time.Millisecond, 2*time.Second, testenv.LogTail(t))
	tl.idleAfter = time.Millisecond // evict after one idle flush
	tl.Start()
	items := []int64{testenv.ItemID(), testenv.ItemID(), testenv.ItemID()}
	t.Cleanup(func() {
		for _, it := range items {
			rdb.Del(context.Background(), stock.TallyKey(it))
		}
	})
	var wg sync.WaitGroup
	for g := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 2000 {
				it := items[(g+i)%len(items)]
				if i%50 == 0 && !evicted(tl, it) {
					t.Errorf("item %d never left memory with every goroutine waiting for that", it)
					return
				}
				tl.Record(it, "sold_out", 0)
			}
		}()
	}
	wg.Wait()
	if err := tl.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, it := range items {
		total += answersOf(t, tl, it).Answers["sold_out"]
	}
	if total != 12_000 {
		t.Fatalf("%d answers in Redis, want 12000", total)
	}
}

// evicted waits until item has left tl's memory, so that the caller's next
// answer for it races the eviction of another or makes a new entry; false
// if it does not within a hang guard. Every goroutine of the test waits so
// every 50 answers: once all wait, nothing is counted, and the next idle
// flushes evict every item.
func evicted(tl *Tally, item int64) bool {
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for hang := time.Now().Add(30 * time.Second); time.Now().Before(hang); <-tick.C {
		if _, ok := tl.items.Load(item); !ok {
			return true
		}
	}
	return false
}

// TestCloseFlushes: a replica that shuts down before its first tick still
// adds its counts (Close flushes).
func TestCloseFlushes(t *testing.T) {
	rdb := testenv.Redis(t)
	tl := New(rdb, time.Hour, 2*time.Second, testenv.LogTail(t))
	tl.Start()
	item := testenv.ItemID()
	tl.Record(item, "rate_limited", 0)
	if err := tl.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := answersOf(t, tl, item).Answers["rate_limited"]; n != 1 {
		t.Fatalf("rate_limited %d after Close, want 1", n)
	}
}

// TestItemsBounded: past maxItems items, new ones are not counted (and the
// drop is counted), so made-up item ids cannot fill memory.
func TestItemsBounded(t *testing.T) {
	tl := New(nil, time.Hour, time.Second, testenv.LogTail(t))
	for i := range int64(maxItems + 10) {
		tl.Record(i+1, "sold_out", 0)
	}
	if tl.n.Load() != maxItems || tl.Dropped() != 10 {
		t.Fatalf("%d items held, %d dropped; want %d and 10", tl.n.Load(), tl.Dropped(), maxItems)
	}
}

// BenchmarkRecord: what counting costs an answer, with 2 goroutines per
// core on one item (the sold-out fast path's contention).
func BenchmarkRecord(b *testing.B) {
	tl := New(nil, time.Hour, time.Second, nil)
	b.SetParallelism(2)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			tl.Record(42, "sold_out", 0)
		}
	})
}
