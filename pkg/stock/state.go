package stock

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// An item's Redis state read whole, for audits and the public view.

// State is an item's Redis state, for audits and the public view: the sum
// over its buckets, and each bucket's own.
type State struct {
	Warmed     bool
	Stock      int64
	Buyers     int64
	Pending    int64 // reservations
	PendingQty int64
	// OldestReservedAt is when the oldest pending reservation was made, by
	// Redis' clock (zero with none): the orphan sweep voids it once it is
	// older than the grace, so its age says how close buyers are to losing
	// a 202 to a stuck pipeline.
	OldestReservedAt time.Time
	StartsAt         time.Time
	EndsAt           time.Time
	PerUserLimit     int
	// Buckets is the item's bucket count (1 for an unbucketed item), and
	// PerBucket each bucket's state (Warmed: the bucket has its stock key).
	Buckets   int
	PerBucket []State
}

// Stock returns the Redis stock of an item (the sum of its buckets) and
// whether the item is warmed.
func (s *Store) Stock(ctx context.Context, itemID int64) (int64, bool, error) {
	n, warmed, err := s.Buckets(ctx, itemID)
	if err != nil || !warmed {
		return 0, false, err
	}
	stocks, err := s.BucketStocks(ctx, itemID, n)
	if err != nil {
		return 0, false, err
	}
	var sum int64
	for _, v := range stocks {
		if v < 0 {
			return 0, false, nil // a bucket lost its stock key: not warmed
		}
		sum += v
	}
	return sum, true, nil
}

// ReadState reads an item's whole Redis state, bucket by bucket. The reads
// are not one atomic snapshot (a bucket's reservations are read in HSCAN
// pages after its counts); an audit that must not straddle a write reads
// each bucket's Cut instead.
func (s *Store) ReadState(ctx context.Context, itemID int64) (State, error) {
	first, err := s.readBucketState(ctx, itemID, 0)
	if err != nil {
		return State{}, err
	}
	per := []State{first}
	for b := 1; b < max(first.Buckets, 1); b++ {
		bs, err := s.readBucketState(ctx, itemID, b)
		if err != nil {
			return State{}, err
		}
		per = append(per, bs)
	}
	return SumBuckets(per), nil
}

// SumBuckets is an item's State from its buckets' own, bucket 0 first
// (whose meta names the item's window, limit and bucket count): the item
// is warmed when every bucket is.
func SumBuckets(per []State) State {
	st := per[0]
	st.Buckets = max(st.Buckets, 1)
	st.PerBucket = per
	for _, bs := range per[1:] {
		st.Warmed = st.Warmed && bs.Warmed
		st.Stock += bs.Stock
		st.Buyers += bs.Buyers
		st.Pending += bs.Pending
		st.PendingQty += bs.PendingQty
		if !bs.OldestReservedAt.IsZero() && (st.OldestReservedAt.IsZero() || bs.OldestReservedAt.Before(st.OldestReservedAt)) {
			st.OldestReservedAt = bs.OldestReservedAt
		}
	}
	return st
}

func (s *Store) readBucketState(ctx context.Context, itemID int64, bucket int) (State, error) {
	pipe := s.rdb.Pipeline()
	cmds := queueState(ctx, pipe, BucketKeys(itemID, bucket))
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return State{}, unavailable("stock: read state", err)
	}
	st := cmds.parse()
	if st.Pending > 0 {
		err := s.scanBucketReservations(ctx, itemID, bucket, func(r Reservation) error {
			st.add(r)
			return nil
		})
		if err != nil {
			return State{}, err
		}
	}
	return st, nil
}

// stateCmds are the reads of a bucket's counts, queued on one pipeline.
type stateCmds struct {
	stock         *redis.StringCmd
	meta          *redis.SliceCmd
	buyers, count *redis.IntCmd
}

func queueState(ctx context.Context, p redis.Pipeliner, k Keys) stateCmds {
	return stateCmds{
		stock:  p.Get(ctx, k.Stock),
		meta:   p.HMGet(ctx, k.Meta, "start_ms", "end_ms", "limit", "buckets"),
		buyers: p.HLen(ctx, k.Holders),
		count:  p.HLen(ctx, k.Reservations),
	}
}

// parse is the bucket's State once its pipeline ran, without what its
// reservations add (State.add).
func (c stateCmds) parse() State {
	var st State
	if v, err := c.stock.Int64(); err == nil {
		st.Stock, st.Warmed = v, true
	}
	if m := c.meta.Val(); len(m) == 4 && m[0] != nil {
		a, _ := strconv.ParseInt(fmt.Sprint(m[0]), 10, 64)
		b, _ := strconv.ParseInt(fmt.Sprint(m[1]), 10, 64)
		st.StartsAt, st.EndsAt = time.UnixMilli(a).UTC(), time.UnixMilli(b).UTC()
		st.PerUserLimit, _ = strconv.Atoi(fmt.Sprint(m[2]))
		st.Buckets = ParseBuckets(m[3])
	} else {
		st.Warmed = false
	}
	st.Buyers = c.buyers.Val()
	st.Pending = c.count.Val()
	return st
}

// add counts one pending reservation in the state's pending qty and age.
func (st *State) add(r Reservation) {
	st.PendingQty += int64(r.Qty)
	if st.OldestReservedAt.IsZero() || r.ReservedAt.Before(st.OldestReservedAt) {
		st.OldestReservedAt = r.ReservedAt
	}
}
