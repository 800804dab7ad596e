package scenarios

import (
	"math/rand/v2"
	"net/http"
	"sync"
	"testing"
	"time"
)

// TestPaymentWindow is the payment window as buyers see it, on items of 1,
// 8 and 64 buckets with a per-user limit of 3: buyers whose quantities (1
// to 3) add up to the stock order at once, nobody else on the system, and
// every one is served at once (202 at the first try: no 410, no 503
// stock_moving, issue 22 item 5). Half of them pay; the others let the
// window lapse, and the reaper cancels their orders. Their units come back
// to the buckets they were sold from (the audit per bucket), paid orders
// keep theirs, and new buyers whose quantities add up to the released
// units buy them, again each at the first try, after which the item is
// sold out. The audit is exact at every step.
func TestPaymentWindow(t *testing.T) {
	onEveryLayout(t, paymentWindowScenario)
}

type order struct {
	user int64
	qty  int
	rid  string
}

// quantities draws buyer quantities of 1 to limit that add up to total.
func quantities(rng *rand.Rand, total int) []int {
	var qs []int
	for total > 0 {
		q := min(1+rng.IntN(limit), total)
		qs = append(qs, q)
		total -= q
	}
	return qs
}

// buyAtOnce sends one order per quantity at once, from users first, first+1,
// ...; each must be a 202 at the first try.
func (s *system) buyAtOnce(t *testing.T, l *ledger, item, first int64, qs []int) []order {
	t.Helper()
	orders := make([]order, len(qs))
	var wg sync.WaitGroup
	gate := make(chan struct{})
	for i, q := range qs {
		user := first + int64(i)
		wg.Go(func() {
			<-gate
			a := s.order(item, user, q, "")
			l.add(user, q, a)
			orders[i] = order{user: user, qty: q, rid: a.RequestID}
			if a.Code != http.StatusAccepted {
				orders[i].rid = ""
			}
		})
	}
	close(gate)
	wg.Wait()
	if n := l.count(http.StatusAccepted, ""); n != len(qs) {
		t.Errorf("%d buyers of %v units at once: answers %s; want every one 202 at the first try", len(qs), sum(qs), l.codes())
	}
	return orders
}

func sum(qs []int) int {
	n := 0
	for _, q := range qs {
		n += q
	}
	return n
}

func paymentWindowScenario(t *testing.T, s *system, buckets int) {
	start := time.Now()
	const units = 40
	item := s.newItem(units, buckets, limit)
	rng := rand.New(rand.NewPCG(uint64(item), 7))

	first := newLedger()
	orders := s.buyAtOnce(t, first, item, 30_000, quantities(rng, units))
	t.Logf("%d buyers at once: %s (%v)", len(orders), first.codes(), time.Since(start).Round(time.Millisecond))

	// Half pay, as soon as the order is written; the rest never do.
	var paid, lapsed int64
	var lapsing []order
	for i, o := range orders {
		if o.rid == "" {
			continue
		}
		st, err := s.decided(o.user, o.rid, 10*time.Second)
		if err != nil || st.Status != "UNPAID" {
			t.Fatalf("user %d's request %s: %+v %v, want UNPAID", o.user, o.rid, st, err)
		}
		if i%2 == 0 {
			if a := s.pay(o.user, o.rid); a.Code != http.StatusOK {
				t.Fatalf("pay %s: %s %s", o.rid, a, a.Body)
			}
			paid += int64(o.qty)
		} else {
			lapsing = append(lapsing, o)
			lapsed += int64(o.qty)
		}
	}
	// The reaper cancels the lapsed orders after the window.
	for _, o := range lapsing {
		deadline := time.Now().Add(paymentWindow + 10*time.Second)
		tick := time.NewTicker(100 * time.Millisecond)
		for ; ; <-tick.C {
			st, a := s.status(o.user, o.rid, 0)
			if st.Status == "CANCELLED" {
				break
			}
			if st.Status != "UNPAID" || time.Now().After(deadline) {
				t.Fatalf("user %d's lapsed order %s: %s %s, want CANCELLED within the window and the reaper's pass", o.user, o.rid, a, a.Body)
			}
		}
		tick.Stop()
		if a := s.pay(o.user, o.rid); a.Code != http.StatusConflict || a.Error != "not_payable" {
			t.Errorf("pay after the window of %s: %s %s, want 409 not_payable", o.rid, a, a.Body)
		}
	}
	t.Logf("%d units paid, %d lapsed and cancelled (%v)", paid, lapsed, time.Since(start).Round(time.Millisecond))
	au := s.checkAudit(item, buckets, units, paid, 0, lapsed)
	// Every bucket was sold empty, so what a bucket holds now is what its
	// cancelled orders gave back: the units went home.
	for _, b := range au.PerBucket {
		if b.DBStock != b.Cancelled {
			t.Errorf("bucket %d holds %d units after the cancels, its cancelled orders had %d: %+v", b.Bucket, b.DBStock, b.Cancelled, b)
		}
	}

	// New buyers buy the released units, each at the first try.
	second := newLedger()
	again := s.buyAtOnce(t, second, item, 40_000, quantities(rng, int(lapsed)))
	t.Logf("%d new buyers of the %d released units: %s", len(again), lapsed, second.codes())
	if a := s.order(item, 49_999, 1, ""); a.Code != http.StatusGone {
		t.Errorf("a buyer after the released units were sold: %s %s, want 410", a, a.Body)
	}
	for _, o := range again {
		if o.rid == "" {
			continue
		}
		if why := s.payWhenUnpaid(o.user, o.rid); why != "" {
			t.Error(why)
			continue
		}
		paid += int64(o.qty)
	}
	s.checkAudit(item, buckets, units, paid, 0, lapsed)
	if inDB, _ := s.ordersInMySQL(item); inDB != units {
		t.Errorf("MySQL holds %d units of live orders, want all %d", inDB, units)
	}
	t.Logf("%d buckets: took %v", buckets, time.Since(start).Round(time.Millisecond))
}
