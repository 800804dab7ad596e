package stock_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/stock"
)

// ReservedItems finds every item holding a reservation, and only those,
// across SCAN pages: an item without one is not reported, however many
// keys (stock, statuses) it has. A Redis of its own, so the answer is exact.
func TestReservedItems(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := stock.New(testenv.StartPrivateRedis(t).Client(5 * time.Second))
	a, b, idle := warmItem(t, s, 10, 1), warmItem(t, s, 10, 1), warmItem(t, s, 10, 1)
	admit(t, s, a, 1, 1, "")
	admit(t, s, b, 2, 1, "")
	for u := range 3000 { // more keys than one SCAN page
		if err := s.PutStatus(ctx, idle, fmt.Sprintf("r-%d", u), stock.RankFinal, []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.ReservedItems(ctx)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	want := []int64{a, b}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("ReservedItems = %v, want %v (idle item %d)", got, want, idle)
	}
}
