package draw

import (
	"encoding/hex"
	"fmt"
)

// checkEntries checks a transcript's tickets, as both schemes list them:
// the arrival numbers are 1..n once each, every hash is one hashOK accepts,
// and no hash appears twice. The error wraps ErrArrivals and names the
// first ticket that is wrong.
func checkEntries(tickets []Entry, hashOK func(string) error) error {
	n := int64(len(tickets))
	seenArrival := make([]bool, n+1)
	seenHash := make(map[string]bool, n)
	for i, e := range tickets {
		if e.Arrival < 1 || e.Arrival > n || seenArrival[e.Arrival] {
			return fmt.Errorf("%w: ticket %d has arrival %d (want 1..%d once each)", ErrArrivals, i+1, e.Arrival, n)
		}
		seenArrival[e.Arrival] = true
		if err := hashOK(e.Ticket); err != nil {
			return fmt.Errorf("%w: ticket %d: %w", ErrArrivals, i+1, err)
		}
		if seenHash[e.Ticket] {
			return fmt.Errorf("%w: ticket %s appears twice", ErrArrivals, e.Ticket)
		}
		seenHash[e.Ticket] = true
	}
	return nil
}

// anyHexHash accepts a sha256 in hex of either case: the first scheme's
// transcripts (Verify) were specified so, before the rounds scheme made
// lower case the one form (decodeHash).
func anyHexHash(s string) error {
	if b, err := hex.DecodeString(s); err != nil || len(b) != 32 {
		return fmt.Errorf("%q is not a sha256 in hex", s)
	}
	return nil
}

// canonicalHash accepts a sha256 in the rounds scheme's one form.
func canonicalHash(s string) error {
	_, err := decodeHash(s)
	return err
}
