package stockchange

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/flashsale-dev/flashsale/pkg/stock"
	"github.com/flashsale-dev/flashsale/pkg/store"
)

// ErrConflict: the operation id was used before for another item or delta.
// Nothing changed.
var ErrConflict = errors.New("stockchange: operation id used for another change")

// ErrNotApplied: the change is recorded in MySQL but its Redis step (or the
// mark after it) failed. It stays PENDING: a retry of the same call, or the
// reaper's next pass, finishes it exactly once. It wraps the store's error.
var ErrNotApplied = errors.New("stockchange: recorded, not yet applied")

// Result is what a call did.
type Result struct {
	// Change is the row as the call left it: APPLIED with Applied units
	// (signed: a withdraw's is minus what it took).
	Change store.StockChange
	// Replayed: an earlier call with this operation id recorded the change;
	// this one changed nothing it had not (at most it finished a PENDING
	// one's steps).
	Replayed bool
}

// Changer runs stock changes. Any number may run at once, in any processes,
// on the same stores.
type Changer struct {
	db      *sql.DB
	redis   *Store
	timeout time.Duration
	log     *slog.Logger

	// AfterRecord, when set, is called once the change's row committed and
	// before Redis is touched; an error stops the call right there, as a
	// crash would (tests prove Repair finishes it exactly once).
	AfterRecord func(ctx context.Context, c store.StockChange) error
}

// New returns a Changer; timeout bounds each store call.
func New(db *sql.DB, st *stock.Store, timeout time.Duration, log *slog.Logger) *Changer {
	if timeout <= 0 {
		timeout = 2 * time.Second
	}
	return &Changer{db: db, redis: NewStore(st), timeout: timeout, log: log}
}

// Change restocks (delta > 0) or withdraws (delta < 0) item's units once for
// operationID. Errors: store.ErrNotFound (no such item), ErrConflict,
// store.ErrStockLimit, ErrNotApplied (recorded; retry), or a store error
// with nothing recorded.
func (c *Changer) Change(ctx context.Context, itemID, delta int64, operationID string) (Result, error) {
	rec, fresh, err := c.record(ctx, itemID, delta, operationID)
	if err != nil {
		return Result{}, err
	}
	res := Result{Change: rec, Replayed: !fresh}
	if rec.State == store.StockChangeApplied {
		return res, nil
	}
	if fresh && c.AfterRecord != nil {
		if err := c.AfterRecord(ctx, rec); err != nil {
			return res, fmt.Errorf("%w: %w", ErrNotApplied, err)
		}
	}
	// Committed: finish even if the caller leaves now.
	actx := context.WithoutCancel(ctx)
	if res.Change, err = c.Apply(actx, rec); err != nil {
		return res, fmt.Errorf("%w: %w", ErrNotApplied, err)
	}
	return res, nil
}

// record finds operationID's row or writes it (with a restock's MySQL
// side). fresh: this call wrote it.
func (c *Changer) record(ctx context.Context, itemID, delta int64, operationID string) (store.StockChange, bool, error) {
	var out store.StockChange
	var fresh bool
	tctx, cancel := context.WithTimeout(ctx, 4*c.timeout)
	defer cancel()
	err := store.RunInTxDeadlockRetry(tctx, c.db, sql.LevelDefault, func(tx *sql.Tx) error {
		fresh = false
		it, err := store.GetItemForUpdate(tctx, tx, itemID)
		if err != nil {
			return err
		}
		prev, err := store.GetStockChange(tctx, tx, operationID, true)
		if err == nil {
			out = prev
			return same(prev, itemID, delta)
		}
		if !errors.Is(err, store.ErrNotFound) {
			return err
		}
		rec := store.StockChange{OperationID: operationID, ItemID: itemID, Delta: delta, Buckets: max(it.Buckets, 1), State: store.StockChangePending}
		if err := store.InsertStockChange(tctx, tx, it, rec, Spread(delta, rec.Buckets)); err != nil {
			return err
		}
		out, fresh = rec, true
		return nil
	})
	if store.IsDuplicate(err) {
		// The same id inserted at once for another item (the same item's
		// calls are serialised by its row lock): that one won.
		prev, gerr := store.GetStockChange(ctx, c.db, operationID, false)
		if gerr != nil {
			return out, false, gerr
		}
		return prev, false, same(prev, itemID, delta)
	}
	return out, fresh, err
}

// same refuses a replay that asks for something else.
func same(prev store.StockChange, itemID, delta int64) error {
	if prev.ItemID != itemID || prev.Delta != delta {
		return fmt.Errorf("%w: operation %q was item %d delta %+d (asked: item %d delta %+d)",
			ErrConflict, prev.OperationID, prev.ItemID, prev.Delta, itemID, delta)
	}
	return nil
}

// Apply runs rec's remaining steps (rec read PENDING; any number of
// appliers may run it at once) and returns the row APPLIED.
func (c *Changer) Apply(ctx context.Context, rec store.StockChange) (store.StockChange, error) {
	n := max(rec.Buckets, 1)
	if rec.Delta > 0 {
		for b, share := range Spread(rec.Delta, n) {
			if share == 0 {
				continue
			}
			if _, err := c.change(ctx, rec, b, share); err != nil {
				return rec, err
			}
		}
		mctx, cancel := context.WithTimeout(ctx, c.timeout)
		defer cancel()
		if err := store.MarkStockChangeApplied(mctx, c.db, rec.OperationID, rec.Delta); err != nil {
			return rec, err
		}
		rec.Applied = rec.Delta
	} else {
		taken := make([]int64, n)
		left := -rec.Delta
		for b := range n {
			if left == 0 {
				break
			}
			u, err := c.change(ctx, rec, b, -left)
			if err != nil {
				return rec, err
			}
			taken[b] = -u
			left += u
		}
		tctx, cancel := context.WithTimeout(ctx, 4*c.timeout)
		defer cancel()
		err := store.RunInTxDeadlockRetry(tctx, c.db, sql.LevelDefault, func(tx *sql.Tx) error {
			it, err := store.GetItemForUpdate(tctx, tx, rec.ItemID)
			if err != nil {
				return err
			}
			rec.Applied, err = store.ApplyWithdraw(tctx, tx, it, rec.OperationID, taken)
			return err
		})
		if err != nil {
			return rec, err
		}
		var sum int64
		for _, t := range taken {
			sum += t
		}
		if -rec.Applied != sum {
			c.log.Warn("withdraw: MySQL had fewer units than Redis gave (Redis was above MySQL); the difference stays unsold until a warm",
				"item_id", rec.ItemID, "operation_id", rec.OperationID, "redis_took", sum, "mysql_took", -rec.Applied)
		}
	}
	rec.State = store.StockChangeApplied
	ectx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	if err := c.redis.ExpireGuards(ectx, rec.ItemID, n, rec.OperationID); err != nil {
		// Marked: no applier comes back for these guards, which stay
		// without TTL (memory, not correctness).
		c.log.Warn("stock change guards keep no TTL", "operation_id", rec.OperationID, "err", err)
	}
	return rec, nil
}

// change runs bucket b's part of rec.
func (c *Changer) change(ctx context.Context, rec store.StockChange, b int, delta int64) (int64, error) {
	cctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	u, _, err := c.redis.ChangeBucketStock(cctx, rec.ItemID, b, rec.OperationID, delta)
	return u, err
}

// Repair finishes every PENDING change (a caller that crashed or lost a
// store between the steps), oldest first, up to limit per call; the
// reaper's pass runs it. It returns how many it finished.
func (c *Changer) Repair(ctx context.Context, limit int) (int, error) {
	qctx, cancel := context.WithTimeout(ctx, c.timeout)
	recs, err := store.PendingStockChanges(qctx, c.db, 0, limit)
	cancel()
	if err != nil {
		return 0, err
	}
	done := 0
	var errs []error
	for _, rec := range recs {
		if err := ctx.Err(); err != nil {
			return done, err
		}
		if _, err := c.Apply(ctx, rec); err != nil {
			errs = append(errs, fmt.Errorf("stock change %q: %w", rec.OperationID, err))
			continue
		}
		c.log.Info("stock change finished by repair", "operation_id", rec.OperationID, "item_id", rec.ItemID, "delta", rec.Delta)
		done++
	}
	return done, errors.Join(errs...)
}
