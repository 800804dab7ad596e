package draw

import (
	"fmt"
)

// Transcript is what the server publishes from starts_at on, once the seed is
// revealed: enough to check the order from it alone. Its JSON form is the
// transcript endpoint's body. It is published during the sale, not only after
// it, so a buyer can check their own rank while they wait: each read lists
// every ticket taken so far, the ones taken since starts_at behind the
// shuffled ones in arrival order.
type Transcript struct {
	ItemID     int64  `json:"item_id"`
	Commitment string `json:"commitment"`
	Seed       Seed   `json:"seed"`
	// Shuffled is how many tickets were taken before starts_at: arrivals
	// 1..Shuffled were shuffled, the rest queued behind in arrival order.
	Shuffled int64 `json:"shuffled"`
	// Tickets in serving order: Tickets[0] was served first.
	Tickets []Entry `json:"tickets"`
}

// NewTranscript orders tickets under seed and returns their transcript.
func NewTranscript(itemID int64, seed Seed, tickets []Entry, shuffled int64) Transcript {
	return Transcript{
		ItemID:     itemID,
		Commitment: seed.Commitment(),
		Seed:       seed,
		Shuffled:   shuffled,
		Tickets:    Order(seed, tickets, shuffled),
	}
}

// Verify checks t from itself alone: the seed hashes to the commitment, the
// arrival numbers are 1..n once each with 0 <= shuffled <= n, the hashes are
// distinct sha256s, and the tickets are in the order Order gives. The error
// wraps ErrCommitment, ErrArrivals or ErrOrder and names the first place that
// is wrong.
func Verify(t Transcript) error {
	if t.Seed.Commitment() != t.Commitment {
		return fmt.Errorf("%w: sha256(seed) = %s, commitment %s", ErrCommitment, t.Seed.Commitment(), t.Commitment)
	}
	n := int64(len(t.Tickets))
	if t.Shuffled < 0 || t.Shuffled > n {
		return fmt.Errorf("%w: shuffled %d of %d tickets", ErrArrivals, t.Shuffled, n)
	}
	if err := checkEntries(t.Tickets, anyHexHash); err != nil {
		return err
	}
	want := Order(t.Seed, t.Tickets, t.Shuffled)
	for i := range want {
		if want[i] != t.Tickets[i] {
			return fmt.Errorf("%w: position %d holds %s (arrival %d), the seed puts %s (arrival %d) there",
				ErrOrder, i+1, t.Tickets[i].Ticket, t.Tickets[i].Arrival, want[i].Ticket, want[i].Arrival)
		}
	}
	return nil
}

// OwnPosition is a buyer's check of their own ticket: it verifies t, finds the
// ticket of this id and arrival number and returns its position (1 = served
// first). A ticket missing, or listed with another arrival number, is
// ErrNotInTranscript.
func OwnPosition(t Transcript, ticketID string, arrival int64) (int, error) {
	if err := Verify(t); err != nil {
		return 0, err
	}
	h := Hash(ticketID)
	for i, e := range t.Tickets {
		if e.Ticket == h {
			if e.Arrival != arrival {
				return 0, fmt.Errorf("%w: listed with arrival %d, the buyer was given %d", ErrNotInTranscript, e.Arrival, arrival)
			}
			return i + 1, nil
		}
	}
	return 0, fmt.Errorf("%w: no ticket hashes to %s", ErrNotInTranscript, h)
}
