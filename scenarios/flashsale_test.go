package scenarios

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"testing"
	"time"
)

// TestFlashSale is the flash sale as its buyers and its operator see it,
// on items of 1, 8 and 64 buckets with a per-user limit of 3: many more
// buyers than units arrive at once, each ordering 1 to 3 units, some
// sending copies of their order (the same Idempotency-Key at once, or a
// second order after the first); every buyer retries what the API says to
// retry (503 stock_moving or unavailable, 429, after Retry-After) and pays
// the order they get. Then, with nobody else on the system, buyers of one
// unit come one at a time until the item answers sold out.
//
// Every unit is sold exactly once (the 202s add up to the stock, MySQL
// holds exactly those orders, one per buyer and none above the limit); no
// buyer is told 410 while the units left cover their qty (units that later
// requests bought were there); the lone buyers of the last phase are each
// served at once (no 503 stock_moving while units remain: issue 22 item 5);
// the audit, per bucket too, is exact.
func TestFlashSale(t *testing.T) {
	for _, units := range []int{40, 200} {
		for _, buckets := range bucketCounts {
			t.Run(fmt.Sprintf("units=%d/buckets=%d", units, buckets), func(t *testing.T) {
				flashSale(t, shared(t), units, buckets)
			})
		}
	}
}

func flashSale(t *testing.T, s *system, units, buckets int) {
	start := time.Now()
	item := s.newItem(units, buckets, limit)
	buyers := units * 3 / 2 // about 3 units asked for every 1 there is
	rng := rand.New(rand.NewPCG(uint64(item), 22))
	l := newLedger()
	// A qty above the limit is refused whatever is left.
	if a := s.order(item, 1, limit+1, ""); a.Code != http.StatusBadRequest || a.Error != "invalid_qty" {
		t.Errorf("qty %d over a limit of %d answered %s %s, want 400 invalid_qty", limit+1, limit, a, a.Body)
	}
	gate := make(chan struct{})
	var wg sync.WaitGroup
	var payMu sync.Mutex
	var notPayable []string
	for i := range buyers {
		user := int64(10_000 + i)
		qty := 1 + rng.IntN(limit)
		dup := rng.IntN(10) // 0: copies with one key at once; 1: a second order after the first
		wg.Go(func() {
			<-gate
			key := ""
			if dup == 0 {
				key = fmt.Sprintf("k-%d", user)
				var cw sync.WaitGroup
				for range 2 {
					cw.Go(func() { s.buy(l, item, user, qty, key, 10) })
				}
				defer cw.Wait()
			}
			a := s.buy(l, item, user, qty, key, 10)
			if dup == 1 && a.Code == http.StatusAccepted {
				if b := s.order(item, user, qty, ""); b.Code != http.StatusConflict || b.Error != "already_purchased" || b.RequestID != a.RequestID {
					t.Errorf("user %d's second order after a 202 (%s) answered %s %s, want 409 already_purchased naming it", user, a.RequestID, b, b.Body)
				}
			}
			if a.Code == http.StatusAccepted {
				if why := s.payWhenUnpaid(user, a.RequestID); why != "" {
					payMu.Lock()
					notPayable = append(notPayable, why)
					payMu.Unlock()
				}
			}
		})
	}
	close(gate)
	wg.Wait()
	burst := time.Since(start)
	sold := l.sold()
	burstMoving := l.count(http.StatusServiceUnavailable, "stock_moving")
	t.Logf("burst of %d buyers on %d units in %d buckets: %d units sold in %v; answers %s",
		buyers, units, buckets, sold, burst.Round(time.Millisecond), l.codes())

	// Lone buyers of one unit until the item says sold out: each must be
	// served at once while a unit is left.
	lone := newLedger()
	for i := 0; ; i++ {
		user := int64(500_000 + i)
		a := s.order(item, user, 1, "")
		lone.add(user, 1, a)
		l.add(user, 1, a)
		if a.Code == http.StatusAccepted {
			if why := s.payWhenUnpaid(user, a.RequestID); why != "" {
				notPayable = append(notPayable, why)
			}
			continue
		}
		if a.Code == http.StatusGone || i > units {
			break
		}
		if !retryable(a) {
			t.Fatalf("lone buyer %d: %s %s", user, a, a.Body)
		}
		backOff(a)
	}
	sold = l.sold()
	t.Logf("then %d lone buyers: answers %s; %d of %d units sold (%v in all)", len(lone.attempts), lone.codes(), sold, units,
		time.Since(start).Round(time.Millisecond))

	if sold != int64(units) {
		t.Errorf("%d units sold of %d", sold, units)
	}
	if wrong := l.wrongSoldOut(); len(wrong) > 0 {
		t.Errorf("%d answers 410 while units remained (answers %s), the first: %s", len(wrong), l.codes(), wrong[0])
	}
	if n := lone.count(http.StatusServiceUnavailable, "stock_moving"); n > 0 {
		t.Errorf("%d lone buyers (nobody else on the system, units left) answered 503 stock_moving: %s", n, lone.codes())
	}
	if burstMoving > 0 {
		byQty := map[int]int{}
		for _, at := range l.attempts {
			if at.a.Error == "stock_moving" {
				byQty[at.qty]++
			}
		}
		t.Logf("note: %d 503 stock_moving during the burst (retried), by qty %v", burstMoving, byQty)
	}
	for _, h := range l.held {
		if len(h.rid) == 0 || containsComma(h.rid) {
			t.Errorf("a buyer was accepted twice or without a request id: %q", h.rid)
		}
		if h.qty > limit {
			t.Errorf("a buyer holds %d units, above the limit of %d", h.qty, limit)
		}
	}
	for _, w := range notPayable {
		t.Error(w)
	}
	au := s.checkAudit(item, buckets, int64(units), sold, 0, 0)
	if au.Rejected != 0 {
		t.Errorf("audit: %d requests rejected, aborted or voided; every 202 should be an order", au.Rejected)
	}
	inDB, perUser := s.ordersInMySQL(item)
	if inDB != sold {
		t.Errorf("MySQL holds %d units of live orders, the buyers were sold %d", inDB, sold)
	}
	for u, q := range perUser {
		if h := l.held[u]; int64(h.qty) != q {
			t.Errorf("user %d has %d units in MySQL, was told %d", u, q, h.qty)
		}
	}
	t.Logf("%d buckets, %d units: took %v", buckets, units, time.Since(start).Round(time.Millisecond))
}

func containsComma(s string) bool {
	for _, c := range s {
		if c == ',' {
			return true
		}
	}
	return false
}

// payWhenUnpaid waits for the order of an accepted request and pays it, as
// a buyer does; it returns why not when the request did not become a
// payable order.
func (s *system) payWhenUnpaid(user int64, rid string) string {
	st, err := s.decided(user, rid, 10*time.Second)
	if err != nil {
		return err.Error()
	}
	if st.Status != "UNPAID" {
		return fmt.Sprintf("user %d's accepted request %s ended %s (%s), not UNPAID", user, rid, st.Status, st.Reason)
	}
	if a := s.pay(user, rid); a.Code != http.StatusOK {
		return fmt.Sprintf("user %d's pay of %s: %s %s", user, rid, a, a.Body)
	}
	return ""
}
