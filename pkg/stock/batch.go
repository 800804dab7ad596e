package stock

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// The batch operations send many script calls in one pipeline: one round
// trip for a whole consumer batch instead of one per request, which is what
// lets the order writer's after-commit step keep up with its MySQL step.

// StatusEntry is one request's status for PutStatuses.
type StatusEntry struct {
	ItemID    int64
	RequestID string
	Rank      StatusRank
	JSON      []byte
}

// PutStatuses caches many statuses in one round trip (each never replacing
// a newer one, as PutStatus).
func (s *Store) PutStatuses(ctx context.Context, entries []StatusEntry) error {
	if len(entries) == 0 {
		return nil
	}
	calls := make([]scriptCall, len(entries))
	for i, e := range entries {
		keys, args := statusPutCall(e.ItemID, e.RequestID, e.Rank, e.JSON)
		calls[i] = scriptCall{statusPutScript, keys, args}
	}
	_, err := s.pipelined(ctx, "stock: put statuses", calls)
	return err
}

// ReleaseEntry is one reservation to release for ReleaseMany.
type ReleaseEntry struct {
	ItemID    int64
	RequestID string
	Options   ReleaseOptions
}

// ReleaseMany releases many reservations in one round trip; each is at most
// once, as Release.
func (s *Store) ReleaseMany(ctx context.Context, entries []ReleaseEntry) error {
	if len(entries) == 0 {
		return nil
	}
	calls := make([]scriptCall, len(entries))
	for i, e := range entries {
		keys, args := releaseCall(e.ItemID, e.RequestID, e.Options)
		calls[i] = scriptCall{releaseScript, keys, args}
	}
	_, err := s.pipelined(ctx, "stock: release many", calls)
	return err
}

// RestoreEntry is one cancelled order for RestoreMany and
// ExpireRestoreGuards.
type RestoreEntry struct {
	ItemID int64
	// Bucket is the bucket the qty goes back to (store.Order.Bucket of the
	// restore record; 0 for an unbucketed item).
	Bucket    int
	RequestID string
	Qty       int
}

// RestoreMany gives many cancelled orders' qty back in one round trip, each
// exactly once (as Restore), and returns each one's result in order.
func (s *Store) RestoreMany(ctx context.Context, entries []RestoreEntry) ([]RestoreResult, error) {
	if len(entries) == 0 {
		return nil, nil
	}
	calls := make([]scriptCall, len(entries))
	for i, e := range entries {
		calls[i] = scriptCall{restoreScript, restoreKeys(e.ItemID, e.Bucket, e.RequestID), []any{e.Qty}}
	}
	cmds, err := s.pipelined(ctx, "stock: restore many", calls)
	if err != nil {
		return nil, err
	}
	out := make([]RestoreResult, len(cmds))
	for i, c := range cmds {
		n, err := c.(*redis.Cmd).Int()
		if err != nil {
			return nil, unavailable("stock: restore many", err)
		}
		out[i] = RestoreResult(n)
	}
	return out, nil
}

// ExpireRestoreGuards gives the guards of restores that MySQL has marked
// applied their MarkedGuardTTL, in one round trip. Call it only after the
// mark committed: an unmarked record may be re-applied at any later time,
// and its guard must still be there then. A guard this never reaches (the
// reaper died after the mark) stays without TTL: a few bytes kept, never a
// wrong answer, since no other request shares its name.
func (s *Store) ExpireRestoreGuards(ctx context.Context, entries []RestoreEntry) error {
	if len(entries) == 0 {
		return nil
	}
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, e := range entries {
			p.PExpire(ctx, BucketKeys(e.ItemID, e.Bucket).RestoreGuard(e.RequestID), MarkedGuardTTL)
		}
		return nil
	})
	if err != nil {
		return unavailable("stock: expire restore guards", err)
	}
	return nil
}

// scriptCall is one script call of a batch.
type scriptCall struct {
	script *redis.Script
	keys   []string
	args   []any
}

// pipelined sends calls by EVALSHA in one pipeline and returns their
// commands, in the order of calls.
//
// A shard that lost its script cache (Redis restarted, a failover to a
// replica that never ran them) answers NOSCRIPT for its part only; on a
// Cluster the other shards' parts have run. Only the calls that got NOSCRIPT
// are sent again, by EVAL, which carries the script and cannot meet NOSCRIPT
// a second time. Resending the whole pipeline, as this did before, was safe
// for the stock (every script is idempotent) but made the calls that had run
// answer a second time: RestoreMany reported a restore applied at the first
// send as "seen", and the reaper's count of restored orders came out short.
//
// The scripts are loaded on every shard too, so later batches find them;
// that is an optimisation, and its failure (a replica down) does not fail
// the batch.
func (s *Store) pipelined(ctx context.Context, op string, calls []scriptCall) ([]redis.Cmder, error) {
	cmds, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, c := range calls {
			c.script.EvalSha(ctx, p, c.keys, c.args...)
		}
		return nil
	})
	if err == nil {
		return cmds, nil
	}
	var again []int
	for i, c := range cmds {
		if e := c.Err(); e != nil {
			if !isNoScript(e) {
				return nil, unavailable(op, err)
			}
			again = append(again, i)
		}
	}
	if len(again) == 0 || len(cmds) != len(calls) {
		return nil, unavailable(op, err)
	}
	_ = LoadScripts(ctx, s.rdb)
	resent, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, i := range again {
			c := calls[i]
			c.script.Eval(ctx, p, c.keys, c.args...)
		}
		return nil
	})
	if err != nil {
		return nil, unavailable(op, err)
	}
	for j, i := range again {
		cmds[i] = resent[j]
	}
	return cmds, nil
}
