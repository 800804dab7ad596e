package main

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flashsale-dev/flashsale/pkg/orderlog"
	"github.com/flashsale-dev/flashsale/pkg/reqid"
	"github.com/flashsale-dev/flashsale/pkg/stock"
	"github.com/flashsale-dev/flashsale/pkg/store"
)

// drainBuyer is one admission of the drain: user buys one unit of item in
// their home bucket.
type drainBuyer struct {
	item, user int64
	bucket     int
}

// createDrainItems creates each item with per units over buckets stock
// buckets as the admin API does (store.UpsertItem lays the stock out), warms
// Redis from the rows MySQL then holds, as the catalog does, and returns
// each item's bucket stocks (one entry for an unbucketed item).
func createDrainItems(ctx context.Context, db *sql.DB, st *stock.Store, items []int64, per int64, buckets int) ([][]int64, error) {
	now := time.Now()
	quotas := make([][]int64, len(items))
	for i, id := range items {
		it := store.Item{ID: id, Name: "drain", PriceCents: 999, TotalStock: per, PerUserLimit: 1,
			StartsAt: now.Add(-time.Hour), EndsAt: now.Add(time.Hour), Buckets: buckets}
		var rows []store.StockRow
		err := store.RunInTx(ctx, db, sql.LevelDefault, func(tx *sql.Tx) error {
			if _, err := store.UpsertItem(ctx, tx, it); err != nil {
				return err
			}
			var err error
			rows, err = store.BucketRows(ctx, tx, id, true)
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("drain: create item: %w", err)
		}
		snap := stock.Snapshot{ItemID: id, StartsAt: it.StartsAt, EndsAt: it.EndsAt, PerUserLimit: 1}
		if len(rows) == 0 {
			snap.Stock, quotas[i] = per, []int64{per}
		}
		for _, r := range rows {
			snap.BucketStock = append(snap.BucketStock, r.Stock)
			quotas[i] = append(quotas[i], r.Stock)
		}
		if err := st.Warm(ctx, snap); err != nil {
			return nil, fmt.Errorf("drain: warm item: %w", err)
		}
	}
	return quotas, nil
}

// planBuyers lays n admissions round-robin over items, as before buckets.
// An item's buyers are users 1, 2, ... whose home bucket still has room:
// each bucket is asked for at most the units its row holds, so no
// admission meets a bucket sold out early (moving stock between buckets is
// the rebalancer's business, not what the drain measures), and the buckets
// are drained evenly, as a rebalanced sale would be.
func planBuyers(items []int64, quotas [][]int64, n int) []drainBuyer {
	perItem := make([][]drainBuyer, len(items))
	for i, id := range items {
		want := n / len(items)
		if i < n%len(items) {
			want++
		}
		left := append([]int64(nil), quotas[i]...)
		for u := int64(1); len(perItem[i]) < want; u++ {
			b := stock.HomeBucket(u, len(left))
			if left[b] > 0 {
				left[b]--
				perItem[i] = append(perItem[i], drainBuyer{item: id, user: u, bucket: b})
			}
		}
	}
	out := make([]drainBuyer, n)
	for i := range out {
		out[i] = perItem[i%len(items)][i/len(items)]
	}
	return out
}

// admitAll reserves each buyer's unit through the admission script in the
// buyer's home bucket, as the ingress does, and returns the encoded messages
// it would publish (their request ids name the bucket, so their Kafka keys
// do).
func admitAll(ctx context.Context, st *stock.Store, buyers []drainBuyer, buckets int) ([][]byte, error) {
	vals := make([][]byte, len(buyers))
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 256)
	for range 256 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(len(buyers)) || ctx.Err() != nil {
					return
				}
				b := buyers[i]
				now := time.Now()
				rid := reqid.NewIn(b.item, b.bucket, now)
				r, err := st.Admit(ctx, stock.AdmitRequest{ItemID: b.item, Buckets: buckets, Bucket: b.bucket, UserID: b.user, Qty: 1, RequestID: rid, Now: now})
				if err == nil && r.Code != stock.Admitted {
					err = fmt.Errorf("admit item %d bucket %d user %d: %s", b.item, b.bucket, b.user, r.Code)
				}
				if err == nil {
					vals[i], err = orderlog.OrderMessage{V: orderlog.MessageVersion, RequestID: rid, ItemID: b.item, UserID: b.user, Qty: 1, ReservedMs: now.UnixMilli()}.Encode()
				}
				if err != nil {
					select {
					case errs <- err:
					default:
					}
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return nil, fmt.Errorf("drain: %w", err)
	}
	return vals, ctx.Err()
}
