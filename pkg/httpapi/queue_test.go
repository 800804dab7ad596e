package httpapi

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/api"
	"github.com/flashsale-dev/flashsale/pkg/stock"
)

// take is POST /api/v1/items/{item}/queue as user.
func (h *harness) take(user, item int64) (resp, api.Ticket) {
	r := h.do(http.MethodPost, fmt.Sprintf("/api/v1/items/%d/queue", item), "", h.as(user))
	var v api.Ticket
	if r.Code == http.StatusOK || r.Code == http.StatusCreated {
		v = decode[api.Ticket](h.t, r)
	}
	return r, v
}

// TestTicketIdempotentUnderRace: 32 calls of one buyer at once get one
// ticket, exactly one of them 201; 200 buyers at once get one ticket each,
// their arrival numbers 1..200 once each.
func TestTicketIdempotentUnderRace(t *testing.T) {
	h := newHarness(t, harnessOpts{partitions: 1})
	now := time.Now()
	item := testenv.ItemID()
	h.putQueuedItem(item, 10, now.Add(-time.Minute), now.Add(time.Hour), now.Add(2*time.Hour))

	const same = 32
	var wg sync.WaitGroup
	answers := make([]resp, same)
	views := make([]api.Ticket, same)
	for i := range same {
		wg.Add(1)
		go func() { defer wg.Done(); answers[i], views[i] = h.take(7, item) }()
	}
	wg.Wait()
	created := 0
	for i, r := range answers {
		switch r.Code {
		case http.StatusCreated:
			created++
		case http.StatusOK:
		default:
			t.Fatalf("call %d: %d %s", i, r.Code, r.Body)
		}
		if views[i] != views[0] {
			t.Fatalf("call %d got ticket %+v, call 0 %+v", i, views[i], views[0])
		}
	}
	if created != 1 || views[0].Arrival != 1 || len(views[0].Ticket) != 32 {
		t.Fatalf("%d answers 201 (want 1), ticket %+v", created, views[0])
	}

	const buyers = 200
	tickets := make([]api.Ticket, buyers)
	codes := make([]int, buyers)
	for i := range buyers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var r resp
			r, tickets[i] = h.take(int64(1000+i), item)
			codes[i] = r.Code
		}()
	}
	wg.Wait()
	arrivals := []int64{views[0].Arrival}
	ids := map[string]bool{views[0].Ticket: true}
	for i, v := range tickets {
		if codes[i] != http.StatusCreated {
			t.Fatalf("buyer %d: %d", i, codes[i])
		}
		if ids[v.Ticket] {
			t.Fatalf("ticket %s given twice", v.Ticket)
		}
		ids[v.Ticket] = true
		arrivals = append(arrivals, v.Arrival)
	}
	slices.Sort(arrivals)
	for i, a := range arrivals {
		if a != int64(i+1) {
			t.Fatalf("arrivals %v are not 1..%d", arrivals, buyers+1)
		}
	}
	// Asked again later: the same ticket, 200.
	if r, v := h.take(1000, item); r.Code != http.StatusOK || v != tickets[0] {
		t.Fatalf("again: %d %+v, want 200 %+v", r.Code, v, tickets[0])
	}
}

// TestTicketRefusals: each refusal of POST .../queue, and that it takes no
// ticket.
func TestTicketRefusals(t *testing.T) {
	h := newHarness(t, harnessOpts{partitions: 1})
	now := time.Now()
	want := func(name string, r resp, code int, errCode string) {
		t.Helper()
		if r.Code != code || !strings.Contains(string(r.Body), `"error":"`+errCode+`"`) {
			t.Errorf("%s: %d %s, want %d %s", name, r.Code, r.Body, code, errCode)
		}
	}
	unknown := testenv.ItemID()
	r, _ := h.take(7, unknown)
	want("unknown item", r, http.StatusNotFound, "not_found")

	plain := testenv.ItemID()
	h.putItem(plain, 5, 1)
	r, _ = h.take(7, plain)
	want("item without a queue", r, http.StatusConflict, "queue_off")

	later := testenv.ItemID()
	h.putQueuedItem(later, 5, now.Add(time.Hour), now.Add(2*time.Hour), now.Add(3*time.Hour))
	r, _ = h.take(7, later)
	want("before queue_opens_at", r, http.StatusConflict, "queue_not_open")

	ended := testenv.ItemID()
	h.putQueuedItem(ended, 5, now.Add(-3*time.Hour), now.Add(-2*time.Hour), now.Add(-time.Hour))
	r, _ = h.take(7, ended)
	want("after ends_at", r, http.StatusGone, "sale_ended")

	sold := testenv.ItemID()
	h.putQueuedItem(sold, 1, now.Add(-time.Hour), now.Add(-time.Minute), now.Add(time.Hour))
	holder, _ := h.take(8, sold)
	if holder.Code != http.StatusCreated {
		t.Fatalf("ticket before the sell-out: %d %s", holder.Code, holder.Body)
	}
	g, _, err := h.srv.room.Grant(t.Context(), sold, 8)
	if err != nil {
		t.Fatal(err)
	}
	if o := h.orderWith(8, sold, g); o.Code != http.StatusAccepted {
		t.Fatalf("order of the last unit: %d %s", o.Code, o.Body)
	}
	r, _ = h.take(7, sold)
	want("sold out", r, http.StatusGone, "sold_out")
	// A ticket already held is still its holder's.
	if r, _ := h.take(8, sold); r.Code != http.StatusOK {
		t.Errorf("holder after the sell-out: %d %s, want 200", r.Code, r.Body)
	}
	if r := h.do(http.MethodPost, fmt.Sprintf("/api/v1/items/%d/queue", later), "", nil); r.Code != http.StatusUnauthorized {
		t.Errorf("without a token: %d", r.Code)
	}
	for _, item := range []int64{later, ended} {
		if n, err := h.rdb.HLen(t.Context(), stock.QueueKeysOf(item).ByUser).Result(); err != nil || n != 0 {
			t.Errorf("item %d: %d tickets after refusals (%v)", item, n, err)
		}
	}
}
