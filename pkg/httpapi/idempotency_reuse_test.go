package httpapi

import (
	"net/http"
	"sync"
	"testing"

	"github.com/flashsale-dev/flashsale/internal/testenv"
)

// TestIdempotencyKeyBoundToItsRequest: a key sent again with another qty is
// 422 idempotency_key_reused naming the key's first request, and takes
// nothing; the same request with the key still replays the first 202; the
// key on another item is a new request there. Before the key was bound to
// its request, the qty 2 answer was the first order's 202 and one unit was
// taken: the client believed it held two.
func TestIdempotencyKeyBoundToItsRequest(t *testing.T) {
	h := newHarness(t, harnessOpts{partitions: 1})
	item, other := testenv.ItemID(), testenv.ItemID()
	h.putItem(item, 10, 3)
	h.putItem(other, 10, 3)
	const user = 4242
	first := h.order(user, item, 1, "key-1")
	if first.Code != http.StatusAccepted {
		t.Fatalf("first order: %d %s", first.Code, first.Body)
	}
	rid := first.json(t)["request_id"]

	r := h.order(user, item, 2, "key-1")
	if r.Code != http.StatusUnprocessableEntity {
		t.Fatalf("same key, qty 2: %d %s, want 422", r.Code, r.Body)
	}
	if m := r.json(t); m["error"] != "idempotency_key_reused" || m["request_id"] != rid {
		t.Errorf("same key, qty 2: %s, want idempotency_key_reused naming %v", r.Body, rid)
	}
	if n := h.redisStock(item); n != 9 {
		t.Errorf("redis stock after the refused reuse: %d, want 9 (one unit taken, by the first order)", n)
	}

	if r := h.order(user, item, 1, "key-1"); r.Code != http.StatusAccepted || r.json(t)["request_id"] != rid {
		t.Errorf("the same request again: %d %s, want the first 202 (%v)", r.Code, r.Body, rid)
	}
	if r := h.order(user, other, 2, "key-1"); r.Code != http.StatusAccepted || r.json(t)["request_id"] == rid {
		t.Errorf("the key on another item: %d %s, want a new 202", r.Code, r.Body)
	}
	if n := h.redisStock(item); n != 9 {
		t.Errorf("redis stock of the first item at the end: %d, want 9", n)
	}
}

// TestIdempotencyKeyReusedConcurrently: 24 copies of one key race, half
// asking qty 1 and half qty 2. Exactly one request is admitted; every 202
// names it and asks its qty, every other answer is 422 naming it too, and
// the stock taken is that request's qty.
func TestIdempotencyKeyReusedConcurrently(t *testing.T) {
	h := newHarness(t, harnessOpts{partitions: 1})
	item := h.newItem(10, 3)
	const user, copies = 4343, 24
	type answer struct {
		qty  int
		code int
		rid  any
		err  any
	}
	answers := make([]answer, copies)
	var wg sync.WaitGroup
	for i := range copies {
		wg.Go(func() {
			qty := 1 + i%2
			r := h.order(user, item, qty, "race-key")
			a := answer{qty: qty, code: r.Code}
			if r.Code == http.StatusAccepted || r.Code == http.StatusUnprocessableEntity {
				m := r.json(t)
				a.rid, a.err = m["request_id"], m["error"]
			}
			answers[i] = a
		})
	}
	wg.Wait()
	var rid any
	won := 0
	for _, a := range answers {
		if a.code == http.StatusAccepted {
			if rid == nil {
				rid, won = a.rid, a.qty
			}
			if a.rid != rid || a.qty != won {
				t.Errorf("202s name %v (qty %d) and %v (qty %d): one key admitted twice", rid, won, a.rid, a.qty)
			}
		}
	}
	if rid == nil {
		t.Fatalf("no copy admitted: %+v", answers)
	}
	for _, a := range answers {
		switch a.code {
		case http.StatusAccepted:
		case http.StatusUnprocessableEntity:
			if a.qty == won || a.err != "idempotency_key_reused" || a.rid != rid {
				t.Errorf("422 to qty %d (%v naming %v), want it only for the other qty than %d, naming %v", a.qty, a.err, a.rid, won, rid)
			}
		default:
			t.Errorf("qty %d: %d, want 202 or 422", a.qty, a.code)
		}
	}
	if n := h.redisStock(item); n != int64(10-won) {
		t.Errorf("redis stock %d, want %d (the admitted request's qty %d taken once)", n, 10-won, won)
	}
}
