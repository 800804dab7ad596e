package reap_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/catalog"
	"github.com/flashsale-dev/flashsale/pkg/reap"
	"github.com/flashsale-dev/flashsale/pkg/stock"
	"github.com/flashsale-dev/flashsale/pkg/store"
)

// MySQL restored or reset without Redis: the new database's AUTO_INCREMENT
// order ids start again at 1, while Redis still holds the restore guards of
// the old database's cancelled orders. A restore of a new order must be
// applied, whatever ids the old database used: guards are named by request
// id, which no two databases share.
func TestRestoreGuardSurvivesDatabaseReset(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t, 2*time.Minute)
	old := newEnv(t)
	it := old.newItem(10, []order{{UserID: 1, Qty: 1, ExpiresIn: -time.Second}})
	r1, _ := old.newReaper(reap.Config{})
	if !r1.RunPass(ctx) {
		t.Fatal("pass on the old database failed")
	}
	oldID := old.count("SELECT MIN(order_id) FROM stock_restores WHERE redis_applied_at IS NOT NULL")
	if got := old.redisStock(it.ID); got != it.Total {
		t.Fatalf("Redis stock after the old restore = %d, want %d", got, it.Total)
	}

	// A fresh database, the same Redis: the admin re-creates the item and
	// warms it; a buyer orders one unit and lets it expire.
	fresh := newEnv(t)
	if _, err := fresh.db.ExecContext(ctx,
		"INSERT INTO items (id, name, price_cents, total_stock, stock, per_user_limit, starts_at, ends_at) VALUES (?, 'again', 100, 10, 9, 5, NOW(3) - INTERVAL 1 HOUR, NOW(3) + INTERVAL 1 DAY)",
		it.ID); err != nil {
		t.Fatal(err)
	}
	rid := fmt.Sprintf("r-%d-after-reset", it.ID)
	res, err := fresh.db.ExecContext(ctx,
		"INSERT INTO orders (request_id, user_id, item_id, qty, price_cents, status, expires_at) VALUES (?, 2, ?, 1, 100, 'UNPAID', NOW(3) - INTERVAL 1 SECOND)",
		rid, it.ID)
	if err != nil {
		t.Fatal(err)
	}
	newID, _ := res.LastInsertId()
	if newID != oldID {
		t.Fatalf("fixture: the new order got id %d, not the old guarded id %d", newID, oldID)
	}
	if err := store.InsertDecisions(ctx, fresh.db, []store.Decision{{RequestID: rid, ItemID: it.ID, UserID: 2, Qty: 1, Outcome: store.Ordered}}); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if err := fresh.st.Warm(ctx, stock.Snapshot{ItemID: it.ID, Stock: 9, StartsAt: now.Add(-time.Hour),
		EndsAt: now.Add(24 * time.Hour), PerUserLimit: 5}); err != nil {
		t.Fatal(err)
	}

	r2, reg := fresh.newReaper(reap.Config{})
	if !r2.RunPass(ctx) {
		t.Fatal("pass on the fresh database failed")
	}
	if got := fresh.redisStock(it.ID); got != 10 {
		t.Errorf("Redis stock after the new order's restore = %d, want 10: an old guard swallowed it", got)
	}
	if got := metric(t, reg, "flashsale_reaper_restores_total", "store", "redis"); got != 1 {
		t.Errorf("redis restores = %v, want 1", got)
	}
}

// A restore applied in Redis whose record stays unmarked (the mark keeps
// failing, or the reaper is down for days) must stay guarded for as long as
// the record is unmarked: the guard has no TTL until the mark, and only then
// a short one. Otherwise the guard expires first and the next pass applies
// the restore a second time.
func TestRestoreGuardLivesWhileRecordUnmarked(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t, 2*time.Minute)
	e := newEnv(t)
	it := e.newItem(10, []order{{UserID: 1, Qty: 2, ExpiresIn: -time.Second}})
	// The mark is refused: Redis gets the qty back, MySQL keeps the record
	// pending, as after a crash between the two.
	if _, err := e.db.ExecContext(ctx, "CREATE TRIGGER refuse_mark BEFORE UPDATE ON stock_restores FOR EACH ROW"+
		" SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'test: mark refused'"); err != nil {
		t.Fatal(err)
	}
	r, _ := e.newReaper(reap.Config{})
	if r.RunPass(ctx) {
		t.Fatal("pass succeeded although its mark was refused")
	}
	if n := e.count("SELECT COUNT(*) FROM stock_restores WHERE redis_applied_at IS NULL"); n != 1 {
		t.Fatalf("unmarked restores = %d, want 1", n)
	}
	guards := guardKeys(t, e, it.ID)
	if len(guards) != 1 {
		t.Fatalf("restore guards = %q, want one", guards)
	}
	if ttl := e.rdb.PTTL(ctx, guards[0]).Val(); ttl != -1 {
		t.Errorf("guard of an unmarked restore expires in %v: it must live while its record is unmarked", ttl)
	}
	// Repeat passes re-apply the pending record: the guard makes them no-ops.
	for range 2 {
		r.RunPass(ctx)
	}
	if got := e.redisStock(it.ID); got != it.Total {
		t.Errorf("Redis stock with the mark refused = %d, want %d", got, it.Total)
	}

	if _, err := e.db.ExecContext(ctx, "DROP TRIGGER refuse_mark"); err != nil {
		t.Fatal(err)
	}
	if !r.RunPass(ctx) {
		t.Fatal("pass after the mark came back failed")
	}
	if n := e.count("SELECT COUNT(*) FROM stock_restores WHERE redis_applied_at IS NULL"); n != 0 {
		t.Fatalf("unmarked restores after repair = %d", n)
	}
	ttl := e.rdb.PTTL(ctx, guards[0]).Val()
	if ttl <= 0 || ttl > stock.MarkedGuardTTL {
		t.Errorf("guard of a marked restore expires in %v, want within (0, %v]", ttl, stock.MarkedGuardTTL)
	}
	if got := e.redisStock(it.ID); got != it.Total {
		t.Errorf("Redis stock after the mark = %d, want %d", got, it.Total)
	}
	e.auditOK(it.ID)
}

// guardKeys returns the item's restore guard keys.
func guardKeys(t *testing.T, e *env, itemID int64) []string {
	t.Helper()
	keys, err := e.rdb.Keys(context.Background(), fmt.Sprintf("fs:{item:%d}:restored:*", itemID)).Result()
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

// A warm that copies MySQL stock already counting a restore Redis has not
// seen guards that restore by its request id, with no TTL while its record is
// unmarked: the reaper's later pass finds the guard (no second give-back),
// marks the record, and only then the guard gets its short TTL.
func TestWarmGuardsUnmarkedRestores(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t, 2*time.Minute)
	e := newEnv(t)
	it := e.newItem(10, []order{{UserID: 1, Qty: 3, ExpiresIn: -time.Second}})
	r, _ := e.newReaper(reap.Config{})
	r.AfterCommit = func(context.Context, []store.Order) error { return errors.New("test: crash after commit") }
	if r.RunPass(ctx) {
		t.Fatal("pass succeeded although it crashed after its commit")
	}
	r.AfterCommit = nil
	// Redis loses the item; the admin warms it from MySQL, whose stock
	// already counts the cancelled order.
	if err := e.rdb.Del(ctx, stock.KeysOf(it.ID).Stock).Err(); err != nil {
		t.Fatal(err)
	}
	cat := catalog.New(e.db, e.st, testenv.NoLag)
	if _, err := cat.Warm(ctx, it.ID); err != nil {
		t.Fatal(err)
	}
	guards := guardKeys(t, e, it.ID)
	if want := stock.KeysOf(it.ID).RestoreGuard(it.Requests[0]); len(guards) != 1 || guards[0] != want {
		t.Fatalf("guards after warm = %q, want [%s]", guards, want)
	}
	if ttl := e.rdb.PTTL(ctx, guards[0]).Val(); ttl != -1 {
		t.Errorf("warm's guard of an unmarked restore expires in %v: it must live while its record is unmarked", ttl)
	}
	if !r.RunPass(ctx) {
		t.Fatal("pass after warm failed")
	}
	if got := e.redisStock(it.ID); got != it.Total {
		t.Errorf("Redis stock after warm and pass = %d, want %d", got, it.Total)
	}
	if n := e.count("SELECT COUNT(*) FROM stock_restores WHERE redis_applied_at IS NULL"); n != 0 {
		t.Errorf("unmarked restores = %d", n)
	}
	if ttl := e.rdb.PTTL(ctx, guards[0]).Val(); ttl <= 0 || ttl > stock.MarkedGuardTTL {
		t.Errorf("guard of a marked restore expires in %v, want within (0, %v]", ttl, stock.MarkedGuardTTL)
	}
}
