package scenarios

import (
	"net/http"
	"sync"
	"testing"
	"time"
)

// TestIdempotency is one buyer's Idempotency-Key as a client uses it, on
// items of 1, 8 and 64 buckets with a per-user limit of 3: 20 copies of
// one order sent at once (a client's retries racing each other), on a
// fresh item and again right after a burst of other buyers on it; every
// copy is answered the same 202 with one request id, and one order is
// written. Replays after the order is written (and after it is paid) get
// that 202 again; the same key with another body never makes a second
// order; a new key of a holder is 409 already_purchased naming the order.
func TestIdempotency(t *testing.T) {
	onEveryLayout(t, idempotency)
}

// copies sends n copies of one keyed order at once and returns the answers.
func (s *system) copies(item, user int64, qty int, key string, n int) []answer {
	out := make([]answer, n)
	gate := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-gate
			out[i] = s.order(item, user, qty, key)
		})
	}
	close(gate)
	wg.Wait()
	return out
}

// sameAccepted checks that every answer is a 202 with one request id.
func sameAccepted(t *testing.T, what string, answers []answer) string {
	t.Helper()
	rid := ""
	tally := map[string]int{}
	for _, a := range answers {
		tally[a.String()]++
		if a.Code == http.StatusAccepted && rid == "" {
			rid = a.RequestID
		}
	}
	for _, a := range answers {
		if a.Code != http.StatusAccepted || a.RequestID != rid || rid == "" {
			t.Errorf("%s: answers %v; want all %d the same 202 (first request id %q, this one %s %s)", what, tally, len(answers), rid, a, a.Body)
			break
		}
	}
	return rid
}

func idempotency(t *testing.T, s *system, buckets int) {
	start := time.Now()
	units := 400
	item := s.newItem(units, buckets, limit)

	// On a fresh item.
	const buyer = int64(7)
	rid := sameAccepted(t, "20 copies on a fresh item", s.copies(item, buyer, 2, "order-7", 20))

	// Right after a burst: 300 other buyers at once, then 20 copies of a
	// new buyer's order while the burst's requests are still settling.
	l := newLedger()
	var wg sync.WaitGroup
	gate := make(chan struct{})
	for i := range 300 {
		user := int64(20_000 + i)
		wg.Go(func() {
			<-gate
			s.buy(l, item, user, 1, "", 5)
		})
	}
	close(gate)
	wg.Wait()
	const late = int64(8)
	rid8 := sameAccepted(t, "20 copies right after a burst of 300", s.copies(item, late, 3, "order-8", 20))
	t.Logf("burst answers: %s", l.codes())

	// Replays once the order is written, then once it is paid.
	for _, c := range []struct {
		user int64
		rid  string
		key  string
		qty  int
	}{{buyer, rid, "order-7", 2}, {late, rid8, "order-8", 3}} {
		if c.rid == "" {
			continue
		}
		st, err := s.decided(c.user, c.rid, 10*time.Second)
		if err != nil || st.Status != "UNPAID" || st.Qty != c.qty {
			t.Fatalf("user %d's request %s: %+v %v, want an UNPAID order of %d", c.user, c.rid, st, err, c.qty)
		}
		sameAccepted(t, "replays of a written order", append(s.copies(item, c.user, c.qty, c.key, 5), answer{Code: http.StatusAccepted, RequestID: c.rid}))
		if a := s.pay(c.user, c.rid); a.Code != http.StatusOK {
			t.Fatalf("pay %s: %s %s", c.rid, a, a.Body)
		}
		sameAccepted(t, "a replay of a paid order", []answer{{Code: http.StatusAccepted, RequestID: c.rid}, s.order(item, c.user, c.qty, c.key)})
		// The same key with another body (another qty): never a second
		// order; the key's first answer, or a refusal.
		other := s.order(item, c.user, 1, c.key)
		if !(other.Code == http.StatusAccepted && other.RequestID == c.rid) && other.Code < 400 {
			t.Errorf("user %d: the same key with another qty answered %s %s", c.user, other, other.Body)
		}
		t.Logf("the same key with another body: %s %s", other, other.Body)
		// A new key of the holder: the holding order named.
		if a := s.order(item, c.user, c.qty, c.key+"-new"); a.Code != http.StatusConflict || a.Error != "already_purchased" || a.RequestID != c.rid {
			t.Errorf("user %d's new key while holding %s: %s %s, want 409 already_purchased naming it", c.user, c.rid, a, a.Body)
		}
	}
	_, perUser := s.ordersInMySQL(item)
	if perUser[buyer] != 2 || perUser[late] != 3 {
		t.Errorf("MySQL: user %d holds %d units, user %d %d; want one order each of 2 and 3", buyer, perUser[buyer], late, perUser[late])
	}
	if au := s.settledAudit(item, 15*time.Second); au.Paid != 5 {
		t.Errorf("audit: %d units paid, want the 5 of users %d and %d", au.Paid, buyer, late)
	}
	t.Logf("%d buckets: took %v", buckets, time.Since(start).Round(time.Millisecond))
}
