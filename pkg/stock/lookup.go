package stock

import (
	"context"
	"fmt"
	"strings"
)

// Lookup is what Redis knows about one request: its cached status and its
// pending reservation, either or both missing.
type Lookup struct {
	// Status is the cached status JSON (see PutStatus), nil on a miss or
	// when InDoubt.
	Status []byte
	// InDoubt: the cache holds the pay's in-doubt marker (MarkInDoubt);
	// only MySQL knows the status.
	InDoubt bool
	// Reservation is set while the request waits for its outcome.
	Reservation    Reservation
	HasReservation bool
}

// LookupRequest reads the status cache and the reservation of requestID in
// one call (lookup.lua), which shares a round trip with other hot-path calls
// when the Store has a Coalescer.
func (s *Store) LookupRequest(ctx context.Context, itemID int64, requestID string) (Lookup, error) {
	k := RequestKeys(itemID, requestID)
	res, err := s.run(ctx, lookupScript, []string{k.Status(requestID), k.Reservations}, requestID).Slice()
	if err != nil {
		return Lookup{}, unavailable("stock: lookup request", err)
	}
	if len(res) != 2 {
		return Lookup{}, fmt.Errorf("stock: lookup request: unexpected reply %v", res)
	}
	var out Lookup
	if v, ok := res[0].(string); ok {
		if _, js, ok := strings.Cut(v, "|"); ok {
			if inDoubt(js) {
				out.InDoubt = true
			} else {
				out.Status = []byte(js)
			}
		}
	}
	if v, ok := res[1].(string); ok {
		r, err := parseReservation(requestID, v)
		if err != nil {
			return Lookup{}, err
		}
		out.Reservation, out.HasReservation = r, true
	}
	return out, nil
}
