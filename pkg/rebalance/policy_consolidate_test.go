package rebalance

import "testing"

// TestConsolidateServesAsManyAsTheStockCovers: in a burst on an item of many
// buckets, every bucket holding stock soon wants too (its buyer asked more
// than it holds), so the ordinary pass has no donor and consolidate gathers
// for one bucket per pass. With a buyer in each of 64 buckets and passes
// slowed by a loaded host, buyers waited out the 1 s bucket wait: 155 and
// 245 of the answers of a 300-buyer burst on 200 units in 64 buckets were
// 503 stock_moving (qty 1 included), where an unloaded run had none. Eight
// units over [2 2 2 2 0 0 0 0], needs [3 3 3 3 1 1 1 1]: one pass can let
// four wanting buckets sell (a unit from each holder to each empty
// bucket, every donor giving once), not one.
func TestConsolidateServesAsManyAsTheStockCovers(t *testing.T) {
	stocks := []int64{2, 2, 2, 2, 0, 0, 0, 0}
	want := []bool{true, true, true, true, true, true, true, true}
	need := []int64{3, 3, 3, 3, 1, 1, 1, 1}
	moves := Plan(stocks, want, need, nil)
	got := after(stocks, moves)
	served := 0
	for b := range got {
		if got[b] < 0 {
			t.Fatalf("moves %v leave bucket %d at %d", moves, b, got[b])
		}
		if want[b] && got[b] >= need[b] {
			served++
		}
	}
	if served < 4 {
		t.Fatalf("Plan(%v, wants %v, needs %v) = %v leaves %v: %d wanting buckets can sell, want 4", stocks, want, need, moves, got, served)
	}
}
