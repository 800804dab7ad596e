package draw

import (
	"fmt"
	"slices"
)

// Place is a buyer's own ticket in a verified RoundTranscript.
type Place struct {
	// Position is the place in line, 1 = served first.
	Position int `json:"position"`
	// Round is the round the ticket was shuffled in, -1 for a ticket after
	// the last round (served in arrival order; Index, Size and Proof are then
	// zero).
	Round int `json:"round"`
	// Index is the ticket's leaf in its round's tree (arrival - First), Size
	// the round's number of tickets, Proof the audit path from the leaf to
	// the round's root, nearest sibling first.
	Index int      `json:"index"`
	Size  int      `json:"size"`
	Proof []string `json:"proof"`
	// Root is the round's root, to compare with the one published when the
	// round closed: the proof shows the ticket is under this root, the
	// comparison that it was under it from the close on.
	Root string `json:"root"`
}

// OwnPositionRounds is a buyer's check of their own ticket: it verifies tr,
// finds the ticket of this id and arrival number, and returns its place with
// the inclusion proof of its round, which it checks against the round's root
// (VerifyInclusion) before returning. A ticket missing, or listed with another
// arrival number, is ErrNotInTranscript.
func OwnPositionRounds(tr RoundTranscript, ticketID string, arrival int64) (Place, error) {
	if err := VerifyRounds(tr); err != nil {
		return Place{}, err
	}
	h := Hash(ticketID)
	pos := slices.IndexFunc(tr.Tickets, func(e Entry) bool { return e.Ticket == h })
	if pos < 0 {
		return Place{}, fmt.Errorf("%w: no ticket hashes to %s", ErrNotInTranscript, h)
	}
	if got := tr.Tickets[pos].Arrival; got != arrival {
		return Place{}, fmt.Errorf("%w: listed with arrival %d, the buyer was given %d", ErrNotInTranscript, got, arrival)
	}
	p := Place{Position: pos + 1, Round: -1}
	for _, r := range tr.Rounds {
		if arrival < r.First || arrival > r.Last {
			continue
		}
		// VerifyRounds checked the arrivals are 1..N, so arrival a is at
		// index a-1 once sorted, and the round's leaves are First-1..Last-1.
		sorted := slices.SortedFunc(slices.Values(tr.Tickets), byArrival)
		in := sorted[r.First-1 : r.Last]
		index := int(arrival - r.First)
		proof, err := InclusionProof(in, index)
		if err != nil {
			return Place{}, fmt.Errorf("round %d: %w", r.N, err)
		}
		if err := VerifyInclusion(r.Root, Entry{Ticket: h, Arrival: arrival}, index, len(in), proof); err != nil {
			return Place{}, fmt.Errorf("round %d: %w", r.N, err)
		}
		p.Round, p.Index, p.Size, p.Proof, p.Root = r.N, index, len(in), proof, r.Root
	}
	return p, nil
}
