package waitroom

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flashsale-dev/flashsale/pkg/stock"
)

// GateState is an item's waiting room as the gate sees it.
type GateState struct {
	// Serving is how many positions of the serving order are admitted: a
	// ticket whose position is at most Serving may order.
	Serving int64
	// Tickets is how many tickets were taken.
	Tickets int64
	// Advanced is how many positions this call admitted.
	Advanced int64
	// Pool, Offers and Cursor are the waitlist's: units released and not
	// on offer, live offers, and the serving position of the last ticket
	// considered for one (waitlist.go); of a bucketed item, bucket 0's
	// share's only (its pass reads every share itself:
	// gate_offers_buckets.go). AdvanceGate and HoldGate fill them
	// (one script, which reads them on every branch); ReadGate leaves them
	// 0.
	Pool, Offers, Cursor int64
}

// AdvanceGate moves item itemID's serving position on by what rate
// (admissions a second) allows since its last move (lua/gate_advance.lua),
// never past bound tickets (-1: no bound; admissible says why there is
// one). ErrNotWarmed: the item has no meta in Redis.
func (s *Store) AdvanceGate(ctx context.Context, itemID int64, rate int, bound int64) (GateState, error) {
	return s.advanceGate(ctx, itemID, rate, bound, false)
}

// HoldGate is AdvanceGate when the pipeline is full: nothing moves, and
// the time held is not banked (the gate's state is returned as it is).
func (s *Store) HoldGate(ctx context.Context, itemID int64) (GateState, error) {
	return s.advanceGate(ctx, itemID, 1, -1, true)
}

func (s *Store) advanceGate(ctx context.Context, itemID int64, rate int, bound int64, hold bool) (GateState, error) {
	k := stock.QueueKeysOf(itemID)
	args := []any{max(rate, 1), flag(hold), bound}
	if s.now != nil {
		args = append(args, s.now().UnixMilli()) // a test's clock (Store.WithClock)
	}
	var g GateState
	err := s.evalInts(ctx, "waitroom: advance gate", gateAdvanceScript, []string{k.Gate, k.Arrivals, k.Meta, k.Waitlist, k.Offers}, args,
		&g.Serving, &g.Tickets, &g.Advanced, &g.Pool, &g.Offers, &g.Cursor)
	if err != nil {
		return GateState{}, err
	}
	return g, nil
}

// evalInts runs a script of the room that answers integers, or "unknown"
// when the item has no meta (ErrNotWarmed), and parses its reply into dst,
// one to one. op names the call in errors; Redis' own failures wrap
// ErrUnavailable.
func (s *Store) evalInts(ctx context.Context, op string, script *redis.Script, keys []string, args []any, dst ...*int64) error {
	res, err := s.eval(ctx, script, keys, args...).StringSlice()
	if err != nil {
		return unavailable(op, err)
	}
	if len(res) == 1 && res[0] == "unknown" {
		return ErrNotWarmed
	}
	if err := parseInts(res, dst...); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	return nil
}

// parseInts parses res into dst, one to one.
func parseInts(res []string, dst ...*int64) error {
	if len(res) != len(dst) {
		return fmt.Errorf("unexpected reply %v", res)
	}
	errs := make([]error, len(dst))
	for i, d := range dst {
		*d, errs[i] = strconv.ParseInt(res[i], 10, 64)
	}
	return errors.Join(errs...)
}

// ReadGate reads item itemID's serving position and ticket count without
// moving them (both 0 before anything was taken or admitted).
func (s *Store) ReadGate(ctx context.Context, itemID int64) (GateState, error) {
	k := stock.QueueKeysOf(itemID)
	var serving *redis.StringCmd
	var tickets *redis.StringCmd
	// Two keys of one slot, so one pipeline is one node's round trip.
	_, err := s.client().Pipelined(ctx, func(p redis.Pipeliner) error {
		serving = p.HGet(ctx, k.Gate, "serving")
		tickets = p.Get(ctx, k.Arrivals)
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return GateState{}, unavailable("waitroom: read gate", err)
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
			return GateState{}, fmt.Errorf("waitroom: read gate of item %d: %w", itemID, err)
		default:
			*f.dst = v
		}
	}
	return g, nil
}

// Now is Redis' clock, the one ticket_take.lua stamps tickets by (or a
// test's, WithClock): a round is closed once it has passed the round's end.
func (s *Store) Now(ctx context.Context) (time.Time, error) {
	if s.now != nil {
		return s.now(), nil
	}
	t, err := s.client().Time(ctx).Result()
	if err != nil {
		return time.Time{}, unavailable("waitroom: redis time", err)
	}
	return t, nil
}
