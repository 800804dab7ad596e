package stockchange_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/audit"
	"github.com/flashsale-dev/flashsale/pkg/catalog"
	"github.com/flashsale-dev/flashsale/pkg/stock"
	"github.com/flashsale-dev/flashsale/pkg/stockchange"
	"github.com/flashsale-dev/flashsale/pkg/store"
)

// newItem saves and warms an item of total units in buckets buckets on the
// real stack and returns a Changer on it.
func newItem(t *testing.T, total int64, buckets int) (*stockchange.Changer, *stock.Store, store.Item, func() audit.Report) {
	t.Helper()
	db, _ := testenv.MySQL(t)
	st := stock.New(testenv.Redis(t))
	it := putItem(t, db, st, total, buckets)
	ctx := context.Background()
	ch := stockchange.New(db, st, 2*time.Second, testenv.LogTail(t))
	auditOf := func() audit.Report {
		t.Helper()
		rep, err := audit.Item(ctx, db, st, it.ID)
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	return ch, st, it, auditOf
}

// putItem saves and warms an item of total units in buckets buckets.
func putItem(t *testing.T, db *sql.DB, st *stock.Store, total int64, buckets int) store.Item {
	t.Helper()
	now := time.Now().UTC()
	it, err := catalog.New(db, st, testenv.NoLag).Put(context.Background(), store.Item{ID: testenv.ItemID(), Name: "restock", PriceCents: 100,
		TotalStock: total, PerUserLimit: 5, StartsAt: now.Add(-time.Hour), EndsAt: now.Add(time.Hour), Buckets: buckets})
	if err != nil {
		t.Fatal(err)
	}
	return it
}

func mustOK(t *testing.T, when string, rep audit.Report) {
	t.Helper()
	if !rep.OK || len(rep.Info) > 0 {
		t.Fatalf("%s: audit not exact: %v info %v (%+v)", when, rep.Violations, rep.Info, rep)
	}
}

var errCrash = errors.New("crash injected after the MySQL record")

// TestCrashAfterRecordRepairedOnce stops a change right after its MySQL row
// committed (before Redis), checks the audit is exact in that state, then
// runs the repair twice: the change is applied once in both stores.
func TestCrashAfterRecordRepairedOnce(t *testing.T) {
	for _, c := range []struct {
		name           string
		total, delta   int64
		buckets        int
		wantTotal      int64
		wantRedisStock int64
	}{
		{"restock", 100, 500, 1, 600, 600},
		{"withdraw", 100, -30, 1, 70, 70},
		{"withdraw beyond stock", 100, -130, 1, 0, 0},
		{"restock bucketed", 100, 10, 4, 110, 110},
		{"withdraw bucketed", 100, -70, 4, 30, 30},
	} {
		t.Run(c.name, func(t *testing.T) {
			ch, st, it, auditOf := newItem(t, c.total, c.buckets)
			ctx := context.Background()
			mustOK(t, "before", auditOf())
			ch.AfterRecord = func(context.Context, store.StockChange) error { return errCrash }
			op := "op-" + testenv.Suffix()
			if _, err := ch.Change(ctx, it.ID, c.delta, op); !errors.Is(err, stockchange.ErrNotApplied) || !errors.Is(err, errCrash) {
				t.Fatalf("Change with a crash: %v, want ErrNotApplied", err)
			}
			mustOK(t, "crashed after the MySQL record", auditOf())
			ch.AfterRecord = nil
			for i := range 2 {
				n, err := ch.Repair(ctx, 100)
				if err != nil {
					t.Fatal(err)
				}
				if want := 1 - i; n != want {
					t.Fatalf("repair %d finished %d changes, want %d", i, n, want)
				}
			}
			rep := auditOf()
			mustOK(t, "repaired", rep)
			if rep.Total != c.wantTotal || rep.RedisStock != c.wantRedisStock || rep.DBStock != c.wantTotal {
				t.Fatalf("after repair: total %d mysql %d redis %d, want %d/%d/%d", rep.Total, rep.DBStock, rep.RedisStock, c.wantTotal, c.wantTotal, c.wantRedisStock)
			}
			// The retried call answers the same, changing nothing.
			res, err := ch.Change(ctx, it.ID, c.delta, op)
			if err != nil || !res.Replayed || res.Change.Applied != c.wantTotal-c.total {
				t.Fatalf("replay: %+v %v, want replayed with applied %d", res, err, c.wantTotal-c.total)
			}
			if got, _, _ := st.Stock(ctx, it.ID); got != c.wantRedisStock {
				t.Fatalf("redis stock %d after replay, want %d", got, c.wantRedisStock)
			}
		})
	}
}

// TestCrashAfterRedisBeforeMark stops a change after its Redis step ran in
// every bucket but before MySQL finished it: the audit is exact there too,
// and the repair finishes it without changing Redis again.
func TestCrashAfterRedisBeforeMark(t *testing.T) {
	for _, c := range []struct {
		name    string
		delta   int64
		buckets int
	}{{"restock", 40, 1}, {"withdraw", -40, 1}, {"restock bucketed", 41, 3}, {"withdraw bucketed", -41, 3}} {
		t.Run(c.name, func(t *testing.T) {
			ch, st, it, auditOf := newItem(t, 60, c.buckets)
			ctx := context.Background()
			ch.AfterRecord = func(ctx context.Context, rec store.StockChange) error {
				left := -rec.Delta
				for b, share := range stockchange.Spread(rec.Delta, rec.Buckets) {
					d := share
					if rec.Delta < 0 {
						d = -left
					}
					if d == 0 {
						continue
					}
					u, _, err := stockchange.NewStore(st).ChangeBucketStock(ctx, rec.ItemID, b, rec.OperationID, d)
					if err != nil {
						return err
					}
					left += u
				}
				return errCrash
			}
			op := "op-" + testenv.Suffix()
			if _, err := ch.Change(ctx, it.ID, c.delta, op); !errors.Is(err, errCrash) {
				t.Fatalf("Change: %v", err)
			}
			mustOK(t, "crashed after Redis", auditOf())
			ch.AfterRecord = nil
			if n, err := ch.Repair(ctx, 100); err != nil || n != 1 {
				t.Fatalf("repair: %d %v", n, err)
			}
			rep := auditOf()
			mustOK(t, "repaired", rep)
			if rep.Total != 60+c.delta || rep.RedisStock != 60+c.delta {
				t.Fatalf("total %d redis %d, want %d", rep.Total, rep.RedisStock, 60+c.delta)
			}
		})
	}
}

// TestSameOperationConcurrently sends one operation from many goroutines at
// once, then again one after another: it is applied once, every call
// answers the same units, and exactly one call recorded it.
func TestSameOperationConcurrently(t *testing.T) {
	for _, delta := range []int64{250, -250} {
		t.Run(fmt.Sprintf("delta %+d", delta), func(t *testing.T) {
			ch, st, it, auditOf := newItem(t, 1000, 2)
			ctx := context.Background()
			op := "op-" + testenv.Suffix()
			var wg sync.WaitGroup
			var mu sync.Mutex
			fresh := 0
			errs := []error{}
			for range 32 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					res, err := ch.Change(ctx, it.ID, delta, op)
					mu.Lock()
					defer mu.Unlock()
					if err != nil {
						errs = append(errs, err)
						return
					}
					if res.Change.Applied != delta {
						errs = append(errs, fmt.Errorf("applied %d, want %d", res.Change.Applied, delta))
					}
					if !res.Replayed {
						fresh++
					}
				}()
			}
			wg.Wait()
			for range 3 {
				if res, err := ch.Change(ctx, it.ID, delta, op); err != nil || !res.Replayed || res.Change.Applied != delta {
					errs = append(errs, fmt.Errorf("sequential replay: %+v %v", res, err))
				}
			}
			if len(errs) > 0 || fresh != 1 {
				t.Fatalf("%d calls recorded the change (want 1); errors: %v", fresh, errs)
			}
			rep := auditOf()
			mustOK(t, "after", rep)
			if got, _, _ := st.Stock(ctx, it.ID); got != 1000+delta || rep.Total != 1000+delta {
				t.Fatalf("redis %d total %d, want %d", got, rep.Total, 1000+delta)
			}
		})
	}
}

// TestOperationIDReusedConflicts: the same id for another delta or item is
// refused and changes nothing.
func TestOperationIDReusedConflicts(t *testing.T) {
	db, _ := testenv.MySQL(t)
	st := stock.New(testenv.Redis(t))
	it, other := putItem(t, db, st, 100, 1), putItem(t, db, st, 100, 1)
	ch := stockchange.New(db, st, 2*time.Second, testenv.LogTail(t))
	ctx := context.Background()
	auditOf := func() audit.Report {
		rep, err := audit.Item(ctx, db, st, it.ID)
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	op := "op-" + testenv.Suffix()
	if _, err := ch.Change(ctx, it.ID, 5, op); err != nil {
		t.Fatal(err)
	}
	if _, err := ch.Change(ctx, it.ID, 6, op); !errors.Is(err, stockchange.ErrConflict) {
		t.Fatalf("other delta: %v, want ErrConflict", err)
	}
	if _, err := ch.Change(ctx, other.ID, 5, op); !errors.Is(err, stockchange.ErrConflict) {
		t.Fatalf("other item: %v, want ErrConflict", err)
	}
	if _, err := ch.Change(ctx, it.ID+7, 5, "op-"+testenv.Suffix()); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("unknown item: %v, want ErrNotFound", err)
	}
	rep := auditOf()
	mustOK(t, "after", rep)
	if got, _, _ := st.Stock(ctx, it.ID); got != 105 || rep.Total != 105 {
		t.Fatalf("redis %d total %d, want 105", got, rep.Total)
	}
}

// TestWarmRefusedWhilePending: a warm, or a PUT of a new stock, of an item
// whose stock change is PENDING is refused and changes nothing (a copy of
// MySQL would give a restock twice, or undo a withdraw's take); once the
// change is finished the warm goes through and the audit stays exact.
func TestWarmRefusedWhilePending(t *testing.T) {
	for _, delta := range []int64{+20, -20} {
		t.Run(fmt.Sprintf("delta %+d", delta), func(t *testing.T) {
			db, _ := testenv.MySQL(t)
			st := stock.New(testenv.Redis(t))
			it := putItem(t, db, st, 50, 1)
			ch := stockchange.New(db, st, 2*time.Second, testenv.LogTail(t))
			ctx := context.Background()
			ch.AfterRecord = func(ctx context.Context, rec store.StockChange) error {
				if rec.Delta < 0 { // the take ran, MySQL not yet
					if _, _, err := stockchange.NewStore(st).ChangeBucketStock(ctx, rec.ItemID, 0, rec.OperationID, rec.Delta); err != nil {
						return err
					}
				}
				return errCrash
			}
			if _, err := ch.Change(ctx, it.ID, delta, "op-"+testenv.Suffix()); !errors.Is(err, errCrash) {
				t.Fatal(err)
			}
			cat := catalog.New(db, st, testenv.NoLag)
			if _, err := cat.Warm(ctx, it.ID); !errors.Is(err, store.ErrStockChangesPending) || !errors.Is(err, catalog.ErrInFlight) {
				t.Fatalf("warm: %v, want ErrStockChangesPending", err)
			}
			put := it
			put.TotalStock = 10
			if _, err := cat.Put(ctx, put); !errors.Is(err, store.ErrStockChangesPending) {
				t.Fatalf("put of a new stock: %v, want ErrStockChangesPending", err)
			}
			rep, err := audit.Item(ctx, db, st, it.ID)
			if err != nil {
				t.Fatal(err)
			}
			mustOK(t, "refused", rep)
			ch.AfterRecord = nil
			if n, err := ch.Repair(ctx, 10); n != 1 || err != nil {
				t.Fatalf("repair: %d %v", n, err)
			}
			if _, err := cat.Warm(ctx, it.ID); err != nil {
				t.Fatalf("warm after the repair: %v", err)
			}
			rep, err = audit.Item(ctx, db, st, it.ID)
			if err != nil {
				t.Fatal(err)
			}
			mustOK(t, "warmed", rep)
			if rep.Total != 50+delta || rep.RedisStock != 50+delta {
				t.Fatalf("total %d redis %d, want %d", rep.Total, rep.RedisStock, 50+delta)
			}
		})
	}
}
