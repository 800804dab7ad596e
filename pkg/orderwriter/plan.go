package orderwriter

import (
	"github.com/flashsale-dev/flashsale/pkg/orderlog"
	"github.com/flashsale-dev/flashsale/pkg/store"
)

// The order writer's decision is two pure steps, kept apart from the SQL that
// feeds them so every rule is table-tested (plan_test.go): splitBatch sorts a
// delivery into what an earlier delivery decided and what is fresh, and
// planFresh decides the fresh requests against the buyers and stock MySQL
// has. ItemWriter.decide reads their inputs and writes their outputs in one
// transaction.

// batchSplit is a delivery sorted by what MySQL already decided, each request
// once, in offset order.
type batchSplit struct {
	// Fresh are the requests no delivery has decided yet.
	Fresh []orderlog.OrderMessage
	// ReplayOrdered are the ids of requests decided ORDERED before: their
	// orders are read back so the after-commit step settles them again.
	ReplayOrdered []string
	// ReplayRejected are the REJECTED decisions made before.
	ReplayRejected []store.Decision
	// Dropped counts requests found ABORTED or VOIDED: their decider released
	// the reservation, so nothing is left to do.
	Dropped int
}

// uniqueIDs returns the request ids of msgs, each once, in offset order.
func uniqueIDs(msgs []orderlog.OrderMessage) []string {
	ids := make([]string, 0, len(msgs))
	seen := make(map[string]bool, len(msgs))
	for _, m := range msgs {
		if !seen[m.RequestID] {
			seen[m.RequestID] = true
			ids = append(ids, m.RequestID)
		}
	}
	return ids
}

// splitBatch sorts msgs by decided (the decisions MySQL has for their ids).
// A request delivered twice in one batch counts once, at its first offset.
func splitBatch(msgs []orderlog.OrderMessage, decided map[string]store.Decision) batchSplit {
	var s batchSplit
	seen := make(map[string]bool, len(msgs))
	for _, m := range msgs {
		if seen[m.RequestID] {
			continue
		}
		seen[m.RequestID] = true
		d, ok := decided[m.RequestID]
		switch {
		case !ok:
			s.Fresh = append(s.Fresh, m)
		case d.Outcome == store.Ordered:
			s.ReplayOrdered = append(s.ReplayOrdered, m.RequestID)
		case d.Outcome == store.Rejected:
			s.ReplayRejected = append(s.ReplayRejected, d)
		default: // ABORTED, VOIDED
			s.Dropped++
		}
	}
	return s
}

// freshPlan is what planFresh decided.
type freshPlan struct {
	// Orders are the new orders to insert, Decisions every new decision
	// (ORDERED and REJECTED) in offset order, Take the units they take.
	Orders    []store.NewOrder
	Decisions []store.Decision
	Take      int64
	// Holders maps a request rejected duplicate_buyer to the request by
	// which its buyer holds their order.
	Holders map[string]string
}

// planFresh decides fresh (all of itemID, each once, in offset order). holders
// maps each buyer who already has a live order of the item to its request id
// (store.ExistingBuyers). A buyer's second request is REJECTED
// duplicate_buyer: the buyer keeps the order they have, and so does a buyer
// with two fresh requests in one batch (the first wins). Stock is checked
// only when checkStock is set (the fallback, under the row lock, with avail
// the bucket's stock): a request for more than is left is REJECTED sold_out
// and later smaller ones may still fit. Without it every other request is
// ORDERED and the caller's stock CAS decides whether the batch fits at all.
// holders is not changed.
func planFresh(itemID int64, fresh []orderlog.OrderMessage, holders map[int64]string, avail int64, checkStock bool) freshPlan {
	p := freshPlan{
		Orders:    make([]store.NewOrder, 0, len(fresh)),
		Decisions: make([]store.Decision, 0, len(fresh)),
	}
	held := make(map[int64]string, len(holders)+len(fresh))
	for u, id := range holders {
		held[u] = id
	}
	for _, m := range fresh {
		d := store.Decision{RequestID: m.RequestID, ItemID: itemID, UserID: m.UserID, Qty: m.Qty}
		switch {
		case held[m.UserID] != "":
			d.Outcome, d.Reason = store.Rejected, store.ReasonDuplicateBuyer
			if p.Holders == nil {
				p.Holders = map[string]string{}
			}
			p.Holders[m.RequestID] = held[m.UserID]
		case checkStock && int64(m.Qty) > avail:
			d.Outcome, d.Reason = store.Rejected, store.ReasonSoldOut
		default:
			held[m.UserID] = m.RequestID
			avail -= int64(m.Qty)
			p.Take += int64(m.Qty)
			d.Outcome = store.Ordered
			p.Orders = append(p.Orders, store.NewOrder{RequestID: m.RequestID, UserID: m.UserID, Qty: m.Qty})
		}
		p.Decisions = append(p.Decisions, d)
	}
	return p
}
