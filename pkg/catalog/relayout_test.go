package catalog_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/catalog"
	"github.com/flashsale-dev/flashsale/pkg/rebalance"
	"github.com/flashsale-dev/flashsale/pkg/stock"
	"github.com/flashsale-dev/flashsale/pkg/store"
)

// errRedisGone is what redisDies answers once Redis is "gone".
var errRedisGone = errors.New("test: redis gone")

// redisDies is a go-redis hook that lets scripts scripts (EVALSHA or EVAL)
// run once armed, then fails every command: Redis dying in the middle of a
// warm, between two buckets.
type redisDies struct {
	armed   atomic.Bool
	scripts atomic.Int64
	gone    atomic.Bool
}

func (h *redisDies) arm(scripts int64) {
	h.gone.Store(false)
	h.scripts.Store(scripts)
	h.armed.Store(true)
}

func (h *redisDies) disarm() { h.armed.Store(false); h.gone.Store(false) }

func (h *redisDies) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *redisDies) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if !h.armed.Load() {
			return next(ctx, cmd)
		}
		if h.gone.Load() {
			cmd.SetErr(errRedisGone)
			return errRedisGone
		}
		if name := cmd.Name(); name == "evalsha" || name == "eval" {
			if h.scripts.Add(-1) < 0 {
				h.gone.Store(true)
				cmd.SetErr(errRedisGone)
				return errRedisGone
			}
		}
		return next(ctx, cmd)
	}
}

func (h *redisDies) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if h.armed.Load() && h.gone.Load() {
			for _, c := range cmds {
				c.SetErr(errRedisGone)
			}
			return errRedisGone
		}
		return next(ctx, cmds)
	}
}

// closedSale is an item whose sale is a day away: its count may change.
func closedSale(id, total int64, buckets int) store.Item {
	now := time.Now().UTC().Truncate(time.Millisecond)
	return store.Item{ID: id, Name: "relayout", PriceCents: 1, TotalStock: total, PerUserLimit: 1,
		StartsAt: now.Add(24 * time.Hour), EndsAt: now.Add(25 * time.Hour), Buckets: buckets}
}

// layout is what Redis holds of an item's buckets 0 to max-1: for each
// bucket that can sell (has a stock key), its stock and the count its meta
// says.
type layout struct {
	stock  map[int]int64
	counts map[int]int
}

func readLayout(t *testing.T, rdb redis.UniversalClient, id int64, maxBuckets int) layout {
	t.Helper()
	ctx := context.Background()
	l := layout{stock: map[int]int64{}, counts: map[int]int{}}
	for b := range maxBuckets {
		k := stock.BucketKeys(id, b)
		s, err := rdb.Get(ctx, k.Stock).Int64()
		if errors.Is(err, redis.Nil) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		n, _ := strconv.Atoi(rdb.HGet(ctx, k.Meta, "buckets").Val())
		l.stock[b], l.counts[b] = s, max(n, 1)
	}
	return l
}

// mysqlRows is each bucket's MySQL stock in the item's layout now (the
// item's row for an unbucketed item).
func mysqlRows(t *testing.T, db store.Querier, id int64) (int, []int64) {
	t.Helper()
	ctx := context.Background()
	it, err := store.GetItem(ctx, db, id)
	if err != nil {
		t.Fatal(err)
	}
	if !it.Bucketed() {
		return 1, []int64{it.Stock}
	}
	rows, err := store.BucketRows(ctx, db, id, false)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]int64, len(rows))
	for i, r := range rows {
		out[i] = r.Stock
	}
	return it.Buckets, out
}

// A bucket-count change is refused (ErrSaleOpen) while the item's sale
// window, or the one the PUT asks for, is open or about to be: nothing
// changes in either store. Other changes, and a count change between
// sales, go through.
func TestBucketCountChangeRefusedWhileSaleOpen(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	db, _ := testenv.MySQL(t)
	st := stock.New(testenv.Redis(t))
	cat := catalog.New(db, st, testenv.NoLag)
	id := testenv.ItemID()
	open := saleItem(id, 40)
	open.Buckets = 4
	if _, err := cat.Put(ctx, open); err != nil {
		t.Fatal(err)
	}
	unchanged := func(what string) {
		t.Helper()
		if n, rows := mysqlRows(t, db, id); n != 4 || len(rows) != 4 || rows[0] != 10 {
			t.Fatalf("%s: MySQL has %d buckets %v; want 4 of 10", what, n, rows)
		}
		if n, _, err := st.Buckets(ctx, id); err != nil || n != 4 {
			t.Fatalf("%s: Redis count %d, %v; want 4", what, n, err)
		}
	}
	re := open
	re.Buckets = 2
	if _, err := cat.Put(ctx, re); !errors.Is(err, catalog.ErrSaleOpen) {
		t.Fatalf("re-bucket during the sale: %v; want ErrSaleOpen", err)
	}
	unchanged("refused during the sale")
	// Closing the window in the same PUT is no way round it: buyers are
	// admitted by the old window until the warm has run.
	re.StartsAt, re.EndsAt = closedSale(id, 40, 2).StartsAt, closedSale(id, 40, 2).EndsAt
	if _, err := cat.Put(ctx, re); !errors.Is(err, catalog.ErrSaleOpen) {
		t.Fatalf("re-bucket closing the window at once: %v; want ErrSaleOpen", err)
	}
	unchanged("refused closing the window at once")
	renamed := open
	renamed.Name, renamed.Buckets = "renamed", 0
	if _, err := cat.Put(ctx, renamed); err != nil {
		t.Fatalf("rename during the sale: %v", err)
	}
	unchanged("renamed")

	// Between sales: close the window, change the count, open it again.
	if _, err := cat.Put(ctx, closedSale(id, 40, 0)); err != nil {
		t.Fatalf("close the window: %v", err)
	}
	if _, err := cat.Put(ctx, closedSale(id, 40, 2)); err != nil {
		t.Fatalf("re-bucket between sales: %v", err)
	}
	// Opening the window in the same PUT as a count change is refused too.
	reopen := saleItem(id, 40)
	reopen.Buckets = 4
	if _, err := cat.Put(ctx, reopen); !errors.Is(err, catalog.ErrSaleOpen) {
		t.Fatalf("re-bucket opening the window at once: %v; want ErrSaleOpen", err)
	}
	if n, rows := mysqlRows(t, db, id); n != 2 || len(rows) != 2 || rows[0] != 20 {
		t.Fatalf("MySQL has %d buckets %v; want 2 of 20", n, rows)
	}
}

// A warm of a new bucket count that stops half way (Redis gone after k
// scripts, for every k) leaves at most one layout selling: every bucket
// with stock carries the same count, the buckets of the new count hold
// exactly their MySQL rows, and Redis never holds more than MySQL. The next
// warm brings Redis exactly in line.
func TestBucketCountChangeWarmFailsHalfWay(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	db, _ := testenv.MySQL(t)
	clean := testenv.Redis(t)
	common := testenv.Common(t)
	dying := redis.NewClient(&redis.Options{Addr: common.RedisAddrs()[0]})
	t.Cleanup(func() { dying.Close() })
	hook := &redisDies{}
	dying.AddHook(hook)
	cat := catalog.New(db, stock.New(clean), testenv.NoLag)
	// The lag check runs inside Put's transaction, after its Redis reads:
	// arming there fails only the warm that follows the commit.
	var armAt atomic.Int64
	dyingCat := catalog.New(db, stock.New(dying), func(context.Context) (int64, error) {
		hook.arm(armAt.Load())
		return 0, nil
	})
	const total = 40
	for _, c := range []struct{ from, to int }{{4, 2}, {2, 4}, {4, 1}, {1, 3}, {8, 3}} {
		for k := int64(0); k <= int64(c.from+c.to+1); k++ {
			id := testenv.ItemID()
			if _, err := cat.Put(ctx, closedSale(id, total, c.from)); err != nil {
				t.Fatal(err)
			}
			armAt.Store(k)
			_, err := dyingCat.Put(ctx, closedSale(id, total, c.to))
			hook.disarm()
			if err != nil && !errors.Is(err, catalog.ErrNotWarmed) {
				t.Fatalf("%d -> %d, Redis gone after %d scripts: %v; want ErrNotWarmed or success", c.from, c.to, k, err)
			}
			n, rows := mysqlRows(t, db, id)
			if n != c.to {
				t.Fatalf("%d -> %d, k %d: MySQL has %d buckets; want %d (committed before the warm)", c.from, c.to, k, n, c.to)
			}
			l := readLayout(t, clean, id, max(c.from, c.to))
			var sum int64
			counts := map[int]bool{}
			for b, s := range l.stock {
				sum += s
				counts[l.counts[b]] = true
				if l.counts[b] == c.to && (b >= len(rows) || s != rows[b]) {
					t.Errorf("%d -> %d, k %d: bucket %d of the new layout holds %d in Redis, %d in MySQL", c.from, c.to, k, b, s, rows[b])
				}
			}
			if len(counts) > 1 || sum > total {
				t.Fatalf("%d -> %d, Redis gone after %d scripts (err %v): buckets selling %v with counts %v: a mixed layout (%d units in Redis, MySQL has %d)",
					c.from, c.to, k, err, l.stock, l.counts, sum, total)
			}
			if _, err := cat.Warm(ctx, id); err != nil {
				t.Fatalf("%d -> %d, k %d: warm after the failed one: %v", c.from, c.to, k, err)
			}
			l = readLayout(t, clean, id, max(c.from, c.to))
			if len(l.stock) != c.to {
				t.Fatalf("%d -> %d, k %d: after the warm Redis sells buckets %v; want exactly 0 to %d", c.from, c.to, k, l.stock, c.to-1)
			}
			for b, s := range l.stock {
				if b >= len(rows) || s != rows[b] || l.counts[b] != c.to {
					t.Fatalf("%d -> %d, k %d: after the warm bucket %d holds %d (count %d); MySQL rows %v", c.from, c.to, k, b, s, l.counts[b], rows)
				}
			}
		}
	}
}

// A reservation that appears in a bucket the new count retires, after the
// pre-commit checks (here: in the lag check, inside Put's transaction), is
// never dropped: the warm is refused, the bucket keeps its reservation and
// stock, and nothing of the new layout sells until a warm succeeds.
func TestBucketCountChangeKeepsReservationOfRetiredBucket(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	db, _ := testenv.MySQL(t)
	rdb := testenv.Redis(t)
	st := stock.New(rdb)
	id := testenv.ItemID()
	var late atomic.Bool
	lag := func(context.Context) (int64, error) {
		if late.Load() {
			k := stock.BucketKeys(id, 3)
			if err := rdb.HSet(ctx, k.Reservations, "late-request", "77:1:"+strconv.FormatInt(time.Now().UnixMilli(), 10)).Err(); err != nil {
				return 0, err
			}
			if err := rdb.DecrBy(ctx, k.Stock, 1).Err(); err != nil {
				return 0, err
			}
		}
		return 0, nil
	}
	cat := catalog.New(db, st, lag)
	if _, err := cat.Put(ctx, closedSale(id, 40, 4)); err != nil {
		t.Fatal(err)
	}
	late.Store(true)
	_, err := cat.Put(ctx, closedSale(id, 40, 2))
	late.Store(false)
	if !errors.Is(err, catalog.ErrNotWarmed) || !errors.Is(err, catalog.ErrInFlight) {
		t.Fatalf("re-bucket with a reservation in a retired bucket: %v; want ErrNotWarmed wrapping ErrInFlight", err)
	}
	k := stock.BucketKeys(id, 3)
	if n := rdb.HLen(ctx, k.Reservations).Val(); n != 1 {
		t.Fatalf("bucket 3 has %d reservations; want its 1 kept", n)
	}
	if s, err := rdb.Get(ctx, k.Stock).Int64(); err != nil || s != 9 {
		t.Fatalf("bucket 3 stock %d, %v; want 9 kept, not retired under its reservation", s, err)
	}
	l := readLayout(t, rdb, id, 4)
	for b, n := range l.counts {
		if n != 4 {
			t.Fatalf("bucket %d sells with count %d beside the old layout: %v %v", b, n, l.stock, l.counts)
		}
	}
	// The request settles (here: its unit goes back), then the warm runs.
	if err := rdb.HDel(ctx, k.Reservations, "late-request").Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := cat.Warm(ctx, id); err != nil {
		t.Fatalf("warm once the reservation settled: %v", err)
	}
	if l := readLayout(t, rdb, id, 4); len(l.stock) != 2 || l.stock[0] != 20 || l.stock[1] != 20 {
		t.Fatalf("Redis after the warm sells %v; want buckets 0 and 1 of 20", l.stock)
	}
}

// A warm refused by an open transfer names it and says what finishes it
// and what to run then.
func TestWarmNamesOpenTransfer(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	db, _ := testenv.MySQL(t)
	cat := catalog.New(db, stock.New(testenv.Redis(t)), testenv.NoLag)
	id := testenv.ItemID()
	it := saleItem(id, 40)
	it.Buckets = 4
	if _, err := cat.Put(ctx, it); err != nil {
		t.Fatal(err)
	}
	tr, err := rebalance.PlanTransfer(ctx, db, id, 4, 0, 1, 3)
	if err != nil {
		t.Fatal(err)
	}
	_, err = cat.Warm(ctx, id)
	var open *catalog.TransfersOpenError
	if !errors.As(err, &open) || !errors.Is(err, catalog.ErrInFlight) || !errors.Is(err, store.ErrTransfersOpen) {
		t.Fatalf("warm with an open transfer: %v; want a TransfersOpenError (ErrInFlight, store.ErrTransfersOpen)", err)
	}
	for _, want := range []string{"transfer " + strconv.FormatInt(tr.ID, 10) + " (bucket 0 -> 1, qty 3, PLANNED", "FLASHSALE_REBALANCE_INTERVAL",
		"POST /api/v1/admin/items/" + strconv.FormatInt(id, 10) + "/warm"} {
		if !strings.Contains(open.Advice(), want) {
			t.Errorf("advice %q does not say %q", open.Advice(), want)
		}
	}
}
