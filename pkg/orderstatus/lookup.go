package orderstatus

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/flashsale-dev/flashsale/pkg/stock"
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
	Reservation    stock.Reservation
	HasReservation bool
}

// LookupRequest reads the status cache and the reservation of requestID in
// one call (lookup.lua), which shares a round trip with other hot-path calls
// when the stock.Store under it has a Coalescer (stock.Store.Eval).
func (s *Store) LookupRequest(ctx context.Context, itemID int64, requestID string) (Lookup, error) {
	k := stock.RequestKeys(itemID, requestID)
	res, err := s.eval(ctx, lookupScript, []string{k.Status(requestID), k.Reservations}, requestID).Slice()
	if redis.IsTryAgainError(err) {
		res, err = s.lookupApart(ctx, k, requestID)
	}
	if err != nil {
		return Lookup{}, stock.Unavailable("orderstatus: lookup request", err)
	}
	if len(res) != 2 {
		return Lookup{}, fmt.Errorf("orderstatus: lookup request: unexpected reply %v", res)
	}
	var out Lookup
	if v, ok := res[0].(string); ok {
		out.Status, out.InDoubt = cachedStatus(v)
	}
	if v, ok := res[1].(string); ok {
		r, err := stock.ParseReservation(requestID, v)
		if err != nil {
			return Lookup{}, err
		}
		out.Reservation, out.HasReservation = r, true
	}
	return out, nil
}

// cachedStatus is the JSON of a status cache value ("rank|JSON", as
// status_put.lua stores and announces it), or inDoubt for the pay's marker
// ("rank|"); neither for a value of another shape.
func cachedStatus(v string) (js []byte, inDoubtMark bool) {
	_, s, ok := strings.Cut(v, "|")
	switch {
	case !ok:
		return nil, false
	case inDoubt(s):
		return nil, true
	}
	return []byte(s), false
}

// lookupApart is lookup.lua's two reads as two single-key calls, for while
// the item's Cluster slot migrates: a script's keys may then lie on two
// primaries (a new status on the importing one, the reservations hash not
// moved yet) and Redis answers TRYAGAIN until the move ends, which held a
// waiting poll for the whole move. One key at a time follows the ASK
// redirect. The status is read first: a status stored between the reads
// can only make the reservation read miss too, and a lookup with neither
// falls back to MySQL, the truth; so the pair is never a view that did
// not exist.
func (s *Store) lookupApart(ctx context.Context, k stock.Keys, requestID string) ([]any, error) {
	st, err := s.st.Client().Get(ctx, k.Status(requestID)).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, err
	}
	res, err := s.st.Client().HGet(ctx, k.Reservations, requestID).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, err
	}
	out := []any{false, false}
	if st != "" {
		out[0] = st
	}
	if res != "" {
		out[1] = res
	}
	return out, nil
}
