package orderwriter

import (
	"reflect"
	"testing"

	"github.com/flashsale-dev/flashsale/pkg/orderlog"
	"github.com/flashsale-dev/flashsale/pkg/store"
)

func msg(id string, user int64, qty int) orderlog.OrderMessage {
	return orderlog.OrderMessage{V: 1, RequestID: id, ItemID: 7, UserID: user, Qty: qty}
}

// TestSplitBatch: each request once, at its first offset, sorted by what
// MySQL decided before.
func TestSplitBatch(t *testing.T) {
	decided := map[string]store.Decision{
		"o": {RequestID: "o", Outcome: store.Ordered},
		"r": {RequestID: "r", Outcome: store.Rejected, Reason: store.ReasonSoldOut},
		"a": {RequestID: "a", Outcome: store.Aborted},
		"v": {RequestID: "v", Outcome: store.Voided},
	}
	msgs := []orderlog.OrderMessage{msg("f1", 1, 1), msg("o", 2, 1), msg("f1", 1, 1), msg("r", 3, 1),
		msg("a", 4, 1), msg("v", 5, 1), msg("f2", 6, 2), msg("o", 2, 1)}
	got := splitBatch(msgs, decided)
	want := batchSplit{
		Fresh:          []orderlog.OrderMessage{msg("f1", 1, 1), msg("f2", 6, 2)},
		ReplayOrdered:  []string{"o"},
		ReplayRejected: []store.Decision{decided["r"]},
		Dropped:        2,
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("splitBatch:\n got %+v\nwant %+v", got, want)
	}
	if ids := uniqueIDs(msgs); !reflect.DeepEqual(ids, []string{"f1", "o", "r", "a", "v", "f2"}) {
		t.Fatalf("uniqueIDs = %v", ids)
	}
}

// TestPlanFresh: the rules of one fresh batch, case by case.
func TestPlanFresh(t *testing.T) {
	type dec struct {
		id, outcome, reason string
	}
	for _, c := range []struct {
		name       string
		fresh      []orderlog.OrderMessage
		holders    map[int64]string
		avail      int64
		checkStock bool
		want       []dec
		take       int64
		heldBy     map[string]string
	}{
		{name: "all fit, no stock check", fresh: []orderlog.OrderMessage{msg("a", 1, 1), msg("b", 2, 3)},
			avail: 0, want: []dec{{"a", "ORDERED", ""}, {"b", "ORDERED", ""}}, take: 4},
		{name: "buyer with a live order", fresh: []orderlog.OrderMessage{msg("a", 1, 1), msg("b", 2, 1)},
			holders: map[int64]string{2: "old"}, avail: 5, checkStock: true,
			want: []dec{{"a", "ORDERED", ""}, {"b", "REJECTED", store.ReasonDuplicateBuyer}}, take: 1,
			heldBy: map[string]string{"b": "old"}},
		{name: "two fresh requests of one buyer: the first wins", fresh: []orderlog.OrderMessage{msg("a", 1, 1), msg("b", 1, 1)},
			avail: 5, want: []dec{{"a", "ORDERED", ""}, {"b", "REJECTED", store.ReasonDuplicateBuyer}}, take: 1,
			heldBy: map[string]string{"b": "a"}},
		{name: "fallback: a big one does not fit, a later small one does", fresh: []orderlog.OrderMessage{msg("a", 1, 2), msg("b", 2, 3), msg("c", 3, 1)},
			avail: 3, checkStock: true,
			want: []dec{{"a", "ORDERED", ""}, {"b", "REJECTED", store.ReasonSoldOut}, {"c", "ORDERED", ""}}, take: 3},
		{name: "fallback: a sold-out buyer's second request is judged on stock, not as a duplicate",
			fresh: []orderlog.OrderMessage{msg("a", 1, 2), msg("b", 1, 1)}, avail: 1, checkStock: true,
			want: []dec{{"a", "REJECTED", store.ReasonSoldOut}, {"b", "ORDERED", ""}}, take: 1},
		{name: "fallback: nothing left", fresh: []orderlog.OrderMessage{msg("a", 1, 1)}, avail: 0, checkStock: true,
			want: []dec{{"a", "REJECTED", store.ReasonSoldOut}}},
		{name: "empty batch", want: nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := map[int64]string{}
			for k, v := range c.holders {
				before[k] = v
			}
			p := planFresh(7, c.fresh, c.holders, c.avail, c.checkStock)
			var got []dec
			var orders int
			for _, d := range p.Decisions {
				got = append(got, dec{d.RequestID, string(d.Outcome), d.Reason})
				if d.ItemID != 7 {
					t.Errorf("decision %s for item %d", d.RequestID, d.ItemID)
				}
				if d.Outcome == store.Ordered {
					if p.Orders[orders].RequestID != d.RequestID {
						t.Errorf("order %d is %s, decision %s", orders, p.Orders[orders].RequestID, d.RequestID)
					}
					orders++
				}
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("decisions %v, want %v", got, c.want)
			}
			if orders != len(p.Orders) || p.Take != c.take {
				t.Errorf("%d orders for %d ORDERED, take %d want %d", len(p.Orders), orders, p.Take, c.take)
			}
			if len(c.heldBy) > 0 || len(p.Holders) > 0 {
				if !reflect.DeepEqual(p.Holders, c.heldBy) {
					t.Errorf("holders %v, want %v", p.Holders, c.heldBy)
				}
			}
			if len(c.holders) > 0 && !reflect.DeepEqual(c.holders, before) {
				t.Errorf("planFresh changed its holders argument: %v", c.holders)
			}
		})
	}
}
