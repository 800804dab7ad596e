package scenarios

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"
)

// TestOrderWait is a buyer who orders with ?wait= (one request where a
// client following the API otherwise makes two: the order, then its long
// poll), on items of 1, 8 and 64 buckets: the 202 carries the order's
// status once it is written, the same view GET /api/v1/orders/{request_id}
// answers; a keyed replay with ?wait= carries it too; the buyer who finds
// the item sold out is told at once, not at the end of the wait; and the
// audit holds exactly the orders the buyers were told of.
func TestOrderWait(t *testing.T) {
	onEveryLayout(t, orderWait)
}

// orderView is the status view a 202 with ?wait= or a status poll carries.
type orderView struct {
	RequestID string    `json:"request_id"`
	ItemID    int64     `json:"item_id"`
	Qty       int       `json:"qty"`
	Status    string    `json:"status"`
	OrderID   int64     `json:"order_id"`
	ExpiresAt time.Time `json:"expires_at"`
}

// orderWaiting is POST /api/v1/orders?wait=wait.
func (s *system) orderWaiting(item, user int64, qty int, key string, wait time.Duration) (orderView, answer) {
	h := map[string]string{}
	if key != "" {
		h["Idempotency-Key"] = key
	}
	a := s.call(http.MethodPost, "/api/v1/orders?wait="+wait.String(), s.bearer(user), map[string]any{"item_id": item, "qty": qty}, h)
	var v orderView
	if a.Code == http.StatusAccepted {
		_ = json.Unmarshal(a.Body, &v)
	}
	return v, a
}

func orderWait(t *testing.T, s *system, buckets int) {
	const wait = 10 * time.Second
	// Three units a bucket: each of the three buyers' home buckets has one.
	units := 3 * buckets
	item := s.newItem(units, buckets, 1)
	views := map[string]orderView{}
	for _, user := range []int64{101, 102} {
		v, a := s.orderWaiting(item, user, 1, "", wait)
		if a.Code != http.StatusAccepted || v.Status != "UNPAID" || v.RequestID == "" || v.ItemID != item || v.Qty != 1 || v.OrderID == 0 || v.ExpiresAt.IsZero() {
			t.Fatalf("buyer %d with ?wait=%v: %s %s; want 202 with the written order (UNPAID, order_id, expires_at)", user, wait, a, a.Body)
		}
		// The same view a poll answers.
		if _, p := s.status(user, v.RequestID, 0); p.Code != http.StatusOK || !sameView(p.Body, v) {
			t.Errorf("buyer %d: the 202 carried %s, a poll answers %s %s", user, a.Body, p, p.Body)
		}
		views[v.RequestID] = v
	}
	// A keyed order, and its replay after it is written: both carry it.
	first, a := s.orderWaiting(item, 103, 1, "wait-103", wait)
	if a.Code != http.StatusAccepted || first.Status != "UNPAID" {
		t.Fatalf("keyed order with ?wait=: %s %s, want 202 UNPAID", a, a.Body)
	}
	again, a := s.orderWaiting(item, 103, 1, "wait-103", wait)
	if a.Code != http.StatusAccepted || again.RequestID != first.RequestID || again.Status != "UNPAID" || again.OrderID != first.OrderID {
		t.Fatalf("replay with ?wait=: %s %s, want the first 202's request %s UNPAID", a, a.Body, first.RequestID)
	}
	s.checkAudit(item, buckets, int64(units), 0, 3, 0)
	// Sold out is answered at once, not held for the wait: the last unit
	// of a one-unit item, then one buyer too many.
	last := s.newItem(1, 1, 1)
	if v, a := s.orderWaiting(last, 104, 1, "", wait); a.Code != http.StatusAccepted || v.Status != "UNPAID" {
		t.Fatalf("the last unit with ?wait=: %s %s, want 202 UNPAID", a, a.Body)
	}
	_, a = s.orderWaiting(last, 105, 1, "", wait)
	if a.Code != http.StatusGone || a.Error != "sold_out" || !a.Got.Before(a.Sent.Add(wait)) {
		t.Fatalf("buyer after the last unit: %s %s after %v, want 410 sold_out before its %v wait", a, a.Body, a.Got.Sub(a.Sent), wait)
	}
	s.checkAudit(last, 1, 1, 0, 1, 0)
}

// sameView reports whether body, a status poll's answer, is the view v.
func sameView(body []byte, v orderView) bool {
	var p orderView
	return json.Unmarshal(body, &p) == nil && p == v
}
