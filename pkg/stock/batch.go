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
	return s.pipelined(ctx, "stock: put statuses", func(p redis.Pipeliner) {
		for _, e := range entries {
			statusPutScript.EvalSha(ctx, p, []string{KeysOf(e.ItemID).Status(e.RequestID)},
				int(e.Rank), e.JSON, StatusTTL.Milliseconds())
		}
	})
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
	return s.pipelined(ctx, "stock: release many", func(p redis.Pipeliner) {
		for _, e := range entries {
			k := KeysOf(e.ItemID)
			extra, dropIdem := k.Stock, "0"
			if e.Options.IdempotencyKey != "" {
				extra, dropIdem = k.Idempotency(e.Options.UserID, e.Options.IdempotencyKey), "1"
			}
			releaseScript.EvalSha(ctx, p, []string{k.Stock, k.Buyers, k.Reservations, extra},
				e.RequestID, flag(e.Options.ReturnStock), flag(e.Options.RemoveBuyer), dropIdem)
		}
	})
}

// pipelined runs the script calls fill queues. Scripts are idempotent, so
// after a NOSCRIPT (Redis restarted, failover) they are loaded and the whole
// pipeline is sent once more.
func (s *Store) pipelined(ctx context.Context, op string, fill func(redis.Pipeliner)) error {
	for attempt := 0; ; attempt++ {
		cmds, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error { fill(p); return nil })
		if err == nil {
			return nil
		}
		noScript := false
		for _, c := range cmds {
			if e := c.Err(); e != nil && strings.HasPrefix(e.Error(), "NOSCRIPT") {
				noScript = true
			}
		}
		if !noScript || attempt > 0 {
			return unavailable(op, err)
		}
		if err := LoadScripts(ctx, s.rdb); err != nil {
			return unavailable(op, err)
		}
	}
}
