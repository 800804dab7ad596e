package stock

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"
)

var gateAdvanceScript = mustScript("gate_advance.lua")

// GateState is an item's waiting room as the gate sees it.
type GateState struct {
	// Serving is how many positions of the serving order are admitted: a
	// ticket whose position is at most Serving may order.
	Serving int64
	// Tickets is how many tickets were taken.
	Tickets int64
	// Advanced is how many positions this call admitted.
	Advanced int64
}

// AdvanceGate moves item itemID's serving position on by what rate
// (admissions a second) allows since its last move (lua/gate_advance.lua).
// ErrQueueNotWarmed: the item has no meta in Redis.
func (s *Store) AdvanceGate(ctx context.Context, itemID int64, rate int) (GateState, error) {
	k := QueueKeysOf(itemID)
	res, err := s.run(ctx, gateAdvanceScript, []string{k.Gate, k.Arrivals, k.Meta}, max(rate, 1)).StringSlice()
	if err != nil {
		return GateState{}, unavailable("stock: advance gate", err)
	}
	if len(res) == 1 && res[0] == "unknown" {
		return GateState{}, ErrQueueNotWarmed
	}
	if len(res) != 3 {
		return GateState{}, fmt.Errorf("stock: advance gate: unexpected reply %v", res)
	}
	var g GateState
	var errs [3]error
	g.Serving, errs[0] = strconv.ParseInt(res[0], 10, 64)
	g.Tickets, errs[1] = strconv.ParseInt(res[1], 10, 64)
	g.Advanced, errs[2] = strconv.ParseInt(res[2], 10, 64)
	if err := errors.Join(errs[:]...); err != nil {
		return GateState{}, fmt.Errorf("stock: advance gate: %w", err)
	}
	return g, nil
}

// ReadGate reads item itemID's serving position and ticket count without
// moving them (both 0 before anything was taken or admitted).
func (s *Store) ReadGate(ctx context.Context, itemID int64) (GateState, error) {
	k := QueueKeysOf(itemID)
	var serving *redis.StringCmd
	var tickets *redis.StringCmd
	// Two keys of one slot, so one pipeline is one node's round trip.
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		serving = p.HGet(ctx, k.Gate, "serving")
		tickets = p.Get(ctx, k.Arrivals)
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return GateState{}, unavailable("stock: read gate", err)
	}
	var g GateState
	for _, f := range []struct {
		cmd *redis.StringCmd
		dst *int64
	}{{serving, &g.Serving}, {tickets, &g.Tickets}} {
		v, err := f.cmd.Int64()
		switch {
		case errors.Is(err, redis.Nil):
		case err != nil:
			return GateState{}, fmt.Errorf("stock: read gate of item %d: %w", itemID, err)
		default:
			*f.dst = v
		}
	}
	return g, nil
}
