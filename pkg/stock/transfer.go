package stock

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// The Redis side of a transfer of units between two buckets of an item
// (pkg/rebalance drives it; MySQL's stock_transfers row says how far it
// got). Each step is one script in one bucket's slot, guarded per transfer
// and direction, so it runs at most once however often it is called.

// TransferStep is the answer of a transfer's Redis step.
type TransferStep string

// Answers of TransferOut and TransferIn; see lua/transfer_out.lua and
// lua/transfer_in.lua.
const (
	// TransferOK: the step moved the units now, or (TransferOut) did so
	// before: the out step's answer is decided once.
	TransferOK TransferStep = "ok"
	// TransferShort: the donor had less than the qty; nothing was taken.
	TransferShort TransferStep = "short"
	// TransferNoStock: the bucket has no stock key (Redis lost it);
	// nothing was moved in Redis.
	TransferNoStock TransferStep = "nostock"
	// TransferSeen: the in step ran before.
	TransferSeen TransferStep = "seen"
)

// TransferRef names one transfer for its Redis steps. Token tells it from a
// transfer of an earlier database that had the same id (its created_at,
// unix ms).
type TransferRef struct {
	ItemID   int64
	ID       int64
	From, To int
	Qty      int64
	Token    int64
}

// TransferOut takes t.Qty out of the donor bucket t.From, unless the
// transfer's out step already ran, whose answer it then repeats.
func (s *Store) TransferOut(ctx context.Context, t TransferRef) (TransferStep, error) {
	k := BucketKeys(t.ItemID, t.From)
	return s.transferStep(ctx, transferOutScript, "out", t, []string{k.Stock, k.TransferGuard(t.ID, "out")})
}

// TransferIn gives t.Qty to the recipient bucket t.To and clears its want
// flag, unless the transfer's in step already ran (TransferSeen).
func (s *Store) TransferIn(ctx context.Context, t TransferRef) (TransferStep, error) {
	k := BucketKeys(t.ItemID, t.To)
	return s.transferStep(ctx, transferInScript, "in", t, []string{k.Stock, k.TransferGuard(t.ID, "in"), k.Want})
}

func (s *Store) transferStep(ctx context.Context, script *redis.Script, dir string, t TransferRef, keys []string) (TransferStep, error) {
	v, err := script.Run(ctx, s.rdb, keys, t.Qty, t.Token).Text()
	if err != nil {
		return "", unavailable(fmt.Sprintf("stock: transfer %d %s", t.ID, dir), err)
	}
	return TransferStep(v), nil
}

// transferCutScript runs once per transfer, inside its MySQL step, so it is
// not among the scripts loaded at start-up: its first run loads it.
var transferCutScript = mustScript("transfer_cut.lua")

// TransferCut is what TransferCutTo decided: Moved is the qty MySQL is to
// move; Before and After are the donor's Redis stock around the cut (-1
// when nothing was cut).
type TransferCut struct {
	Moved, Before, After int64
}

// TransferCutTo is the Redis side of the transfer's MySQL step, which calls
// it with the donor's row locked: free is MySQL's donor stock less the
// restores Redis has not applied, short whether that row holds less than
// t.Qty. Normally (not short, never cut) it answers t.Qty and writes
// nothing. Short, it cuts the transfer to what MySQL has free less the
// donor's pending reservations, gives the donor back the rest of what the
// out step took and caps the donor at what MySQL says it holds: Redis is
// reconciled downward, never up (lua/transfer_cut.lua). Its decision is
// kept, so a repeat answers the same whatever MySQL says then.
func (s *Store) TransferCutTo(ctx context.Context, t TransferRef, free int64, short bool) (TransferCut, error) {
	k := BucketKeys(t.ItemID, t.From)
	v, err := transferCutScript.Run(ctx, s.rdb, []string{k.Stock, k.Reservations, k.TransferGuard(t.ID, "cut")},
		t.Qty, free, flag(short), t.Token).Int64Slice()
	if err != nil {
		return TransferCut{}, unavailable(fmt.Sprintf("stock: transfer %d cut", t.ID), err)
	}
	if len(v) != 3 {
		return TransferCut{}, fmt.Errorf("stock: transfer %d cut answered %v", t.ID, v)
	}
	return TransferCut{Moved: v[0], Before: v[1], After: v[2]}, nil
}

// MarkTransferLive adds transfer id to item's TransfersLive, which must
// happen before its first step moves anything: SoldOutEverywhere then knows
// units may be in neither bucket.
func (s *Store) MarkTransferLive(ctx context.Context, itemID, id int64) error {
	if err := s.rdb.SAdd(ctx, KeysOf(itemID).TransfersLive(), id).Err(); err != nil {
		return unavailable(fmt.Sprintf("stock: mark transfer %d live", id), err)
	}
	return nil
}

// TransferGuardTTL is how long a finished transfer's guards are kept: far
// longer than a slow driver that read the transfer open may take to run a
// step again (a few store timeouts), as MarkedGuardTTL for restores.
const TransferGuardTTL = MarkedGuardTTL

// FinishTransfer runs after MySQL says the transfer is final (DONE or
// ABANDONED): its guards get TransferGuardTTL, then, in one MULTI in bucket
// 0's slot, it leaves TransfersLive and TransfersDone counts it. Repeating
// it is harmless: an extra count only makes a SoldOutEverywhere reader look
// once more.
func (s *Store) FinishTransfer(ctx context.Context, t TransferRef) error {
	from, to := BucketKeys(t.ItemID, t.From), BucketKeys(t.ItemID, t.To)
	pipe := s.rdb.Pipeline()
	pipe.PExpire(ctx, from.TransferGuard(t.ID, "out"), TransferGuardTTL)
	pipe.PExpire(ctx, from.TransferGuard(t.ID, "cut"), TransferGuardTTL)
	pipe.PExpire(ctx, to.TransferGuard(t.ID, "in"), TransferGuardTTL)
	if _, err := pipe.Exec(ctx); err != nil {
		return unavailable(fmt.Sprintf("stock: expire guards of transfer %d", t.ID), err)
	}
	return s.ForgetTransfer(ctx, t.ItemID, t.ID)
}

// ForgetTransfer removes transfer id from item's TransfersLive and counts it
// in TransfersDone, in one MULTI: for an id whose guards are already dealt
// with, or unknown to MySQL.
func (s *Store) ForgetTransfer(ctx context.Context, itemID, id int64) error {
	k := KeysOf(itemID)
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Incr(ctx, k.TransfersDone())
		p.SRem(ctx, k.TransfersLive(), id)
		return nil
	})
	if err != nil {
		return unavailable(fmt.Sprintf("stock: finish transfer %d", id), err)
	}
	return nil
}

// BucketView is what the rebalancer reads of an item in one pipeline.
type BucketView struct {
	// Stocks is each bucket's Redis stock, -1 where there is no stock key.
	Stocks []int64
	// Want is each bucket's want flag (a buyer found it short lately), and
	// Need the qty that buyer asked for (1 for a flag without one).
	Want []bool
	Need []int64
	// Live is the item's TransfersLive.
	Live []int64
	// Buckets is the bucket count bucket 0's meta carries (0: not warmed).
	// Until a re-bucketing's warm ran it differs from MySQL's, and the
	// buckets read are not the ones MySQL's rows are.
	Buckets int
}

// RebalanceView reads the stock and want flag of each of item's n buckets
// and the item's live transfers, in one pipeline.
func (s *Store) RebalanceView(ctx context.Context, itemID int64, n int) (BucketView, error) {
	pipe := s.rdb.Pipeline()
	stocks := make([]*redis.StringCmd, n)
	wants := make([]*redis.StringCmd, n)
	for b := range n {
		k := BucketKeys(itemID, b)
		stocks[b] = pipe.Get(ctx, k.Stock)
		wants[b] = pipe.Get(ctx, k.Want)
	}
	live := pipe.SMembers(ctx, KeysOf(itemID).TransfersLive())
	meta := pipe.HMGet(ctx, KeysOf(itemID).Meta, "start_ms", "buckets")
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return BucketView{}, unavailable(fmt.Sprintf("stock: buckets of item %d", itemID), err)
	}
	v := BucketView{Stocks: make([]int64, n), Want: make([]bool, n), Need: make([]int64, n)}
	for b := range n {
		st, err := stocks[b].Int64()
		if err != nil {
			st = -1
		}
		v.Stocks[b] = st
		if w, err := wants[b].Result(); err == nil {
			q, _ := strconv.ParseInt(w, 10, 64)
			v.Want[b], v.Need[b] = true, max(q, 1)
		}
	}
	if m := meta.Val(); len(m) == 2 && m[0] != nil {
		v.Buckets = parseBuckets(m[1])
	}
	for _, m := range live.Val() {
		if id, err := strconv.ParseInt(m, 10, 64); err == nil {
			v.Live = append(v.Live, id)
		}
	}
	return v, nil
}

// RebalanceLease is the key whose holder is the one reaper replica that
// rebalances. It only saves work: transfers are safe with any number of
// movers.
const RebalanceLease = "fs:rebalance:lease"

// HoldLease takes key for holder for ttl when nobody holds it, or extends
// it when holder does, and reports whether holder holds it. The extension
// is a GET then a PEXPIRE, not atomic: in the gap the lease may expire and
// another replica take it, which this call then extends. Harmless, since
// nothing depends on there being one holder.
func (s *Store) HoldLease(ctx context.Context, key, holder string, ttl time.Duration) (bool, error) {
	ok, err := s.rdb.SetNX(ctx, key, holder, ttl).Result()
	if err != nil {
		return false, unavailable("stock: lease", err)
	}
	if ok {
		return true, nil
	}
	cur, err := s.rdb.Get(ctx, key).Result()
	if errors.Is(err, redis.Nil) {
		return false, nil
	}
	if err != nil {
		return false, unavailable("stock: lease", err)
	}
	if cur != holder {
		return false, nil
	}
	if err := s.rdb.PExpire(ctx, key, ttl).Err(); err != nil {
		return false, unavailable("stock: lease", err)
	}
	return true, nil
}

// DropLease gives key up if holder holds it (best effort, like HoldLease's
// extension), so another replica need not wait for it to expire.
func (s *Store) DropLease(ctx context.Context, key, holder string) error {
	cur, err := s.rdb.Get(ctx, key).Result()
	if errors.Is(err, redis.Nil) || (err == nil && cur != holder) {
		return nil
	}
	if err != nil {
		return unavailable("stock: lease", err)
	}
	if err := s.rdb.Del(ctx, key).Err(); err != nil {
		return unavailable("stock: lease", err)
	}
	return nil
}
