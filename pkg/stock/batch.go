package stock

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// The batch operations send many script calls in one pipeline: one round
// trip for a whole consumer batch instead of one per request, which is what
// lets the order writer's after-commit step keep up with its MySQL step.

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
	calls := make([]ScriptCall, len(entries))
	for i, e := range entries {
		keys, args := releaseCall(e.ItemID, e.RequestID, e.Options)
		calls[i] = ScriptCall{releaseScript, keys, args}
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
	calls := make([]ScriptCall, len(entries))
	for i, e := range entries {
		calls[i] = ScriptCall{restoreScript, restoreKeys(e.ItemID, e.Bucket, e.RequestID), []any{e.Qty}}
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

// ScriptCall is one script call of a batch (RunBatch).
type ScriptCall struct {
	Script *redis.Script
	Keys   []string
	Args   []any
}

// pipelined runs calls as one batch on the Store's client (RunBatch), and
// loads the ledger's scripts again after a NOSCRIPT.
func (s *Store) pipelined(ctx context.Context, op string, calls []ScriptCall) ([]redis.Cmder, error) {
	return RunBatch(ctx, s.rdb, op, calls, LoadScripts)
}

// RunBatch sends calls by EVALSHA in one pipeline on rdb and returns their
// commands, in the order of calls; a failure to reach Redis is op's error,
// wrapping ErrUnavailable. It is the batch path of the ledger's scripts
// (ReleaseMany, RestoreMany) and of other features' that run
// many calls at once (pkg/orderstatus's PutStatuses), as Store.Eval is
// their single call's.
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
// The scripts are loaded on every shard too (load: the caller's
// LoadScripts), so later batches find them; that is an optimisation, and
// its failure (a replica down) does not fail the batch.
func RunBatch(ctx context.Context, rdb redis.UniversalClient, op string, calls []ScriptCall, load func(context.Context, redis.Scripter) error) ([]redis.Cmder, error) {
	cmds, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, c := range calls {
			c.Script.EvalSha(ctx, p, c.Keys, c.Args...)
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
	_ = load(ctx, rdb)
	resent, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, i := range again {
			c := calls[i]
			c.Script.Eval(ctx, p, c.Keys, c.Args...)
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
