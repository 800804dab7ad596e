package audit

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/flashsale-dev/flashsale/internal/testenv"
)

// TestChecksReadOnlyTheirItem: the audit's checks of one item read that
// item's rows, not the history of every sale. The live auditor runs them
// for every open item every interval, and one of them (a restore whose
// order is not cancelled) scanned all of stock_restores, which grows by
// one row per cancelled order ever: on the development stack, 722,310
// rows per check, 8,448 rows read by MySQL per order of a bench sale.
// Here another item's 3,000 restores sit beside an item with none, and
// the checks may read at most a few rows: counted by MySQL's own handler
// counters on one connection, not timed.
func TestChecksReadOnlyTheirItem(t *testing.T) {
	db, _ := testenv.MySQL(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	other, item := testenv.ItemID(), testenv.ItemID()
	// The other item's sale: 3,000 orders, cancelled and restored.
	var orders, restores []string
	for i := range 3000 {
		orders = append(orders, fmt.Sprintf("(%d, 'r-%d-%d', %d, %d, 1, 100, 'CANCELLED', NOW(3), NOW(3))", i+1, other, i, i+1, other))
		restores = append(restores, fmt.Sprintf("(%d, %d, 1, NOW(3))", i+1, other))
	}
	for _, q := range []string{
		"INSERT INTO orders (id, request_id, user_id, item_id, qty, price_cents, status, expires_at, cancelled_at) VALUES " + strings.Join(orders, ","),
		"INSERT INTO stock_restores (order_id, item_id, qty, redis_applied_at) VALUES " + strings.Join(restores, ","),
		"ANALYZE TABLE orders, stock_restores",
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// SHOW STATUS reads rows itself: what two reads in a row count is
	// taken off.
	s0 := handlerReads(t, ctx, conn)
	s1 := handlerReads(t, ctx, conn)
	var n numbers
	var rep Report
	if err := readChecks(ctx, conn, item, &n, &rep); err != nil {
		t.Fatal(err)
	}
	s2 := handlerReads(t, ctx, conn)
	if read := (s2 - s1) - (s1 - s0); read > 100 {
		t.Fatalf("the checks of an item with no rows read %d rows (another item has 3,000 restores)", read)
	}
}

// handlerReads is the session's rows read through the handler interface:
// index and table reads of every kind.
func handlerReads(t *testing.T, ctx context.Context, conn *sql.Conn) int64 {
	t.Helper()
	var sum int64
	rs, err := conn.QueryContext(ctx, "SHOW SESSION STATUS LIKE 'Handler_read%'")
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	for rs.Next() {
		var name string
		var v int64
		if err := rs.Scan(&name, &v); err != nil {
			t.Fatal(err)
		}
		sum += v
	}
	if err := rs.Err(); err != nil {
		t.Fatal(err)
	}
	return sum
}

// TestChecksCountEachViolation seeds an item's rows with one of each thing
// the counting checks look for and checks each count: an ORDERED outcome
// without its order, an order without an outcome, an order whose outcome
// is a rejection, an order whose ORDERED outcome names another item, and
// one outcome of each rejecting kind. The I4 counts come from one join
// (readChecks says why), so each kind must still land in its own count.
func TestChecksCountEachViolation(t *testing.T) {
	db, _ := testenv.MySQL(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	item, other := testenv.ItemID(), testenv.ItemID()
	rid := func(s string) string { return fmt.Sprintf("r-%d-%s", item, s) }
	type row struct {
		rid     string
		order   bool   // the item has an order of this request
		outcome string // its outcome, "" for none
		of      int64  // the outcome's item
	}
	rows := []row{
		{rid("ok1"), true, "ORDERED", item},
		{rid("ok2"), true, "ORDERED", item},
		{rid("ok3"), true, "ORDERED", item},
		{rid("lost-order"), false, "ORDERED", item},     // I4: ORDERED without an order
		{rid("no-outcome"), true, "", 0},                // I4: an order without an outcome
		{rid("rejected-order"), true, "REJECTED", item}, // I4: an order whose outcome is not ORDERED
		{rid("other-item"), true, "ORDERED", other},     // I4: its ORDERED outcome is another item's
		{rid("aborted"), false, "ABORTED", item},
		{rid("voided"), false, "VOIDED", item},
	}
	for i, r := range rows {
		if r.order {
			if _, err := db.ExecContext(ctx, "INSERT INTO orders (request_id, user_id, item_id, qty, price_cents, status, expires_at) VALUES (?, ?, ?, 1, 100, 'UNPAID', NOW(3))",
				r.rid, 900_000+i, item); err != nil {
				t.Fatal(err)
			}
		}
		if r.outcome != "" {
			if _, err := db.ExecContext(ctx, "INSERT INTO request_outcomes (request_id, item_id, user_id, qty, outcome) VALUES (?, ?, ?, 1, ?)",
				r.rid, r.of, 900_000+i, r.outcome); err != nil {
				t.Fatal(err)
			}
		}
	}
	var n numbers
	var rep Report
	if err := readChecks(ctx, db, item, &n, &rep); err != nil {
		t.Fatal(err)
	}
	got := [4]int64{n.orderedNoOrder, n.orderNoOutcome, rep.Rejected, n.dupBuyers}
	if want := [4]int64{1, 3, 3, 0}; got != want {
		t.Fatalf("ORDERED without order, orders without ORDERED outcome, rejections, buyers with two: %v, want %v", got, want)
	}
	// The rejections are counted by name: the outcome column must have no
	// other kind than ORDERED and those three.
	var kinds string
	if err := db.QueryRowContext(ctx, `SELECT COLUMN_TYPE FROM information_schema.COLUMNS
WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'request_outcomes' AND COLUMN_NAME = 'outcome'`).Scan(&kinds); err != nil {
		t.Fatal(err)
	}
	if kinds != "enum('ORDERED','REJECTED','ABORTED','VOIDED')" {
		t.Fatalf("request_outcomes.outcome is %s: count its new kinds in readChecks' rejections", kinds)
	}
	// I2 holds by orders_user_item: the check must find it.
	if keyed, err := oneOrderPerBuyerKey(ctx, db); err != nil || !keyed {
		t.Fatalf("oneOrderPerBuyerKey: %v %v, want the schema's unique key on (user_id, item_id) found", keyed, err)
	}
}
