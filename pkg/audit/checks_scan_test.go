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
