package httpapi

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/api"
	"github.com/flashsale-dev/flashsale/pkg/waitroom"
	"github.com/flashsale-dev/flashsale/pkg/waitroom/draw"
)

// TestTranscriptAfterTheStart: before starts_at the transcript is refused
// and the seed shown nowhere; from it on, once the gate has closed round 0,
// the public transcript verifies from itself alone, carries the commitment
// the item showed, and gives each buyer the position their ticket's poll
// said; each buyer's receipt verifies under the published key, and the
// proof their poll carries leads to the round's published root.
func TestTranscriptAfterTheStart(t *testing.T) {
	h := newHarness(t, harnessOpts{partitions: 1})
	h.runGate()
	now := time.Now()
	item := testenv.ItemID()
	starts := now.Add(1500 * time.Millisecond)
	put := h.putQueuedItem(item, 50, now.Add(-time.Minute), starts, now.Add(time.Hour))
	const buyers = 12
	tickets := make([]api.Ticket, buyers)
	for i := range buyers {
		_, tickets[i] = h.take(int64(300+i), item)
	}
	seed, err := waitroom.QueueSeed(t.Context(), h.db, item)
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
	var tr draw.RoundTranscript
	testenv.Eventually(t, 10*time.Second, 10*time.Millisecond, func() bool {
		r = h.do(http.MethodGet, path, "", nil)
		if r.Code != http.StatusOK {
			t.Fatalf("after the start: %d %s", r.Code, r.Body)
		}
		if err := json.Unmarshal(r.Body, &tr); err != nil {
			t.Fatalf("transcript %s: %v", r.Body, err)
		}
		return len(tr.Rounds) == 1
	}, "round 0 was not closed after the start (%s)", starts)
	if err := draw.VerifyRounds(tr); err != nil {
		t.Fatalf("the published transcript does not verify: %v", err)
	}
	if tr.Commitment != put["queue_commitment"] || tr.Rounds[0].Size() != buyers || len(tr.Tickets) != buyers+1 {
		t.Fatalf("transcript commitment %s rounds %+v tickets %d; item showed %v, %d taken before the start",
			tr.Commitment, tr.Rounds, len(tr.Tickets), put["queue_commitment"], buyers)
	}
	var key api.ReceiptKey
	if r := h.do(http.MethodGet, "/.well-known/flashsale-receipt-key", "", nil); r.Code != http.StatusOK || json.Unmarshal(r.Body, &key) != nil {
		t.Fatalf("receipt key: %d %s", r.Code, r.Body)
	}
	pub, err := hex.DecodeString(key.PublicKey)
	if err != nil || key.Algorithm != "Ed25519" || key.KeyID != draw.KeyID(pub) {
		t.Fatalf("receipt key %+v", key)
	}
	for i, tk := range append(tickets, late) {
		user := int64(300 + i)
		if i == buyers {
			user = 399
		}
		place, err := draw.OwnPositionRounds(tr, tk.Ticket, tk.Arrival)
		if err != nil {
			t.Fatalf("buyer %d: %v", user, err)
		}
		_, st := h.ticketStatusOf(user, item, tk.Ticket, "")
		if st.Position == nil || *st.Position != int64(place.Position) {
			t.Errorf("buyer %d: poll says %v, transcript %d", user, st.Position, place.Position)
		}
		rc, err := draw.VerifyReceipt(pub, tk.Receipt)
		if err != nil || rc.Item != item || rc.Ticket != draw.Hash(tk.Ticket) || rc.Arrival != tk.Arrival || !rc.TakenAt.Equal(tk.TakenAt) {
			t.Errorf("buyer %d: receipt %+v, %v; ticket %+v", user, rc, err, tk)
		}
		if i == buyers {
			if st.Proof != nil || st.Round != nil {
				t.Errorf("the late ticket carries round %v proof %+v, want none (no round holds it)", st.Round, st.Proof)
			}
			continue
		}
		e := draw.Entry{Ticket: draw.Hash(tk.Ticket), Arrival: tk.Arrival}
		if st.Proof == nil || st.Proof.Root != tr.Rounds[0].Root ||
			draw.VerifyInclusion(tr.Rounds[0].Root, e, st.Proof.Index, int(tr.Rounds[0].Size()), st.Proof.Path) != nil {
			t.Errorf("buyer %d: proof %+v does not lead to round 0's root %s", user, st.Proof, tr.Rounds[0].Root)
		}
	}
	plain := testenv.ItemID()
	h.putItem(plain, 1, 1)
	if r := h.do(http.MethodGet, fmt.Sprintf("/api/v1/items/%d/transcript", plain), "", nil); r.Code != http.StatusConflict || !strings.Contains(string(r.Body), "queue_off") {
		t.Errorf("an item without a queue: %d %s", r.Code, r.Body)
	}
}
