package orderwriter

import (
	"context"
	"errors"
	"sync"

	"github.com/flashsale-dev/flashsale/pkg/orderlog"
	"github.com/flashsale-dev/flashsale/pkg/store"
)

// writeSetBased writes a round of several groups (stock rows) in one
// BatchWriter transaction, until they are done or the round's context ends.
// Groups whose stock is short, or whose row another transaction holds
// locked, go through writeGroup (ItemWriter's request-by-request fallback
// under the row lock, waiting for its own row alone) while the rest are
// tried set-based again. A lost race (another writer decided some of the
// requests) retries the batch at once. Any other error, transient or not,
// hands every group of the round to writeGroup, which retries and gives up
// per item as it always has: one bad message still cannot take its
// neighbours down, and a deadlock or an outage holds up the round's items
// at most until the batch transaction times out (TxTimeout).
func (c *Consumer) writeSetBased(ctx context.Context, order []orderlog.StockKey, groups map[orderlog.StockKey][]*entry, decoded map[*entry]orderlog.OrderMessage) {
	var aside sync.WaitGroup // groups set apart, written one item each
	defer aside.Wait()
	for len(order) > 1 {
		msgs := make([][]orderlog.OrderMessage, len(order))
		n := 0
		for i, k := range order {
			for _, e := range groups[k] {
				msgs[i] = append(msgs[i], decoded[e])
			}
			n += len(msgs[i])
		}
		if !acquire(ctx, c.itemSlots) {
			return
		}
		tctx, span := startItemTx(ctx, 0, n)
		res, apart, err := c.batch.WriteBatch(tctx, msgs)
		endBatchTx(span, len(order), res, apart, err)
		<-c.itemSlots
		switch {
		case err == nil && apart == nil:
			c.settleAll(ctx, order, groups, res)
			return
		case err == nil:
			c.log.DebugContext(ctx, "stock short or row locked in a set-based batch; deciding those items one by one", "items", len(apart), "of", len(order))
			isApart := make(map[int]bool, len(apart))
			keys := make([]orderlog.StockKey, 0, len(apart))
			for _, i := range apart {
				isApart[i] = true
				keys = append(keys, order[i])
			}
			aside.Add(1)
			go func() {
				defer aside.Done()
				c.writeGroups(ctx, keys, groups, decoded)
			}()
			rest := make([]orderlog.StockKey, 0, len(order)-len(apart))
			for i, k := range order {
				if !isApart[i] {
					rest = append(rest, k)
				}
			}
			order = rest
			continue
		case ctx.Err() != nil:
			return
		case errors.Is(err, errRace):
			c.m.Retries.WithLabelValues("race").Inc()
			c.log.WarnContext(ctx, "write batch lost a race; retrying", "items", len(order), "messages", n, "err", err)
			if !sleep(ctx, c.cfg.MinBackoff) { // the winner has committed: retry soon
				return
			}
			continue
		default:
			c.log.WarnContext(ctx, "write batch failed; writing its items one by one", "items", len(order), "messages", n, "transient", store.IsTransient(err), "err", err)
		}
		break
	}
	c.writeGroups(ctx, order, groups, decoded)
}

// writeGroups writes each of keys' groups through writeGroup (its own
// transaction), at most ItemParallelism item writes at a time across all
// rounds in flight (items are independent rows and transactions).
func (c *Consumer) writeGroups(ctx context.Context, keys []orderlog.StockKey, groups map[orderlog.StockKey][]*entry, decoded map[*entry]orderlog.OrderMessage) {
	c.each(ctx, keys, func(k orderlog.StockKey) { c.writeGroup(ctx, k.ItemID, groups[k], decoded) })
}

// settleAll settles every group of a committed batch (res[i] is order[i]'s)
// in one Redis step.
func (c *Consumer) settleAll(ctx context.Context, order []orderlog.StockKey, groups map[orderlog.StockKey][]*entry, res []ItemResult) {
	var es []*entry
	for _, k := range order {
		es = append(es, groups[k]...)
	}
	c.settleMany(ctx, es, res)
}

// each runs f for every key, each in its own goroutine holding one of
// itemSlots, and waits for them.
func (c *Consumer) each(ctx context.Context, keys []orderlog.StockKey, f func(orderlog.StockKey)) {
	var wg sync.WaitGroup
	for _, k := range keys {
		if !acquire(ctx, c.itemSlots) {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-c.itemSlots }()
			f(k)
		}()
	}
	wg.Wait()
}
