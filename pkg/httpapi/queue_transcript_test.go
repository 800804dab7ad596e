package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/api"
	"github.com/flashsale-dev/flashsale/pkg/store"
	"github.com/flashsale-dev/flashsale/pkg/waitroom/draw"
)

// TestTranscriptAfterTheStart: before starts_at the transcript is refused
// and the seed shown nowhere; from it on, the public transcript verifies
// from itself alone, carries the commitment the item showed, and gives each
// buyer the position their ticket's poll said.
func TestTranscriptAfterTheStart(t *testing.T) {
	h := newHarness(t, harnessOpts{partitions: 1})
	now := time.Now()
	item := testenv.ItemID()
	starts := now.Add(1500 * time.Millisecond)
	put := h.putQueuedItem(item, 50, now.Add(-time.Minute), starts, now.Add(time.Hour))
	const buyers = 12
	tickets := make([]api.Ticket, buyers)
	for i := range buyers {
		_, tickets[i] = h.take(int64(300+i), item)
	}
	seed, err := store.QueueSeed(t.Context(), h.db, item)
	if err != nil {
		t.Fatal(err)
	}
	path := fmt.Sprintf("/api/v1/items/%d/transcript", item)
	r := h.do(http.MethodGet, path, "", nil)
	if r.Code != http.StatusConflict || !strings.Contains(string(r.Body), "not_revealed") || strings.Contains(string(r.Body), seed.String()) {
		t.Fatalf("before the start: %d %s, want 409 not_revealed without the seed", r.Code, r.Body)
	}
	// The sale starts: the transcript is published.
	testenv.Eventually(t, 10*time.Second, 10*time.Millisecond, func() bool {
		r = h.do(http.MethodGet, path, "", nil)
		if r.Code != http.StatusOK && (r.Code != http.StatusConflict || strings.Contains(string(r.Body), seed.String())) {
			t.Fatalf("transcript: %d %s, want 409 without the seed until the start, then 200", r.Code, r.Body)
		}
		return r.Code == http.StatusOK
	}, "transcript not published after the start (%s)", starts)
	// One late ticket, behind the shuffled ones.
	_, late := h.take(399, item)
	r = h.do(http.MethodGet, path, "", nil)
	if r.Code != http.StatusOK {
		t.Fatalf("after the start: %d %s", r.Code, r.Body)
	}
	var tr draw.Transcript
	if err := json.Unmarshal(r.Body, &tr); err != nil {
		t.Fatalf("transcript %s: %v", r.Body, err)
	}
	if err := draw.Verify(tr); err != nil {
		t.Fatalf("the published transcript does not verify: %v", err)
	}
	if tr.Commitment != put["queue_commitment"] || tr.Shuffled != buyers || len(tr.Tickets) != buyers+1 {
		t.Fatalf("transcript commitment %s shuffled %d tickets %d; item showed %v, %d taken before the start",
			tr.Commitment, tr.Shuffled, len(tr.Tickets), put["queue_commitment"], buyers)
	}
	for i, tk := range append(tickets, late) {
		user := int64(300 + i)
		if i == buyers {
			user = 399
		}
		own, err := draw.OwnPosition(tr, tk.Ticket, tk.Arrival)
		if err != nil {
			t.Fatalf("buyer %d: %v", user, err)
		}
		_, st := h.ticketStatusOf(user, item, tk.Ticket, "")
		if st.Position == nil || *st.Position != int64(own) {
			t.Errorf("buyer %d: poll says %v, transcript %d", user, st.Position, own)
		}
	}
	plain := testenv.ItemID()
	h.putItem(plain, 1, 1)
	if r := h.do(http.MethodGet, fmt.Sprintf("/api/v1/items/%d/transcript", plain), "", nil); r.Code != http.StatusConflict || !strings.Contains(string(r.Body), "queue_off") {
		t.Errorf("an item without a queue: %d %s", r.Code, r.Body)
	}
}
