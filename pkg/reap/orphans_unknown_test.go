package reap_test

import (
	"testing"
	"time"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/orderstatus"
	"github.com/flashsale-dev/flashsale/pkg/reap"
	"github.com/flashsale-dev/flashsale/pkg/stock"
	"github.com/flashsale-dev/flashsale/pkg/store"
)

// A reservation of an item MySQL does not have (Redis was warmed, the
// item's commit failed) is found by scanning Redis, not by walking MySQL's
// items, and voided through the arbiter once past the grace: the buyer's
// poll ends and the mark comes back. A younger one is left alone until it,
// too, is past the grace.
func TestOrphanOfUnknownItemVoided(t *testing.T) {
	t.Parallel()
	// A Redis of its own: the sweep scans the whole keyspace, and other
	// tests' items are unknown to this test's database.
	db, dsn := testenv.MySQL(t)
	rdb := testenv.StartPrivateRedis(t).Client(5 * time.Second)
	e := &env{t: t, db: db, dsn: dsn, rdb: rdb, st: stock.New(rdb)}
	ctx := testCtx(t, time.Minute)
	e.newItem(10, nil) // MySQL knows some other item
	ghost := testenv.ItemID()
	now := time.Now()
	if err := e.st.Warm(ctx, stock.Snapshot{ItemID: ghost, Stock: 10, StartsAt: now.Add(-time.Hour), EndsAt: now.Add(time.Hour), PerUserLimit: 5}); err != nil {
		t.Fatal(err)
	}
	const grace = 2 * time.Second
	r, reg := e.newReaper(reap.Config{OrphanGrace: grace, SweepUnknownItems: true})
	old := e.admit(ctx, ghost, 1, 3, time.Now().Add(-grace-time.Second))
	fresh := e.admit(ctx, ghost, 2, 1, time.Now())

	if !r.RunPass(ctx) {
		t.Fatal("pass failed")
	}
	d, err := store.GetDecision(ctx, e.db, old)
	if err != nil || d.Outcome != store.Voided || d.Reason != store.ReasonExpiredReservation || d.ItemID != ghost {
		t.Fatalf("decision of the unknown item's orphan = %+v, %v; want VOIDED expired_reservation", d, err)
	}
	if _, ok, _ := e.st.GetReservation(ctx, ghost, old); ok {
		t.Error("orphan's reservation still pending")
	}
	if e.isBuyer(ctx, ghost, 1) {
		t.Error("orphan's buyer mark kept")
	}
	if v, ok, err := orderstatus.Get(ctx, e.st, ghost, old); err != nil || !ok || v.Status != orderstatus.Rejected || v.Reason != store.ReasonExpiredReservation {
		t.Errorf("cached status = %+v %v %v; want REJECTED expired_reservation", v, ok, err)
	}
	if _, err := store.GetDecision(ctx, e.db, fresh); err == nil {
		t.Error("a reservation younger than the grace was decided")
	}
	if got := metric(t, reg, "flashsale_reaper_orphans_voided_total"); got != 1 {
		t.Errorf("orphans voided = %v, want 1", got)
	}
	runUntil(t, 15*time.Second, func() bool {
		d, err := store.GetDecision(ctx, e.db, fresh)
		return err == nil && d.Outcome == store.Voided
	}, r)
	st, err := e.st.ReadState(ctx, ghost)
	if err != nil || st.Pending != 0 {
		t.Errorf("Redis state of the unknown item %+v, %v: want no reservation left", st, err)
	}
}
