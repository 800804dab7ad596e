package draw

import (
	"fmt"
	"slices"
)

// RoundsVersion is the Version of a RoundTranscript. A version 1 transcript
// (Transcript) has no version field.
const RoundsVersion = "2"

// RoundTranscript is the transcript of the rounds scheme: the revealed server
// seed and its commitment, every round with its root, beacon and revealed
// seed, and the tickets' hashes with their arrival numbers in serving order.
// Anyone can check it from itself alone (VerifyRounds), and a buyer can find
// their own place and the proof that their ticket is in their round's root
// (OwnPositionRounds).
//
// It reveals the server seed, and whoever knows that seed can compute the
// ranks of a round still open from its tickets (and could add tickets to it
// until one ranks well), unless the round has a beacon not yet published. So
// a transcript is published once the last round has closed and its beacon
// (if any) is out.
type RoundTranscript struct {
	Version    string  `json:"version"`
	ItemID     int64   `json:"item_id"`
	Commitment string  `json:"commitment"`
	Seed       Seed    `json:"seed"`
	Rounds     []Round `json:"rounds"`
	// Tickets in serving order: Tickets[0] is served first.
	Tickets []Entry `json:"tickets"`
}

// NewRoundTranscript orders tickets under the rounds and returns their
// transcript, with each round's seed revealed. The rounds carry the roots
// published at their closes (CloseRound) and their beacons; their Seed
// fields are filled in here.
func NewRoundTranscript(item int64, seed Seed, rounds []Round, tickets []Entry) (RoundTranscript, error) {
	// Empty, not nil: the JSON form lists rounds and tickets as arrays even
	// before the first round closes (ingress/openapi.yaml's Transcript).
	rounds = append([]Round{}, rounds...)
	order, err := OrderRounds(seed, item, rounds, tickets)
	if err != nil {
		return RoundTranscript{}, err
	}
	for i, r := range rounds {
		rs, err := RoundSeed(seed, item, r)
		if err != nil {
			return RoundTranscript{}, err
		}
		rounds[i].Seed = rs.String()
	}
	return RoundTranscript{
		Version:    RoundsVersion,
		ItemID:     item,
		Commitment: seed.Commitment(),
		Seed:       seed,
		Rounds:     rounds,
		Tickets:    order,
	}, nil
}

// VerifyRounds checks tr from itself alone, in this order, and names the
// first thing that is wrong:
//
//   - the version is RoundsVersion (ErrVersion);
//   - the seed hashes to the commitment (ErrCommitment);
//   - the arrival numbers are 1..N, once each, and the hashes are distinct
//     sha256s in lower-case hex (ErrArrivals);
//   - the rounds are numbered 0, 1, ..., cover contiguous arrivals from 1 and
//     end at or before N (ErrRounds);
//   - each round's root is the Merkle root of the tickets it covers (ErrRoot);
//   - each round's seed is the one derived from the server seed (ErrRoundSeed);
//   - the tickets are in the order OrderRounds gives (ErrOrder).
func VerifyRounds(tr RoundTranscript) error {
	if tr.Version != RoundsVersion {
		return fmt.Errorf("%w: %q, this checks %q", ErrVersion, tr.Version, RoundsVersion)
	}
	if tr.Seed.Commitment() != tr.Commitment {
		return fmt.Errorf("%w: sha256(seed) = %s, commitment %s", ErrCommitment, tr.Seed.Commitment(), tr.Commitment)
	}
	if err := checkEntries(tr.Tickets, canonicalHash); err != nil {
		return err
	}
	n := int64(len(tr.Tickets))
	if err := checkRounds(tr.Rounds); err != nil {
		return err
	}
	if k := len(tr.Rounds); k > 0 && tr.Rounds[k-1].Last > n {
		return fmt.Errorf("%w: the last round ends at arrival %d, there are %d tickets", ErrRounds, tr.Rounds[k-1].Last, n)
	}
	byArrivalNo := slices.SortedFunc(slices.Values(tr.Tickets), byArrival)
	for _, r := range tr.Rounds {
		in := byArrivalNo[r.First-1 : r.Last]
		root, err := MerkleRoot(in)
		if err != nil {
			return fmt.Errorf("round %d: %w", r.N, err)
		}
		if root != r.Root {
			return fmt.Errorf("%w: round %d (arrivals %d..%d) has root %s, its tickets give %s",
				ErrRoot, r.N, r.First, r.Last, r.Root, root)
		}
	}
	for _, r := range tr.Rounds {
		rs, err := RoundSeed(tr.Seed, tr.ItemID, r)
		if err != nil {
			return err
		}
		if r.Seed != rs.String() {
			return fmt.Errorf("%w: round %d has seed %q, the server seed gives %s", ErrRoundSeed, r.N, r.Seed, rs)
		}
	}
	want, err := OrderRounds(tr.Seed, tr.ItemID, tr.Rounds, tr.Tickets)
	if err != nil {
		return err
	}
	for i := range want {
		if want[i] != tr.Tickets[i] {
			return fmt.Errorf("%w: position %d holds %s (arrival %d), the rounds put %s (arrival %d) there",
				ErrOrder, i+1, tr.Tickets[i].Ticket, tr.Tickets[i].Arrival, want[i].Ticket, want[i].Arrival)
		}
	}
	return nil
}
