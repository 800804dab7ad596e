package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/api"
	"github.com/flashsale-dev/flashsale/pkg/waitroom/draw"
)

// TestShuffleWindow: with a shuffle window (issue 41), tickets taken
// before starts_at and in the window's first round length after it are
// drawn together (round 0), the window's next slice is round 1, and a
// ticket taken after the window stands at its arrival number. While a
// round is open its tickets wait with no position, their round and its
// close shown, and the gate admits nobody beyond the rounds closed. Once a
// round's end has passed the gate publishes its root; its tickets then
// stand in the order its seed gives (derived from the item's seed and
// that root; not their arrival order), each with a proof leading to the
// root, round 1 behind round 0.
func TestShuffleWindow(t *testing.T) {
	h := waitHarness(t, 100)
	h.runGate()
	now := time.Now()
	item := testenv.ItemID()
	starts := now.Add(time.Second)
	const round, window = 3 * time.Second, 6 * time.Second
	body := fmt.Sprintf(`{"name":"windowed","price_cents":1,"stock":100,"per_user_limit":1,"starts_at":%q,"ends_at":%q,"queue":true,"queue_opens_at":%q,"queue_rate":1000,"queue_shuffle_window_ms":%d,"queue_round_ms":%d}`,
		starts.UTC().Format(time.RFC3339Nano), now.Add(time.Hour).UTC().Format(time.RFC3339Nano), now.Add(-time.Minute).UTC().Format(time.RFC3339Nano),
		window.Milliseconds(), round.Milliseconds())
	if r := h.do(http.MethodPut, fmt.Sprintf("/api/v1/admin/items/%d", item), body, h.admin()); r.Code != http.StatusOK ||
		!containsAll(string(r.Body), `"queue_shuffle_window_ms":6000`, `"queue_round_ms":3000`) {
		t.Fatalf("put: %d %s", r.Code, r.Body)
	}
	closes := []time.Time{starts.Add(round).UTC().Truncate(time.Millisecond), starts.Add(window).UTC().Truncate(time.Millisecond)}

	type taken struct {
		user int64
		tk   api.Ticket
	}
	var tickets []taken
	// take takes user's ticket and checks it waits in round k, with no
	// place, and that the gate admits no further than admitted.
	take := func(user int64, k int, admitted int64) {
		t.Helper()
		r, tk := h.take(user, item)
		if r.Code != http.StatusCreated {
			t.Fatalf("ticket of %d: %d %s", user, r.Code, r.Body)
		}
		tickets = append(tickets, taken{user, tk})
		_, v := h.ticketStatusOf(user, item, tk.Ticket, "")
		if v.State != api.TicketWaiting || v.Position != nil || v.Proof != nil || v.Round == nil || *v.Round != k ||
			v.RoundClosesAt == nil || !v.RoundClosesAt.Equal(closes[k]) {
			t.Fatalf("ticket of %d taken at %s: %+v, want waiting in round %d (closing %s) with no place", user, tk.TakenAt, v, k, closes[k])
		}
		if q := h.adminQueue(item); q.Serving > admitted {
			t.Fatalf("the gate admitted %d with round %d open; the rounds closed hold %d", q.Serving, k, admitted)
		}
	}
	// beforeEnd guards the takes of round k: they must land in it (a hang
	// guard, not a speed bound: each take takes milliseconds).
	beforeEnd := func(k int) {
		t.Helper()
		if time.Now().After(closes[k].Add(-time.Second)) {
			t.Fatalf("round %d's tickets were taken too late (%s) to see it open", k, time.Now())
		}
	}

	for i := range 5 {
		take(int64(700+i), 0, 0) // before the start
	}
	testenv.Eventually(t, 10*time.Second, 10*time.Millisecond, func() bool { return time.Now().After(starts.Add(100 * time.Millisecond)) }, "the start")
	beforeEnd(0)
	for i := range 5 {
		take(int64(710+i), 0, 0) // after the start, in round 0's slice: drawn with the early ones
	}
	// Round 0 closes: its ten are admitted (rate 1000/s), in drawn order.
	admitted := func(user int64, ticket string) api.TicketStatus {
		var v api.TicketStatus
		testenv.Eventually(t, 15*time.Second, 20*time.Millisecond, func() bool {
			_, v = h.ticketStatusOf(user, item, ticket, "")
			return v.State == api.TicketAdmitted
		}, "ticket of %d not admitted", user)
		return v
	}
	for _, tk := range tickets {
		admitted(tk.user, tk.tk.Ticket)
	}
	beforeEnd(1)
	for i := range 8 {
		take(int64(800+i), 1, 10) // round 1: behind round 0, whenever they came
	}

	var positions []int64
	for i, tk := range tickets {
		v := admitted(tk.user, tk.tk.Ticket)
		k := 0
		if i >= 10 {
			k = 1
		}
		if v.Position == nil || v.Round == nil || *v.Round != k || v.Proof == nil || v.Proof.Round != k {
			t.Fatalf("ticket %d: %+v, want a place in round %d with its proof", i, v, k)
		}
		if (k == 0) != (*v.Position <= 10) {
			t.Fatalf("ticket %d (arrival %d, round %d) at position %d: round 1 stands behind round 0's 10", i, tk.tk.Arrival, k, *v.Position)
		}
		if err := draw.VerifyInclusion(v.Proof.Root, draw.Entry{Ticket: draw.Hash(tk.tk.Ticket), Arrival: tk.tk.Arrival}, v.Proof.Index, v.Proof.Size, v.Proof.Path); err != nil {
			t.Fatalf("ticket %d: proof %+v: %v", i, v.Proof, err)
		}
		positions = append(positions, *v.Position)
	}
	sorted := slices.Clone(positions)
	slices.Sort(sorted)
	for i, p := range sorted {
		if p != int64(i+1) {
			t.Fatalf("positions %v are not 1..%d", positions, len(positions))
		}
	}
	// In arrival order each round would hold its positions in a row: a
	// fair draw leaves both so with chance 1 in 10!·8!.
	if slices.IsSorted(positions[:10]) && slices.IsSorted(positions[10:]) {
		t.Fatalf("positions %v follow arrival order: the rounds were not drawn", positions)
	}

	// The transcript shows both rounds, and verifies.
	var tr draw.RoundTranscript
	if r := h.do(http.MethodGet, fmt.Sprintf("/api/v1/items/%d/transcript", item), "", nil); r.Code != http.StatusOK || json.Unmarshal(r.Body, &tr) != nil {
		t.Fatalf("transcript: %d %s", r.Code, r.Body)
	}
	if err := draw.VerifyRounds(tr); err != nil || len(tr.Rounds) != 2 || tr.Rounds[0].Last != 10 || tr.Rounds[1].Last != 18 {
		t.Fatalf("transcript rounds %+v: %v", tr.Rounds, err)
	}

	// After the window: arrival order, no round.
	r, late := h.take(999, item)
	if r.Code != http.StatusCreated {
		t.Fatalf("late ticket: %d %s", r.Code, r.Body)
	}
	v := admitted(999, late.Ticket)
	if v.Position == nil || *v.Position != late.Arrival || v.Round != nil || v.Proof != nil {
		t.Fatalf("ticket after the window: %+v, want position %d (its arrival), no round", v, late.Arrival)
	}
}

// adminQueue is GET /api/v1/admin/items/{id}/queue.
func (h *harness) adminQueue(item int64) api.AdminQueue {
	h.t.Helper()
	r := h.do(http.MethodGet, fmt.Sprintf("/api/v1/admin/items/%d/queue", item), "", h.admin())
	var q api.AdminQueue
	if r.Code != http.StatusOK || json.Unmarshal(r.Body, &q) != nil {
		h.t.Fatalf("admin queue: %d %s", r.Code, r.Body)
	}
	return q
}

func containsAll(s string, subs ...string) bool {
	for _, x := range subs {
		if !strings.Contains(s, x) {
			return false
		}
	}
	return true
}
