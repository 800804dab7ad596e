package orderstatus

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flashsale-dev/flashsale/pkg/stock"
)

// The status cache: one entry per request, "<rank>|<JSON>", under the
// request's status key in the bucket it was admitted in (stock.Keys.Status),
// written by status_put.lua, which never moves it backwards and announces
// it (subscribe.go), and marked in doubt by status_mark.lua before a pay.

// StatusRank orders buyer-visible statuses so the cache never moves backwards.
type StatusRank int

// Ranks: an UNPAID order may become PAID or CANCELLED; those and REJECTED are
// final. RankInDoubt is the pay's marker (MarkInDoubt): above UNPAID, below
// every final status.
//
// Final was 2 before the marker existed. An entry "2|<json>" that an older
// binary wrote is still answered as the final status it holds (the marker
// has no JSON), and an older binary's final write (rank 2) still replaces a
// marker; MarkInDoubt may overwrite such an entry, which only costs the
// MySQL read that repairs it.
const (
	RankUnpaid  StatusRank = 1
	RankInDoubt StatusRank = 2
	RankFinal   StatusRank = 3
)

// StatusTTL is how long a cached final status lives; MySQL answers after
// that.
const StatusTTL = 30 * time.Minute

// UnpaidStatusTTL is how long a cached UNPAID lives. UNPAID is the one cached
// status that a later write replaces (PAID, CANCELLED), and without
// FLASHSALE_REDIS_WAIT_REPLICAS a Redis failover can lose that later write:
// the promoted replica then serves the older UNPAID. This bounds how long a
// buyer who paid can read UNPAID after a failover, at the cost of one MySQL
// read (shared per request) per poll of an UNPAID order per period.
const UnpaidStatusTTL = 5 * time.Second

// InDoubtTTL is how long the pay's in-doubt marker lives when nothing
// replaces it (the PAID write after the commit failed and no poll has read
// PAID from MySQL yet, or the pay never committed). It must outlast any
// cache fill still on its way from a MySQL read made before the pay's
// commit (seconds: store timeouts), since once the marker is gone such a
// fill could store that older UNPAID again. Meanwhile every poll of the
// order reads MySQL (the owner's polls only, of an order being paid).
const InDoubtTTL = 10 * time.Minute

// MarkResult is what MarkInDoubt found.
type MarkResult string

// MarkInDoubt's results.
const (
	// Marked: the status is now "in doubt, ask MySQL" (status_mark.lua).
	Marked MarkResult = "marked"
	// MarkFinal: a final status is cached; nothing was written.
	MarkFinal MarkResult = "final"
	// MarkPending: the request's reservation is pending (no order yet);
	// nothing was written.
	MarkPending MarkResult = "pending"
)

// MarkInDoubt marks the cached status of a request in doubt before a
// transition is committed in MySQL (the pay), unless a final status is
// cached or the request is still pending. A poll that finds the marker asks
// MySQL, so a failed cache write after the commit leaves the marker, never
// the older status. An error means nothing was marked for certain (the
// marker may have been written): the caller must not commit.
func (s *Store) MarkInDoubt(ctx context.Context, itemID int64, requestID string) (MarkResult, error) {
	k := stock.RequestKeys(itemID, requestID)
	res, err := s.eval(ctx, statusMarkScript, []string{k.Status(requestID), k.Reservations},
		requestID, int(RankInDoubt), int(RankFinal), InDoubtTTL.Milliseconds(), k.StatusChannel()).Text()
	if err != nil {
		return "", stock.Unavailable("orderstatus: mark status in doubt", err)
	}
	switch r := MarkResult(res); r {
	case Marked, MarkFinal, MarkPending:
		return r, nil
	}
	return "", fmt.Errorf("orderstatus: mark status in doubt: unexpected reply %q", res)
}

// inDoubt reports whether a cached status value (after its "rank|") is the
// in-doubt marker, which has no JSON.
func inDoubt(js string) bool { return js == "" }

// ttl is how long a status of this rank stays cached.
func (r StatusRank) ttl() time.Duration {
	if r < RankFinal {
		return UnpaidStatusTTL
	}
	return StatusTTL
}

// PutStatus caches the JSON status of a request unless a newer one is cached.
func (s *Store) PutStatus(ctx context.Context, itemID int64, requestID string, rank StatusRank, json []byte) error {
	c := statusPutCall([]StatusEntry{{ItemID: itemID, RequestID: requestID, Rank: rank, JSON: json}})
	if err := s.eval(ctx, c.Script, c.Keys, c.Args...).Err(); err != nil {
		return stock.Unavailable("orderstatus: put status", err)
	}
	return nil
}

// statusPutMax bounds the statuses one status_put.lua call stores: a
// script runs alone on its shard, so a call of a few hundred µs at most.
const statusPutMax = 100

// statusPutCall is status_put.lua's call for entries, all of one item
// bucket: their keys (and the bucket's reservations hash when one is to
// settle), then the bucket's status channel and each entry's rank, JSON,
// TTL, request id and settle flag.
func statusPutCall(entries []StatusEntry) stock.ScriptCall {
	keys := make([]string, len(entries), len(entries)+1)
	args := make([]any, 1, 1+5*len(entries))
	settles := false
	for i, e := range entries {
		k := stock.RequestKeys(e.ItemID, e.RequestID)
		keys[i] = k.Status(e.RequestID)
		settles = settles || e.Settle
		args = append(args, int(e.Rank), e.JSON, e.Rank.ttl().Milliseconds(), e.RequestID, e.Settle) // go-redis sends a bool as 1 or 0
	}
	first := stock.RequestKeys(entries[0].ItemID, entries[0].RequestID)
	args[0] = first.StatusChannel()
	if settles {
		keys = append(keys, first.Reservations)
	}
	return stock.ScriptCall{Script: statusPutScript, Keys: keys, Args: args}
}

// GetStatus returns the cached JSON status of a request, if any (the
// in-doubt marker is a miss).
func (s *Store) GetStatus(ctx context.Context, itemID int64, requestID string) ([]byte, bool, error) {
	v, err := s.st.Client().Get(ctx, stock.RequestKeys(itemID, requestID).Status(requestID)).Result()
	if errors.Is(err, redis.Nil) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, stock.Unavailable("orderstatus: get status", err)
	}
	js, _ := cachedStatus(v) // the in-doubt marker: "ask MySQL", like a miss
	return js, js != nil, nil
}

// StatusEntry is one request's status for PutStatuses.
type StatusEntry struct {
	ItemID    int64
	RequestID string
	Rank      StatusRank
	JSON      []byte
	// Settle drops the request's reservation in the same script call: the
	// order writer's settle of a request that became an order, whose
	// reservation is no longer the ledger's record of it (its MySQL row
	// is). So a poll finds the reservation or the status, never both and
	// never neither. Never for a request someone else still has to release
	// (an ABORTED or VOIDED one: the release gives its stock back, and
	// finds nothing to give once the reservation is gone).
	Settle bool
}

// PutStatuses caches many statuses in one round trip (each never replacing
// a newer one, as PutStatus): one pipeline for a whole consumer batch or
// reaper pass, and in it one script call per item bucket (up to
// statusPutMax statuses each), not one per request (stock.RunBatch, which
// sends again only the calls that met NOSCRIPT). The entries marked Settle
// lose their reservations in the same call (StatusEntry.Settle).
func (s *Store) PutStatuses(ctx context.Context, entries []StatusEntry) error {
	if len(entries) == 0 {
		return nil
	}
	type bucket struct {
		item int64
		b    int
	}
	byBucket := map[bucket][]StatusEntry{}
	var order []bucket
	for _, e := range entries {
		k := bucket{e.ItemID, stock.RequestKeys(e.ItemID, e.RequestID).Bucket}
		if _, ok := byBucket[k]; !ok {
			order = append(order, k)
		}
		byBucket[k] = append(byBucket[k], e)
	}
	var calls []stock.ScriptCall
	for _, k := range order {
		for es := range slices.Chunk(byBucket[k], statusPutMax) {
			calls = append(calls, statusPutCall(es))
		}
	}
	_, err := stock.RunBatch(ctx, s.st.Client(), "orderstatus: put statuses", calls, LoadScripts)
	return err
}
