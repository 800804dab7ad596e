//go:build cluster

package reap_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/orderstatus"
	"github.com/flashsale-dev/flashsale/pkg/reap"
	"github.com/flashsale-dev/flashsale/pkg/stock"
)

// ReservedItems on a Redis Cluster asks every item's primary: an item
// holding a reservation is found whichever primary serves its slot (the
// registry of warmed items lives on one shard, the reservations on theirs),
// and an item without one is not, however many keys (statuses) it has. The cluster is shared, so other items may be reported too.
func TestClusterReservedItemsScansEveryPrimary(t *testing.T) {
	cc := testenv.RedisCluster(t)
	s := stock.New(cc)
	ctx := context.Background()
	items := testenv.ItemsOnEveryPrimary(t, cc)
	for _, id := range items {
		testenv.WarmAt(t, s, id, 10)
		admitOne(t, s, id, 1)
	}
	idle := testenv.ItemID()
	testenv.WarmAt(t, s, idle, 10)
	var sts []orderstatus.StatusEntry
	for u := range 3000 {
		sts = append(sts, orderstatus.StatusEntry{ItemID: idle, RequestID: fmt.Sprintf("r-%d", u), Rank: orderstatus.RankFinal, JSON: []byte(`{}`)})
	}
	if err := orderstatus.NewStore(s).PutStatuses(ctx, sts); err != nil {
		t.Fatal(err)
	}

	got, err := reap.ReservedItems(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	for primary, id := range items {
		if !slices.Contains(got, id) {
			t.Errorf("item %d (slot on %s) holds a reservation, ReservedItems missed it", id, primary)
		}
	}
	if slices.Contains(got, idle) {
		t.Errorf("idle item %d (on %s) has no reservation, ReservedItems reported it", idle, testenv.PrimaryOf(t, cc, idle))
	}
}
