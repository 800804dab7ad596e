package orderwriter

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/flashsale-dev/flashsale/pkg/orderlog"
	"github.com/flashsale-dev/flashsale/pkg/store"
)

// errShortStock means MySQL has less stock than the batch needs: the optimistic
// transaction is rolled back and the item is decided request by request.
var errShortStock = errors.New("orderwriter: MySQL stock short of the batch")

// ItemResult is what one item's transaction decided, and what the after-commit
// step must apply in Redis. It includes requests decided by an earlier
// delivery (replays), whose Redis step is idempotent and may not have run.
type ItemResult struct {
	ItemID int64
	// Bucket is the stock bucket the batch's requests were admitted in.
	Bucket int
	// Ordered are the orders of ORDERED requests of the batch (new and replayed).
	Ordered []store.Order
	// Rejected are the REJECTED decisions of the batch (new and replayed).
	Rejected []store.Decision
	// Holders names, for a fresh duplicate_buyer rejection, the request by
	// which the buyer holds their order: the buyer mark must name that one
	// (Redis had lost the mark, so the rejected request had set it).
	Holders map[string]string
	// New counts the decisions this transaction made, by outcome and reason.
	New map[[2]string]int
	// Dropped counts requests found ABORTED or VOIDED (their decider released them).
	Dropped int
	// Fallback is true when the item was decided request by request.
	Fallback bool
}

// ItemWriter writes one item's requests in one transaction. The requests of
// a bucketed item come grouped by bucket (the consumer groups by
// orderlog.OrderMessage.StockKey), and the transaction takes stock from that
// bucket's row only, so writers of different buckets never wait on each
// other.
type ItemWriter struct {
	DB            *sql.DB
	PaymentWindow time.Duration
	// TxTimeout bounds one transaction attempt.
	TxTimeout time.Duration
}

// WriteItem decides msgs (all of itemID, in offset order) in one READ
// COMMITTED transaction. READ COMMITTED takes no gap or next-key locks for
// searches and index scans, so writers of the same item (two replicas after a
// rebalance) do not block each other on ranges of the orders indexes. InnoDB
// still locks for uniqueness: an INSERT meeting a committed or in-flight
// duplicate request_id or (user_id, item_id) waits for that row's lock and
// then takes a shared lock on it (a next-key lock on a unique secondary
// index), so two writers of the same requests can wait on or deadlock with
// each other; the duplicate-key loser retries as errRace, a deadlock as a
// transient error.
//
// The first attempt assumes the requests are new (attemptMode): a duplicate
// key in it means some were decided before, or a buyer holds the item, and
// the batch is decided again at once, reading both.
//
// Requests of an item MySQL does not have are decided REJECTED unknown_item
// in the same transaction: no retry can help them, and their buyers must not
// wait for the orphan grace.
//
// Errors: errRace (retry now), store.IsTransient errors (retry with
// backoff), anything else (retried until the consumer gives up).
func (w *ItemWriter) WriteItem(ctx context.Context, itemID int64, msgs []orderlog.OrderMessage) (ItemResult, error) {
	for _, m := range msgs[1:] {
		if m.Bucket() != msgs[0].Bucket() {
			return ItemResult{}, fmt.Errorf("orderwriter: item %d: requests of buckets %d and %d in one group", itemID, msgs[0].Bucket(), m.Bucket())
		}
	}
	res, err := w.attempt(ctx, itemID, msgs, assumeFresh)
	if errors.Is(err, errRace) {
		res, err = w.attempt(ctx, itemID, msgs, checked)
	}
	if errors.Is(err, errShortStock) {
		res, err = w.attempt(ctx, itemID, msgs, underLock)
	}
	return res, err
}

func (w *ItemWriter) attempt(ctx context.Context, itemID int64, msgs []orderlog.OrderMessage, mode attemptMode) (ItemResult, error) {
	if w.TxTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, w.TxTimeout)
		defer cancel()
	}
	var res ItemResult
	err := store.RunInTx(ctx, w.DB, sql.LevelReadCommitted, func(tx *sql.Tx) error {
		res = ItemResult{ItemID: itemID, Bucket: msgs[0].Bucket(), New: map[[2]string]int{}, Fallback: mode == underLock}
		return w.decide(ctx, tx, itemID, msgs, mode, &res)
	})
	return res, err
}

// decide reads what the pure steps need (plan.go), runs them and writes
// what they decided, in tx.
func (w *ItemWriter) decide(ctx context.Context, tx *sql.Tx, itemID int64, msgs []orderlog.OrderMessage, mode attemptMode, res *ItemResult) error {
	fallback := mode == underLock
	decided, err := mode.decisionsAmong(ctx, tx, uniqueIDs(msgs))
	if err != nil {
		return err
	}
	split := splitBatch(msgs, decided)
	res.Rejected = append(res.Rejected, split.ReplayRejected...)
	res.Dropped += split.Dropped

	bucket := res.Bucket
	item, err := store.GetItem(ctx, tx, itemID)
	if errors.Is(err, store.ErrNotFound) {
		return rejectAll(ctx, tx, itemID, split.Fresh, split.ReplayOrdered, store.ReasonUnknownItem, res)
	}
	if err != nil {
		return err
	}
	avail := item.Stock
	if fallback {
		// Lock the hot row first: nobody else may take stock from it while
		// this transaction decides who fits.
		if avail, err = store.LockStockRow(ctx, tx, item, bucket); err != nil {
			return err
		}
	}
	users := make([]int64, 0, len(split.Fresh))
	for _, m := range split.Fresh {
		users = append(users, m.UserID)
	}
	holders, err := mode.existingBuyers(ctx, tx, itemID, users)
	if err != nil {
		return err
	}

	plan := planFresh(itemID, split.Fresh, holders, avail, fallback)
	res.Holders = plan.Holders
	for _, d := range plan.Decisions {
		if d.Outcome == store.Rejected {
			res.Rejected = append(res.Rejected, d)
		}
		res.New[[2]string{string(d.Outcome), d.Reason}]++
	}

	// INSERTs before the UPDATE: the hot items row is locked only from the CAS
	// to the commit.
	fresh, err := store.InsertOrders(ctx, tx, itemID, bucket, item.PriceCents, w.PaymentWindow, plan.Orders)
	if err != nil {
		return raced(err)
	}
	if err := store.InsertDecisions(ctx, tx, plan.Decisions); err != nil {
		return raced(err)
	}
	if res.Ordered, err = store.OrdersByRequest(ctx, tx, split.ReplayOrdered); err != nil {
		return err
	}
	res.Ordered = append(res.Ordered, fresh...)
	if want := len(split.ReplayOrdered) + len(plan.Orders); len(res.Ordered) != want {
		return fmt.Errorf("orderwriter: item %d: read back %d of %d orders", itemID, len(res.Ordered), want)
	}
	ok, err := store.TakeStock(ctx, tx, item, bucket, plan.Take)
	if err != nil {
		return err
	}
	if !ok {
		if fallback {
			// Impossible while we hold the row lock; never loop on it.
			return fmt.Errorf("orderwriter: item %d: stock CAS failed under lock", itemID)
		}
		return errShortStock
	}
	return nil
}

// rejectAll decides every fresh request REJECTED for reason (the item is not
// in MySQL) and reads back the orders of replayed ORDERED requests, so the
// after-commit step still settles them.
func rejectAll(ctx context.Context, tx *sql.Tx, itemID int64, fresh []orderlog.OrderMessage, replayOrdered []string, reason string, res *ItemResult) error {
	decisions := make([]store.Decision, 0, len(fresh))
	for _, m := range fresh {
		d := store.Decision{RequestID: m.RequestID, ItemID: itemID, UserID: m.UserID, Qty: m.Qty, Outcome: store.Rejected, Reason: reason}
		decisions = append(decisions, d)
		res.Rejected = append(res.Rejected, d)
		res.New[[2]string{string(d.Outcome), d.Reason}]++
	}
	if err := store.InsertDecisions(ctx, tx, decisions); err != nil {
		return raced(err)
	}
	var err error
	if res.Ordered, err = store.OrdersByRequest(ctx, tx, replayOrdered); err != nil {
		return err
	}
	return nil
}
