package reap_test

import (
	"context"
	"database/sql"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/flashsale-dev/flashsale/pkg/reap"
	"github.com/flashsale-dev/flashsale/pkg/stock"
	"github.com/flashsale-dev/flashsale/pkg/store"
)

// 200 orders with a payment window of seconds; 100 of them are paid while the
// reaper runs every 20ms, 20 of those pays fired right at the deadline, so
// pay and cancel race on the same rows. Every pay that succeeded stays PAID,
// every other order ends CANCELLED, never both, and each store gets back
// exactly the cancelled qty (I5, I6).
func TestPayAndCancelRaceAtDeadline(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const window = 4 * time.Second
	orders := make([]order, 200)
	var total int64
	for i := range orders {
		orders[i] = order{UserID: int64(1000 + i), Qty: 1 + i%3, ExpiresIn: window}
		total += int64(orders[i].Qty)
	}
	it := e.newItem(total+50, orders)
	r, reg := e.newReaper(reap.Config{BatchSize: 25})

	// The deadline by the database's clock, mapped onto this host's
	// monotonic clock (same machine: only the query's latency separates them).
	ctx := testCtx(t, 2*time.Minute)
	var deadline time.Time
	if err := e.db.QueryRowContext(ctx, "SELECT MIN(expires_at) FROM orders WHERE item_id = ?", it.ID).Scan(&deadline); err != nil {
		t.Fatal(err)
	}
	var dbNow time.Time
	if err := e.db.QueryRowContext(ctx, "SELECT NOW(3)").Scan(&dbNow); err != nil {
		t.Fatal(err)
	}
	hostDeadline := time.Now().Add(deadline.Sub(dbNow))

	type payResult struct {
		rid string
		ok  bool
	}
	results := make(chan payResult, 100)
	var wg sync.WaitGroup
	pay := func(i int, at time.Time) {
		defer wg.Done()
		// Real time is the subject: pay and cancel are each judged by
		// MySQL's NOW(3) against expires_at (no host clock decides an
		// expiry; Reaper.Clock only stamps the last-success gauge), so the
		// race at the deadline needs pays fired at real instants around it.
		time.Sleep(time.Until(at))
		rid := it.Requests[i]
		_, err := store.PayOrder(ctx, e.db, rid, orders[i].UserID)
		switch {
		case err == nil:
			results <- payResult{rid, true}
		case errors.Is(err, store.ErrNotPayable):
			results <- payResult{rid, false}
		default:
			t.Errorf("pay %s: %v", rid, err)
		}
	}

	reaperCtx, stopReaper := context.WithCancel(ctx)
	reaperDone := make(chan error, 1)
	go func() { reaperDone <- r.Run(reaperCtx) }()

	// 80 pays spread over the first 1.5s of the window, 20 within ±15ms of
	// the deadline.
	for i := range 80 {
		wg.Add(1)
		go pay(i, time.Now().Add(time.Duration(rand.IntN(1500))*time.Millisecond))
	}
	for i := 80; i < 100; i++ {
		wg.Add(1)
		go pay(i, hostDeadline.Add(time.Duration(i-90)*1500*time.Microsecond))
	}
	wg.Wait()
	close(results)
	paid := map[string]bool{}
	var atDeadlineWon int
	for res := range results {
		if res.ok {
			paid[res.rid] = true
		}
	}
	for i := 80; i < 100; i++ {
		if paid[it.Requests[i]] {
			atDeadlineWon++
		}
	}
	for i := range 80 {
		if !paid[it.Requests[i]] {
			t.Errorf("early pay of %s failed", it.Requests[i])
		}
	}

	stopReaper()
	<-reaperDone
	// One more pass after every pay has returned: nothing may be left UNPAID.
	if !r.RunPass(ctx) {
		t.Fatal("final pass failed")
	}

	st := e.statuses(it.ID)
	var cancelledQty int64
	var cancelled int
	for i, rid := range it.Requests {
		switch st[rid] {
		case store.Paid:
			if !paid[rid] {
				t.Errorf("%s is PAID but its pay failed", rid)
			}
		case store.Cancelled:
			if paid[rid] {
				t.Errorf("%s was paid but is CANCELLED", rid)
			}
			cancelled++
			cancelledQty += int64(orders[i].Qty)
		default:
			t.Errorf("%s is %s after the deadline", rid, st[rid])
		}
	}
	if n := e.count("SELECT COUNT(*) FROM orders WHERE item_id = ? AND ((status = 'PAID' AND cancelled_at IS NOT NULL) OR (status = 'CANCELLED' AND paid_at IS NOT NULL))", it.ID); n != 0 {
		t.Errorf("%d orders carry both a pay and a cancel time", n)
	}
	if n := e.count("SELECT COUNT(*) FROM stock_restores r JOIN orders o ON o.id = r.order_id WHERE o.item_id = ? AND o.status = 'CANCELLED' AND r.redis_applied_at IS NOT NULL", it.ID); n != int64(cancelled) {
		t.Errorf("applied restore records of cancelled orders = %d, want %d", n, cancelled)
	}
	if n := e.count("SELECT COUNT(*) FROM stock_restores WHERE item_id = ?", it.ID); n != int64(cancelled) {
		t.Errorf("restore records = %d, want %d (one per cancelled order)", n, cancelled)
	}
	if got, want := e.dbStock(it.ID), it.StartLeft+cancelledQty; got != want {
		t.Errorf("MySQL stock = %d, want %d", got, want)
	}
	if got, want := e.redisStock(it.ID), it.StartLeft+cancelledQty; got != want {
		t.Errorf("Redis stock = %d, want %d", got, want)
	}
	if got := metric(t, reg, "flashsale_reaper_cancellations_total"); got != float64(cancelled) {
		t.Errorf("cancellations metric = %v, want %d", got, cancelled)
	}
	if got := metric(t, reg, "flashsale_reaper_restores_total", "store", "redis"); got != float64(cancelled) {
		t.Errorf("redis restores metric = %v, want %d", got, cancelled)
	}
	if cancelled != 200-len(paid) {
		t.Errorf("cancelled %d + paid %d != 200", cancelled, len(paid))
	}
	e.auditOK(it.ID)
	t.Logf("paid %d (of them %d of 20 at the deadline), cancelled %d (qty %d)", len(paid), atDeadlineWon, cancelled, cancelledQty)
}

// Three replicas over 1,000 expired orders at once: SKIP LOCKED hands each
// order to exactly one of them; every order is cancelled once and restored
// once in each store.
//
// That the work is shared is asserted, not assumed: each replica's first
// batch waits after its commit until all three have committed one (so the
// three must be claiming at the same time, and each cancels some orders);
// and while another transaction holds the 100 oldest orders locked (a
// replica in the middle of its claim), the replicas skip them and cancel all
// the others instead of waiting.
func TestReplicasShareWorkExactlyOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := testCtx(t, 3*time.Minute)
	orders := make([]order, 1000)
	var qty int64
	for i := range orders {
		orders[i] = order{UserID: int64(i + 1), Qty: 1 + i%2, ExpiresIn: -time.Duration(1+i%50) * time.Second}
		qty += int64(orders[i].Qty)
	}
	it := e.newItem(qty+7, orders)

	const held = 100
	holder, err := e.db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Rollback()
	rows, err := holder.QueryContext(ctx, "SELECT id FROM orders WHERE item_id = ? AND status = 'UNPAID' ORDER BY expires_at LIMIT ? FOR UPDATE", it.ID, held)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		t.Fatal(err)
	}

	var rs []*reap.Reaper
	var regs []*prometheus.Registry
	var arrived atomic.Int32
	allIn := make(chan struct{})
	for range 3 {
		r, g := e.newReaper(reap.Config{BatchSize: 40})
		var first sync.Once
		r.AfterCommit = func(ctx context.Context, _ []store.Order) error {
			first.Do(func() {
				if arrived.Add(1) == 3 {
					close(allIn)
				}
				select {
				case <-allIn:
				case <-ctx.Done():
				case <-time.After(20 * time.Second):
					t.Errorf("a replica waited 20s after its first batch for the others to commit one: the replicas do not work at the same time")
				}
			})
			return nil
		}
		rs, regs = append(rs, r), append(regs, g)
	}

	runUntil(t, 2*time.Minute, func() bool {
		return e.count("SELECT COUNT(*) FROM orders WHERE item_id = ? AND status = 'UNPAID'", it.ID) == held &&
			e.count("SELECT COUNT(*) FROM stock_restores WHERE redis_applied_at IS NULL") == 0
	}, rs...)
	if err := holder.Rollback(); err != nil {
		t.Fatal(err)
	}
	runUntil(t, 2*time.Minute, func() bool {
		return e.count("SELECT COUNT(*) FROM orders WHERE item_id = ? AND status = 'UNPAID'", it.ID) == 0 &&
			e.count("SELECT COUNT(*) FROM stock_restores WHERE redis_applied_at IS NULL") == 0
	}, rs...)

	if n := e.count("SELECT COUNT(*) FROM orders WHERE item_id = ? AND status = 'CANCELLED'", it.ID); n != 1000 {
		t.Errorf("cancelled = %d, want 1000", n)
	}
	if n := e.count("SELECT COUNT(*) FROM stock_restores WHERE item_id = ?", it.ID); n != 1000 {
		t.Errorf("restore records = %d, want 1000", n)
	}
	if n := e.count("SELECT SUM(qty) FROM stock_restores WHERE item_id = ?", it.ID); n != qty {
		t.Errorf("restored qty in records = %d, want %d", n, qty)
	}
	if got, want := e.dbStock(it.ID), it.Total; got != want {
		t.Errorf("MySQL stock = %d, want %d", got, want)
	}
	if got, want := e.redisStock(it.ID), it.Total; got != want {
		t.Errorf("Redis stock = %d, want %d", got, want)
	}
	var cancels, redisRestores float64
	var per []float64
	for i, g := range regs {
		c := metric(t, g, "flashsale_reaper_cancellations_total")
		if c == 0 {
			t.Errorf("replica %d cancelled nothing: the work was not shared", i)
		}
		per = append(per, c)
		cancels += c
		redisRestores += metric(t, g, "flashsale_reaper_restores_total", "store", "redis")
	}
	if cancels != 1000 || redisRestores != 1000 {
		t.Errorf("replicas cancelled %v and restored %v in Redis, want 1000 each", cancels, redisRestores)
	}
	e.auditOK(it.ID)
	t.Logf("cancellations per replica: %v", per)
}

// errCrash stands for the process dying between the MySQL commit and the
// Redis restore.
var errCrash = errors.New("injected crash after commit")

// A crash between the MySQL commit and the Redis restore: MySQL has the
// cancellation, the stock and the restore record; Redis has nothing yet. The
// next pass completes the Redis restore exactly once, and later passes and a
// repeated Lua restore change nothing.
func TestCrashBetweenCommitAndRedisRestore(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	orders := make([]order, 30)
	var qty int64
	for i := range orders {
		orders[i] = order{UserID: int64(i + 1), Qty: 1 + i%3, ExpiresIn: -time.Second}
		qty += int64(orders[i].Qty)
	}
	it := e.newItem(qty+5, orders)
	r, reg := e.newReaper(reap.Config{BatchSize: 100})
	crashes := 0
	r.AfterCommit = func(context.Context, []store.Order) error {
		crashes++
		return errCrash
	}
	ctx := testCtx(t, time.Minute)
	if r.RunPass(ctx) {
		t.Fatal("pass succeeded with the crash injected")
	}
	if got := metric(t, reg, "flashsale_reaper_pass_failures_total"); got != 1 {
		t.Errorf("pass failures = %v, want 1", got)
	}
	if crashes != 1 {
		t.Errorf("crash hook ran %d times, want 1", crashes)
	}
	if got, want := e.dbStock(it.ID), it.Total; got != want {
		t.Errorf("MySQL stock after commit = %d, want %d", got, want)
	}
	if got := e.redisStock(it.ID); got != it.StartLeft {
		t.Errorf("Redis stock after crash = %d, want untouched %d", got, it.StartLeft)
	}
	if n := e.count("SELECT COUNT(*) FROM stock_restores WHERE redis_applied_at IS NULL"); n != 30 {
		t.Errorf("pending restores = %d, want 30", n)
	}

	r.AfterCommit = nil
	for range 3 {
		if !r.RunPass(ctx) {
			t.Fatal("repair pass failed")
		}
	}
	if crashes != 1 {
		t.Errorf("crash hook ran %d times; repair passes must find nothing left to cancel", crashes)
	}
	if got, want := e.redisStock(it.ID), it.Total; got != want {
		t.Errorf("Redis stock after repair = %d, want %d", got, want)
	}
	if n := e.count("SELECT COUNT(*) FROM stock_restores WHERE redis_applied_at IS NULL"); n != 0 {
		t.Errorf("pending restores after repair = %d", n)
	}
	if got := metric(t, reg, "flashsale_reaper_restores_total", "store", "redis"); got != 30 {
		t.Errorf("redis restores = %v, want 30", got)
	}
	// A replayed restore (a replica that crashed after Redis but before the
	// mark) is a no-op.
	var rid string
	if err := e.db.QueryRowContext(ctx, "SELECT o.request_id FROM stock_restores r JOIN orders o ON o.id = r.order_id ORDER BY r.order_id LIMIT 1").Scan(&rid); err != nil {
		t.Fatal(err)
	}
	if res, err := e.st.Restore(ctx, it.ID, 0, rid, 3); err != nil || res != stock.RestoreSeen {
		t.Errorf("replayed restore = %v, %v; want RestoreSeen", res, err)
	}
	if got, want := e.redisStock(it.ID), it.Total; got != want {
		t.Errorf("Redis stock after replay = %d, want %d", got, want)
	}
	e.auditOK(it.ID)
}

// A reaper whose host clock is a day ahead must not cancel early: deadlines
// are judged by MySQL's NOW(3) only. CancelExpired takes no time at all; the
// reaper's only host clock (Clock, for the last-success gauge) is skewed here
// and nothing that is not expired by the database's clock is touched.
func TestHostClockAheadDoesNotCancelEarly(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var orders []order
	for i := range 60 {
		exp := -time.Second // expired
		switch i % 3 {
		case 1:
			exp = time.Hour
		case 2:
			exp = 30 * time.Second
		}
		orders = append(orders, order{UserID: int64(i + 1), Qty: 1, ExpiresIn: exp})
	}
	it := e.newItem(100, orders)
	r, reg := e.newReaper(reap.Config{BatchSize: 7, OrphanGrace: time.Minute})
	skewed := time.Now().Add(24 * time.Hour)
	r.Clock = func() time.Time { return skewed }

	// A reservation made now: a day-ahead host would think it a day old.
	ctx := testCtx(t, time.Minute)
	if res, err := e.st.Admit(ctx, stock.AdmitRequest{ItemID: it.ID, UserID: 9999, Qty: 1, RequestID: "fresh-req", Now: time.Now()}); err != nil || res.Code != stock.Admitted {
		t.Fatalf("admit: %v %v", res, err)
	}
	for range 3 {
		if !r.RunPass(ctx) {
			t.Fatal("pass failed")
		}
	}
	st := e.statuses(it.ID)
	for i, rid := range it.Requests {
		want := store.Unpaid
		if i%3 == 0 {
			want = store.Cancelled
		}
		if st[rid] != want {
			t.Errorf("%s (expires in %v) is %s, want %s", rid, orders[i].ExpiresIn, st[rid], want)
		}
	}
	if _, ok, err := e.st.GetReservation(ctx, it.ID, "fresh-req"); err != nil || !ok {
		t.Errorf("fresh reservation gone (%v): voided by a skewed host clock", err)
	}
	if got := metric(t, reg, "flashsale_reaper_last_success_timestamp_seconds"); int64(got) != skewed.Unix() {
		t.Errorf("last success = %v, want the (skewed) host clock %d", got, skewed.Unix())
	}
	if got := metric(t, reg, "flashsale_reaper_backlog_orders"); got != 0 {
		t.Errorf("backlog = %v, want 0", got)
	}
}
