package catalog_test

import (
	"testing"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/catalog"
	"github.com/flashsale-dev/flashsale/pkg/stock"
	"github.com/flashsale-dev/flashsale/pkg/store"
)

// TestPutLowersStockWithoutOrders: a new total below the current stock,
// of an item without orders, unbucketed and bucketed. The contract fuzzer
// found the UPDATE setting total_stock before stock meeting
// CHECK (stock <= total_stock): 503 for a valid PUT.
func TestPutLowersStockWithoutOrders(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	db, _ := testenv.MySQL(t)
	st := stock.New(testenv.Redis(t))
	cat := catalog.New(db, st, testenv.NoLag)
	for _, buckets := range []int{1, 4} {
		id := testenv.ItemID()
		it := saleItem(id, 50)
		it.Buckets = buckets
		if _, err := cat.Put(ctx, it); err != nil {
			t.Fatal(err)
		}
		it.TotalStock = 3
		if _, err := cat.Put(ctx, it); err != nil {
			t.Fatalf("buckets %d: lower the stock 50 -> 3: %v", buckets, err)
		}
		got, err := store.GetItem(ctx, db, id)
		if err != nil || got.Stock != 3 || got.TotalStock != 3 || got.Buckets != buckets {
			t.Fatalf("buckets %d: item %+v, %v; want stock and total 3", buckets, got, err)
		}
		if left, _, err := st.Stock(ctx, id); err != nil || left != 3 {
			t.Fatalf("buckets %d: Redis stock %d, %v; want 3", buckets, left, err)
		}
	}
}
