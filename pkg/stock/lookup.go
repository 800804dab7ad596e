package stock

import (
	"context"
	"errors"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Lookup is what Redis knows about one request: its cached status and its
// pending reservation, either or both missing.
type Lookup struct {
	// Status is the cached status JSON (see PutStatus), nil on a miss.
	Status []byte
	// Reservation is set while the request waits for its outcome.
	Reservation    Reservation
	HasReservation bool
}

// LookupRequest reads the status cache and the reservation of requestID in
// one round trip (MULTI/EXEC: both keys share the item's hash slot, so the
// two reads are also one consistent view). Status polls therefore cost one
// Redis call and no MySQL call while the request is pending.
func (s *Store) LookupRequest(ctx context.Context, itemID int64, requestID string) (Lookup, error) {
	k := KeysOf(itemID)
	var stCmd *redis.StringCmd
	var rsCmd *redis.StringCmd
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		stCmd = p.Get(ctx, k.Status(requestID))
		rsCmd = p.HGet(ctx, k.Reservations, requestID)
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return Lookup{}, unavailable("stock: lookup request", err)
	}
	var out Lookup
	if v, err := stCmd.Result(); err == nil {
		if _, js, ok := strings.Cut(v, "|"); ok {
			out.Status = []byte(js)
		}
	}
	if v, err := rsCmd.Result(); err == nil {
		r, err := parseReservation(requestID, v)
		if err != nil {
			return Lookup{}, err
		}
		out.Reservation, out.HasReservation = r, true
	}
	return out, nil
}
