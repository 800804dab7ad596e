package rebalance

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/flashsale-dev/flashsale/pkg/stock"
)

// view is what the rebalancer reads of an item in one pipeline.
type view struct {
	// stocks is each bucket's Redis stock, -1 where there is no stock key.
	stocks []int64
	// want is each bucket's want flag (a buyer found it short lately), and
	// need the qty that buyer asked for (1 for a flag without one).
	want []bool
	need []int64
	// live is the item's TransfersLive.
	live []int64
	// buckets is the bucket count bucket 0's meta carries (0: not warmed).
	// Until a re-bucketing's warm ran it differs from MySQL's, and the
	// buckets read are not the ones MySQL's rows are.
	buckets int
}

// readView reads the stock and want flag of each of item's n buckets, the
// item's live transfers and its bucket count, in one pipeline.
func readView(ctx context.Context, rdb redis.UniversalClient, itemID int64, n int) (view, error) {
	pipe := rdb.Pipeline()
	stocks := make([]*redis.StringCmd, n)
	wants := make([]*redis.StringCmd, n)
	for b := range n {
		k := stock.BucketKeys(itemID, b)
		stocks[b] = pipe.Get(ctx, k.Stock)
		wants[b] = pipe.Get(ctx, k.Want)
	}
	live := pipe.SMembers(ctx, stock.KeysOf(itemID).TransfersLive())
	meta := pipe.HMGet(ctx, stock.KeysOf(itemID).Meta, "start_ms", "buckets")
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return view{}, fmt.Errorf("rebalance: buckets of item %d: %w", itemID, err)
	}
	v := view{stocks: make([]int64, n), want: make([]bool, n), need: make([]int64, n)}
	for b := range n {
		st, err := stocks[b].Int64()
		if err != nil {
			st = -1
		}
		v.stocks[b] = st
		if w, err := wants[b].Result(); err == nil {
			q, _ := strconv.ParseInt(w, 10, 64)
			v.want[b], v.need[b] = true, max(q, 1)
		}
	}
	if m := meta.Val(); len(m) == 2 && m[0] != nil {
		v.buckets = stock.ParseBuckets(m[1])
	}
	for _, m := range live.Val() {
		if id, err := strconv.ParseInt(m, 10, 64); err == nil {
			v.live = append(v.live, id)
		}
	}
	return v, nil
}
