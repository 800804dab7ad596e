package rebalance

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/flashsale-dev/flashsale/pkg/stock"
	"github.com/flashsale-dev/flashsale/pkg/store"
)

// The Redis side of a transfer (MySQL's stock_transfers row says how far it
// got; transfers_sql.go): of a stock transfer the buckets' stock keys, of a
// waitlist transfer the pools of the buckets' shares of the item's
// waitlist (stock.Keys.Waitlist). Each step is one script in one bucket's slot,
// guarded per transfer and direction (stock.Keys.TransferGuard), so it runs
// at most once however often it is called. The item's TransfersLive and
// TransfersDone (stock.Keys) are the marks pkg/admission and pkg/audit read
// (through pkg/bucketview) to tell a unit in flight from one sold
// (bucketview.Snapshot).

// step is the answer of a transfer's Redis step.
type step string

// Answers of transferOut and transferIn; see lua/transfer_out.lua and
// lua/transfer_in.lua.
const (
	// stepOK: the step moved the units now, or (out) did so before: the
	// out step's answer is decided once.
	stepOK step = "ok"
	// stepShort: the donor had less than the qty; nothing was taken.
	stepShort step = "short"
	// stepNoStock: the bucket has no stock key (Redis lost it); nothing
	// was moved in Redis.
	stepNoStock step = "nostock"
	// stepSeen: the in step ran before.
	stepSeen step = "seen"
)

// ref names one transfer for its Redis steps. token tells it from a
// transfer of an earlier database that had the same id (its created_at,
// unix ms); waitlist says its units are the pools' of the buckets' shares
// of the item's waitlist, not their stocks'.
type ref struct {
	item, id int64
	from, to int
	qty      int64
	token    int64
	waitlist bool
}

// refOf names t for its Redis steps.
func refOf(t store.Transfer) ref {
	return ref{item: t.ItemID, id: t.ID, from: t.From, to: t.To, qty: t.Qty, token: t.CreatedAt.UnixMilli(),
		waitlist: t.Kind == store.TransferWaitlist}
}

// transferOut takes t.qty out of the donor bucket t.from (its stock, or
// its waitlist's pool: waitlist_out.lua), unless the transfer's out step
// already ran, whose answer it then repeats.
func transferOut(ctx context.Context, rdb redis.UniversalClient, t ref) (step, error) {
	k := stock.BucketKeys(t.item, t.from)
	if t.waitlist {
		return runStep(ctx, rdb, waitlistOutScript, "out", t, []string{k.Waitlist, k.TransferGuard(t.id, "out"), k.Stock})
	}
	return runStep(ctx, rdb, transferOutScript, "out", t, []string{k.Stock, k.TransferGuard(t.id, "out")})
}

// transferIn gives t.qty to the recipient bucket t.to and clears its want
// flag (a waitlist transfer: to its waitlist's pool, waitlist_in.lua),
// unless the transfer's in step already ran (stepSeen).
func transferIn(ctx context.Context, rdb redis.UniversalClient, t ref) (step, error) {
	k := stock.BucketKeys(t.item, t.to)
	if t.waitlist {
		return runStep(ctx, rdb, waitlistInScript, "in", t, []string{k.Waitlist, k.TransferGuard(t.id, "in"), k.Stock, k.Meta})
	}
	return runStep(ctx, rdb, transferInScript, "in", t, []string{k.Stock, k.TransferGuard(t.id, "in"), k.Want})
}

func runStep(ctx context.Context, rdb redis.UniversalClient, script *redis.Script, dir string, t ref, keys []string) (step, error) {
	v, err := script.Run(ctx, rdb, keys, t.qty, t.token).Text()
	if err != nil {
		return "", fmt.Errorf("rebalance: transfer %d %s: %w", t.id, dir, err)
	}
	return step(v), nil
}

// cutResult is what transferCutTo decided: moved is the qty MySQL is to
// move; before and after are the donor's Redis stock around the cut (-1
// when nothing was cut).
type cutResult struct {
	moved, before, after int64
}

// transferCutTo is the Redis side of the transfer's MySQL step, which calls
// it with the donor's row locked: free is MySQL's donor stock less the
// restores Redis has not applied, short whether that row holds less than
// t.qty. Normally (not short, never cut) it answers t.qty and writes
// nothing. Short, it cuts the transfer to what MySQL has free less the
// donor's pending reservations and what its share of the waitlist holds,
// gives the donor's stock the rest of what the out step took (of a
// waitlist transfer too: counted returned) and caps the donor at what MySQL
// says it holds: Redis is reconciled downward, never up
// (lua/transfer_cut.lua). Its decision is
// kept, so a repeat answers the same whatever MySQL says then.
func transferCutTo(ctx context.Context, rdb redis.UniversalClient, t ref, free int64, short bool) (cutResult, error) {
	k := stock.BucketKeys(t.item, t.from)
	flag, wl := 0, 0
	if short {
		flag = 1
	}
	if t.waitlist {
		wl = 1
	}
	v, err := transferCutScript.Run(ctx, rdb, []string{k.Stock, k.Reservations, k.TransferGuard(t.id, "cut"), k.Waitlist, k.Offers},
		t.qty, free, flag, t.token, wl).Int64Slice()
	if err != nil {
		return cutResult{}, fmt.Errorf("rebalance: transfer %d cut: %w", t.id, err)
	}
	if len(v) != 3 {
		return cutResult{}, fmt.Errorf("rebalance: transfer %d cut answered %v", t.id, v)
	}
	return cutResult{moved: v[0], before: v[1], after: v[2]}, nil
}

// markLive adds transfer id to item's TransfersLive, which must happen
// before its first step moves anything: a bucketview.Snapshot then knows
// units may be in neither bucket, and the ingress does not answer "sold
// out" while they are.
func markLive(ctx context.Context, rdb redis.UniversalClient, itemID, id int64) error {
	if err := rdb.SAdd(ctx, stock.KeysOf(itemID).TransfersLive(), id).Err(); err != nil {
		return fmt.Errorf("rebalance: mark transfer %d live: %w", id, err)
	}
	return nil
}

// guardTTL is how long a finished transfer's guards are kept: far longer
// than a slow driver that read the transfer open may take to run a step
// again (a few store timeouts), as for the restore guards.
const guardTTL = stock.MarkedGuardTTL

// finishTransfer runs after MySQL says the transfer is final (DONE or
// ABANDONED): its guards get guardTTL, then forgetTransfer. Repeating it is
// harmless: an extra count only makes a snapshot reader look once more.
func finishTransfer(ctx context.Context, rdb redis.UniversalClient, t ref) error {
	from, to := stock.BucketKeys(t.item, t.from), stock.BucketKeys(t.item, t.to)
	pipe := rdb.Pipeline()
	pipe.PExpire(ctx, from.TransferGuard(t.id, "out"), guardTTL)
	pipe.PExpire(ctx, from.TransferGuard(t.id, "cut"), guardTTL)
	pipe.PExpire(ctx, to.TransferGuard(t.id, "in"), guardTTL)
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("rebalance: expire guards of transfer %d: %w", t.id, err)
	}
	return forgetTransfer(ctx, rdb, t.item, t.id)
}

// forgetTransfer removes transfer id from item's TransfersLive and counts
// it in TransfersDone, in one MULTI in bucket 0's slot: for an id whose
// guards are already dealt with, or unknown to MySQL.
func forgetTransfer(ctx context.Context, rdb redis.UniversalClient, itemID, id int64) error {
	k := stock.KeysOf(itemID)
	_, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Incr(ctx, k.TransfersDone())
		p.SRem(ctx, k.TransfersLive(), id)
		return nil
	})
	if err != nil {
		return fmt.Errorf("rebalance: finish transfer %d: %w", id, err)
	}
	return nil
}
