package reap_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/orderstatus"
	"github.com/flashsale-dev/flashsale/pkg/reap"
	"github.com/flashsale-dev/flashsale/pkg/reqid"
	"github.com/flashsale-dev/flashsale/pkg/stock"
)

// ReservedItems finds every item holding a reservation, and only those,
// across SCAN pages: an item without one is not reported, however many
// keys (stock, statuses) it has. A Redis of its own, so the answer is exact.
func TestReservedItems(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := stock.New(testenv.StartPrivateRedis(t).Client(5 * time.Second))
	a, b, idle := warmSelling(t, s, 10), warmSelling(t, s, 10), warmSelling(t, s, 10)
	admitOne(t, s, a, 1)
	admitOne(t, s, b, 2)
	statuses := orderstatus.NewStore(s)
	for u := range 3000 { // more keys than one SCAN page
		if err := statuses.PutStatus(ctx, idle, fmt.Sprintf("r-%d", u), orderstatus.RankFinal, []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
	}
	got, err := reap.ReservedItems(ctx, s)
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

// TestReservedItemsDoesNotWalkTheKeyspace: the reaper asks for reserved
// items every pass; walking every key with SCAN cost Redis about 1.6 ms per
// 1,000 keys (each call blocking admissions) on a keyspace of millions of
// status keys and restore guards. It reads the registry of warmed items.
func TestReservedItemsDoesNotWalkTheKeyspace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := testenv.StartPrivateRedis(t).Client(5 * time.Second)
	s := stock.New(rdb)
	a := warmSelling(t, s, 10)
	admitOne(t, s, a, 1)
	if err := rdb.ConfigResetStat(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	got, err := reap.ReservedItems(ctx, s)
	if err != nil || !slices.Equal(got, []int64{a}) {
		t.Fatalf("ReservedItems = %v, %v; want [%d]", got, err, a)
	}
	stats, err := rdb.Info(ctx, "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(stats, "cmdstat_scan:") {
		t.Fatalf("ReservedItems walked the keyspace with SCAN:\n%s", stats)
	}
}

// warmSelling warms a fresh item of units on sale now (one per buyer).
func warmSelling(t *testing.T, s *stock.Store, units int64) int64 {
	t.Helper()
	id := testenv.ItemID()
	now := time.Now()
	err := s.Warm(context.Background(), stock.Snapshot{ItemID: id, Stock: units, StartsAt: now.Add(-time.Minute),
		EndsAt: now.Add(time.Hour), PerUserLimit: 1})
	if err != nil {
		t.Fatalf("warm: %v", err)
	}
	return id
}

// admitOne admits user for one unit of item: a reservation in Redis.
func admitOne(t *testing.T, s *stock.Store, item, user int64) {
	t.Helper()
	r, err := s.Admit(context.Background(), stock.AdmitRequest{ItemID: item, UserID: user, Qty: 1,
		RequestID: reqid.New(item, time.Now()), Now: time.Now()})
	if err != nil || r.Code != stock.Admitted {
		t.Fatalf("admit user %d of item %d: %+v %v", user, item, r, err)
	}
}
