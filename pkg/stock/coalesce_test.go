package stock_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/reqid"
	"github.com/flashsale-dev/flashsale/pkg/stock"
)

// batchSizes records the Coalescer's batch sizes.
type batchSizes struct {
	mu      sync.Mutex
	batches int
	calls   int
	largest int
}

func (b *batchSizes) observe(n int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.batches++
	b.calls += n
	b.largest = max(b.largest, n)
}

// TestCoalescerRepliesEachCaller: many callers at once each get their own
// reply; a command Redis refuses fails only that caller; and the calls did
// share round trips (fewer batches than calls).
func TestCoalescerRepliesEachCaller(t *testing.T) {
	t.Parallel()
	rdb := testenv.Redis(t)
	var sizes batchSizes
	co := stock.NewCoalescer(rdb, stock.CoalesceConfig{MaxBatch: 64, Flushers: 2, Observe: sizes.observe})
	defer co.Close()
	bad := "coalesce-bad-" + testenv.Suffix()
	if err := rdb.Set(context.Background(), bad, "not a number", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	const callers = 3000
	var wg sync.WaitGroup
	var wrong, failedBad atomic.Int64
	for i := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if i%100 == 7 {
				err := co.Do(ctx, redis.NewIntCmd(ctx, "incr", bad))
				if err != nil && !errors.Is(err, stock.ErrNotSent) {
					failedBad.Add(1)
				}
				return
			}
			want := fmt.Sprintf("caller-%d", i)
			cmd := redis.NewStringCmd(ctx, "echo", want)
			if err := co.Do(ctx, cmd); err != nil || cmd.Val() != want {
				t.Errorf("caller %d: got %q, %v", i, cmd.Val(), err)
				wrong.Add(1)
			}
		}()
	}
	wg.Wait()
	if wrong.Load() > 0 {
		t.Fatalf("%d callers got another's reply or an error", wrong.Load())
	}
	if failedBad.Load() != callers/100 {
		t.Fatalf("%d of %d refused commands failed", failedBad.Load(), callers/100)
	}
	if sizes.calls != callers || sizes.batches >= callers {
		t.Fatalf("%d calls in %d batches (largest %d): nothing was coalesced", sizes.calls, sizes.batches, sizes.largest)
	}
	t.Logf("%d calls in %d batches, largest %d", sizes.calls, sizes.batches, sizes.largest)
}

// TestCoalescerSendsAloneWhenIdle: a lone call is its own batch at once.
func TestCoalescerSendsAloneWhenIdle(t *testing.T) {
	t.Parallel()
	var sizes batchSizes
	co := stock.NewCoalescer(testenv.Redis(t), stock.CoalesceConfig{MaxBatch: 64, Flushers: 2, Observe: sizes.observe})
	defer co.Close()
	for range 20 {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := co.Do(ctx, redis.NewStatusCmd(ctx, "ping")); err != nil {
			t.Fatal(err)
		}
		cancel()
	}
	if sizes.batches != 20 || sizes.largest != 1 {
		t.Fatalf("20 sequential calls went in %d batches, largest %d", sizes.batches, sizes.largest)
	}
}

// TestCoalescerReloadsScriptsOnce: after SCRIPT FLUSH every coalesced
// script call still gets its reply (EVAL after NOSCRIPT).
func TestCoalescerReloadsScriptsOnce(t *testing.T) {
	red := testenv.StartPrivateRedis(t)
	rdb := red.Client(2 * time.Second)
	co := stock.NewCoalescer(rdb, stock.CoalesceConfig{MaxBatch: 32, Flushers: 2})
	defer co.Close()
	s := stock.New(rdb).WithCoalescer(co)
	ctx := context.Background()
	if err := rdb.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	id := warmItem(t, stock.New(rdb), 1000, 1)
	var wg sync.WaitGroup
	var admitted atomic.Int64
	for u := range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := s.Admit(ctx, stock.AdmitRequest{ItemID: id, UserID: int64(u + 1), Qty: 1, RequestID: reqid.New(id, time.Now()),
				Deadline: time.Now().Add(5 * time.Second)})
			if err != nil || r.Code != stock.Admitted {
				t.Errorf("user %d: %v %v", u+1, r.Code, err)
				return
			}
			admitted.Add(1)
		}()
	}
	wg.Wait()
	if left, _, _ := stock.New(rdb).Stock(ctx, id); admitted.Load() != 200 || left != 800 {
		t.Fatalf("admitted %d, stock %d, want 200 and 800", admitted.Load(), left)
	}
}

// outcome is one coalesced admission's result.
type outcome struct {
	rid      string
	user     int64
	code     stock.AdmitCode
	err      error
	deadline time.Time
	returned time.Time
}

// TestCoalescedAdmissionThroughStallAndKill races many buyers, each with
// its own random deadline, through one Coalescer at one item while its
// Redis is stalled (SIGSTOP) and then killed mid-batch. Every caller gets
// exactly its own reply or an error, none waits past its deadline, a call
// reported never sent reserved nothing, and nothing is reserved twice.
func TestCoalescedAdmissionThroughStallAndKill(t *testing.T) {
	red := testenv.StartPrivateRedis(t)
	rdb := red.Client(time.Second)
	co := stock.NewCoalescer(rdb, stock.CoalesceConfig{MaxBatch: 64, Flushers: 2})
	defer co.Close()
	s := stock.New(rdb).WithCoalescer(co)
	const units, buyers = 1500, 4000
	id := warmItem(t, stock.New(rdb), units, 1)

	// burst launches buyers from..to-1 in the background, 10 every
	// millisecond (so the burst lasts about 400 ms and a fault lands in its
	// middle), each with a random deadline. It returns once a quarter of
	// them came back (the load runs), with a channel closed once all have
	// and the count of those that failed so far.
	burst := func(from, to int64, results chan<- outcome) (<-chan struct{}, *atomic.Int64) {
		var returned, failed atomic.Int64
		done := make(chan struct{})
		go func() {
			defer close(done)
			var wg sync.WaitGroup
			defer wg.Wait()
			tick := time.NewTicker(time.Millisecond)
			defer tick.Stop()
			for u := from; u < to; u++ {
				if (u-from)%10 == 0 {
					<-tick.C
				}
				wg.Go(func() {
					d := time.Duration(20+rand.IntN(480)) * time.Millisecond
					ctx, cancel := context.WithTimeout(context.Background(), d)
					defer cancel()
					dl, _ := ctx.Deadline()
					rid := reqid.New(id, time.Now())
					r, err := s.Admit(ctx, stock.AdmitRequest{ItemID: id, UserID: u, Qty: 1, RequestID: rid, Deadline: dl})
					if err == nil && r.Code == stock.Admitted && r.RequestID != "" && r.RequestID != rid {
						t.Errorf("user %d got request %s's reply", u, r.RequestID)
					}
					results <- outcome{rid: rid, user: u, code: r.Code, err: err, deadline: dl, returned: time.Now()}
					if err != nil {
						failed.Add(1)
					}
					returned.Add(1)
				})
			}
		}()
		testenv.Eventually(t, 30*time.Second, time.Millisecond, func() bool { return returned.Load() >= (to-from)/4 },
			"a quarter of the burst never came back")
		return done, &failed
	}

	// Phase 1: a burst with a stall in its middle: from a quarter of the
	// burst on, until the stall has cut calls (their deadlines ended while
	// Redis answered nothing) or the burst is over.
	results := make(chan outcome, buyers)
	stalls := newStallMeter()
	done, cut := burst(1, buyers+1, results)
	red.Pause()
	testenv.Eventually(t, 30*time.Second, time.Millisecond, func() bool {
		select {
		case <-done:
			return true // the check below says the stall cut nothing
		default:
			return cut.Load() >= 50
		}
	}, "the stalled burst never ended")
	red.Resume()
	<-done
	close(results)
	var all []outcome
	for o := range results {
		all = append(all, o)
	}
	checkDeadlines(t, all, stalls)

	// Nothing reserved twice, nothing reserved by a call reported never
	// sent or refused, every admitted call's reservation present.
	ctx := context.Background()
	res, err := rdb.HGetAll(ctx, stock.KeysOf(id).Reservations).Result()
	if err != nil {
		t.Fatal(err)
	}
	left, _, err := stock.New(rdb).Stock(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(res))+left != units {
		t.Fatalf("%d reservations + %d stock left != %d units", len(res), left, units)
	}
	holders, err := rdb.HGetAll(ctx, stock.KeysOf(id).Holders).Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(holders) != len(res) {
		t.Fatalf("%d buyer marks for %d reservations", len(holders), len(res))
	}
	var admitted, notSent, ambiguous, refused int
	for _, o := range all {
		_, has := res[o.rid]
		switch {
		case o.err == nil && o.code == stock.Admitted:
			admitted++
			if !has {
				t.Errorf("user %d admitted without a reservation", o.user)
			}
		case o.err != nil && stock.NotSent(o.err):
			notSent++
			if has {
				t.Errorf("user %d: call reported never sent (%v) but it reserved", o.user, o.err)
			}
		case o.err != nil:
			ambiguous++
		default:
			refused++
			if has {
				t.Errorf("user %d: verdict %s but it reserved", o.user, o.code)
			}
		}
	}
	t.Logf("stall: %d admitted, %d never sent, %d ambiguous, %d refused (sold out, late); %d reserved, %d left",
		admitted, notSent, ambiguous, refused, len(res), left)
	if admitted == 0 || notSent+ambiguous == 0 {
		t.Fatalf("the stall did not cut any call (%d admitted, %d errors): the test proves nothing", admitted, notSent+ambiguous)
	}

	// Phase 2: Redis SIGKILLed mid-burst: every caller still returns by its
	// deadline, with an error or its own verdict.
	results = make(chan outcome, buyers)
	stalls = newStallMeter()
	done, _ = burst(buyers+1, 2*buyers+1, results)
	red.Stop()
	<-done
	close(results)
	all = all[:0]
	var failed int
	for o := range results {
		all = append(all, o)
		if o.err != nil {
			failed++
		}
	}
	checkDeadlines(t, all, stalls)
	if failed == 0 {
		t.Fatal("no call failed after the kill: the test proves nothing")
	}
}

// checkDeadlines fails for every caller that came back long after its
// deadline. The slack covers the scheduler of a loaded 2-core machine, not
// a batch: a caller waits for its own context only. A stall of the whole
// process (the machine busy elsewhere: a cold make test had 15 of 4,000
// callers 1.01 s late, none by more) is measured by stalls and added, so
// the test fails on a caller that waited on something other than its
// context, not on a process that was not running.
func checkDeadlines(t *testing.T, all []outcome, stalls *stallMeter) {
	t.Helper()
	worst := stalls.stop()
	slack := time.Second + worst
	late := 0
	for _, o := range all {
		if o.returned.After(o.deadline.Add(slack)) {
			late++
			if late <= 5 {
				t.Errorf("user %d returned %v after its deadline (%v)", o.user, o.returned.Sub(o.deadline), o.err)
			}
		}
	}
	if late > 0 {
		t.Fatalf("%d of %d callers waited past their deadline + %v (the process's worst stall was %v)", late, len(all), slack, worst)
	}
	t.Logf("every caller returned within its deadline + %v (worst process stall %v)", slack, worst)
}

// stallMeter measures how long the test process went without running: a
// goroutine takes a 5 ms ticker's ticks and records the worst gap beyond
// 5 ms between taking two (a stalled process takes none).
type stallMeter struct {
	done  chan struct{}
	worst chan time.Duration
}

func newStallMeter() *stallMeter {
	m := &stallMeter{done: make(chan struct{}), worst: make(chan time.Duration, 1)}
	go func() {
		const every = 5 * time.Millisecond
		tick := time.NewTicker(every)
		defer tick.Stop()
		var worst time.Duration
		last := time.Now()
		for {
			select {
			case <-m.done:
				m.worst <- worst
				return
			case <-tick.C:
				now := time.Now()
				worst = max(worst, now.Sub(last)-every)
				last = now
			}
		}
	}()
	return m
}

// stop ends the measurement and returns the worst stall seen.
func (m *stallMeter) stop() time.Duration {
	close(m.done)
	return <-m.worst
}

// TestCoalescerCloseFailsQueuedCallsAsNotSent: closing with calls queued
// behind a stalled Redis answers each queued call ErrNotSent at once (it
// never reached Redis, so its caller may say "nothing happened"), while the
// batch already on the wire ends with its own deadline; nobody hangs.
func TestCoalescerCloseFailsQueuedCallsAsNotSent(t *testing.T) {
	red := testenv.StartPrivateRedis(t)
	var sizes batchSizes
	co := stock.NewCoalescer(red.Client(time.Second), stock.CoalesceConfig{MaxBatch: 4, Flushers: 1, Observe: sizes.observe})
	red.Pause()
	defer red.Resume()
	const callers = 50
	errs := make(chan error, callers)
	var calling atomic.Int64
	for i := range callers {
		go func() {
			calling.Add(1)
			// A deadline far past the test's patience: only Close can
			// release the queued calls in time.
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			errs <- co.Do(ctx, redis.NewStringCmd(ctx, "echo", fmt.Sprint(i)))
		}()
	}
	// The first batch is on the wire (sent, its reply never coming: it
	// ends with the client's 1 s read timeout), and every caller started.
	testenv.Eventually(t, 10*time.Second, time.Millisecond, func() bool {
		sizes.mu.Lock()
		defer sizes.mu.Unlock()
		return sizes.batches >= 1 && calling.Load() == callers
	}, "no batch sent, or not every caller started")
	closed := make(chan struct{})
	go func() { co.Close(); close(closed) }()
	var notSent, other int
	for range callers {
		select {
		case err := <-errs:
			if errors.Is(err, stock.ErrNotSent) && stock.NotSent(err) {
				notSent++
			} else {
				other++
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("a caller hung after Close (%d not sent, %d other so far)", notSent, other)
		}
	}
	<-closed
	if notSent < callers-4 || other > 4 {
		t.Fatalf("%d calls reported never sent, %d other errors: want every queued call (at least %d) never sent, at most one batch of 4 ambiguous", notSent, other, callers-4)
	}
	if err := co.Do(context.Background(), redis.NewStatusCmd(context.Background(), "ping")); !errors.Is(err, stock.ErrNotSent) {
		t.Fatalf("Do after Close: %v, want ErrNotSent", err)
	}
}
