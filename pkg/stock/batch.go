package stock

import (
	"context"
	"strings"

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
	_, err := s.pipelined(ctx, "stock: put statuses", func(p redis.Pipeliner) {
		for _, e := range entries {
			keys, args := statusPutCall(e.ItemID, e.RequestID, e.Rank, e.JSON)
			statusPutScript.EvalSha(ctx, p, keys, args...)
		}
	})
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
	_, err := s.pipelined(ctx, "stock: release many", func(p redis.Pipeliner) {
		for _, e := range entries {
			keys, args := releaseCall(e.ItemID, e.RequestID, e.Options)
			releaseScript.EvalSha(ctx, p, keys, args...)
		}
	})
	return err
}

// RestoreEntry is one cancelled order for RestoreMany and
// ExpireRestoreGuards.
type RestoreEntry struct {
	ItemID    int64
	RequestID string
	Qty       int
}

// RestoreMany gives many cancelled orders' qty back in one round trip, each
// exactly once (as Restore), and returns each one's result in order.
func (s *Store) RestoreMany(ctx context.Context, entries []RestoreEntry) ([]RestoreResult, error) {
	if len(entries) == 0 {
		return nil, nil
	}
	cmds, err := s.pipelined(ctx, "stock: restore many", func(p redis.Pipeliner) {
		for _, e := range entries {
			k := KeysOf(e.ItemID)
			restoreScript.EvalSha(ctx, p, []string{k.Stock, k.RestoreGuard(e.RequestID)}, e.Qty)
		}
	})
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
			p.PExpire(ctx, KeysOf(e.ItemID).RestoreGuard(e.RequestID), MarkedGuardTTL)
		}
		return nil
	})
	if err != nil {
		return unavailable("stock: expire restore guards", err)
	}
	return nil
}

// pipelined runs the script calls fill queues and returns their commands.
// Scripts are idempotent, so after a NOSCRIPT (Redis restarted, failover)
// they are loaded and the whole pipeline is sent once more.
func (s *Store) pipelined(ctx context.Context, op string, fill func(redis.Pipeliner)) ([]redis.Cmder, error) {
	for attempt := 0; ; attempt++ {
		cmds, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error { fill(p); return nil })
		if err == nil {
			return cmds, nil
		}
		noScript := false
		for _, c := range cmds {
			if e := c.Err(); e != nil && strings.HasPrefix(e.Error(), "NOSCRIPT") {
				noScript = true
			}
		}
		if !noScript || attempt > 0 {
			return nil, unavailable(op, err)
		}
		if err := LoadScripts(ctx, s.rdb); err != nil {
			return nil, unavailable(op, err)
		}
	}
}
