package main

import (
	"testing"
	"time"
)

// TestTrackSettlesWhatThe202Said: an order whose 202 carried its decided
// status (-order-wait) is settled without a poll and counted apart, with
// no settle time; one still PENDING, and the UNPAID order of a buyer who
// pays (the poll pays it), are left for the polls; a replay is tracked
// once.
func TestTrackSettlesWhatThe202Said(t *testing.T) {
	s := NewSettler(nil, Tokens{Buyers: []string{"a", "b"}}, []bool{false, true})
	at := time.Now()
	s.Track(0, "r1", at, OrderStatus{RequestID: "r1", Status: "UNPAID", Qty: 2})
	s.Track(0, "r1", at, OrderStatus{RequestID: "r1", Status: "UNPAID", Qty: 2}) // a replay
	s.Track(0, "r2", at, OrderStatus{RequestID: "r2", Status: "REJECTED"})
	s.Track(0, "r3", at, OrderStatus{RequestID: "r3", Status: "PENDING"})
	s.Track(1, "r4", at, OrderStatus{RequestID: "r4", Status: "UNPAID", Qty: 1})
	s.Track(0, "r5", at, OrderStatus{}) // a plain 202
	st := s.Stats()
	if st.Tracked != 5 || st.Settled != 2 || st.SettledByAnswer != 2 || st.Unsettled != 3 || s.Pending() != 3 {
		t.Fatalf("stats %+v, pending %d: want r1 and r2 settled by their 202s, r3 r4 r5 pending", st, s.Pending())
	}
	if st.OrderedUnits != 2 || st.Statuses["UNPAID"] != 1 || st.Statuses["REJECTED"] != 1 || st.P50ms != 0 || st.Polls != 0 {
		t.Fatalf("stats %+v: want 2 units of r1, one UNPAID, one REJECTED, no settle times, no polls", st)
	}
	if !st.LastSettled.Equal(at) {
		t.Errorf("last settled %v, want the 202s' %v", st.LastSettled, at)
	}
}

// TestClassifyOrderKeepsTheStatus: a 202 with ?wait= carries the status
// view; a plain one its request id and PENDING.
func TestClassifyOrderKeepsTheStatus(t *testing.T) {
	out, st, _ := classifyOrder(202, []byte(`{"request_id":"x1","item_id":7,"qty":1,"status":"UNPAID","order_id":9,"expires_at":"2026-12-07T20:00:00Z"}`), "")
	if out != OutAccepted || st.RequestID != "x1" || st.Status != "UNPAID" || st.OrderID != 9 || st.ExpiresAt.IsZero() {
		t.Fatalf("%s %+v", out, st)
	}
	out, st, _ = classifyOrder(202, []byte(`{"request_id":"x2","status":"PENDING"}`), "")
	if out != OutAccepted || st.RequestID != "x2" || st.Status != "PENDING" {
		t.Fatalf("%s %+v", out, st)
	}
	if out, id, _ := Classify(410, []byte(`{"error":"sold_out","message":"m"}`), ""); out != OutSoldOut || id != "" {
		t.Fatalf("410: %s %q", out, id)
	}
}
