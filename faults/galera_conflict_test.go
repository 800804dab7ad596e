//go:build faults && galera

package faults

import (
	"context"
	"database/sql"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/flashsale-dev/flashsale/internal/testenv"
)

// TestGaleraHotRowConflicts measures why the Galera mode writes through one
// node: the same hot-row transaction (the stock CAS every consumer batch
// ends with) run for a few seconds by 6 writers, first all through the
// proxy (one node), then 2 on each node directly. On one node the writers
// queue on the row lock and nothing is refused; spread over the nodes,
// Galera certifies each commit against the other nodes' and aborts the
// losers (deadlock, 1213; wsrep_local_cert_failures and
// wsrep_local_bf_aborts count them).
func TestGaleraHotRowConflicts(t *testing.T) {
	g := newGalera(t)
	proxy, dsn := testenv.MySQL(t)
	g.waitSynced(dsn, 2*time.Minute)
	ctx := context.Background()
	if _, err := proxy.ExecContext(ctx, "CREATE TABLE hot (id INT NOT NULL PRIMARY KEY, stock BIGINT NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	if _, err := proxy.ExecContext(ctx, "INSERT INTO hot VALUES (1, 1000000000)"); err != nil {
		t.Fatal(err)
	}
	var nodes []*sql.DB
	for _, n := range g.names {
		nodes = append(nodes, g.nodeDB(dsn, n))
	}
	one := make([]*sql.DB, 6)
	for i := range one {
		one[i] = proxy
	}
	var spread []*sql.DB
	for range 2 {
		spread = append(spread, nodes...)
	}
	single := hotRun(ctx, t, nodes, one, 3*time.Second)
	multi := hotRun(ctx, t, nodes, spread, 3*time.Second)
	t.Logf("hot row, 6 writers for 3 s:\n"+
		"  one node (through the proxy): %d commits, %d refused as conflicts (1213), %d other errors; cert failures +%d, bf aborts +%d\n"+
		"  all nodes (2 writers each):   %d commits, %d refused as conflicts (1213), %d other errors; cert failures +%d, bf aborts +%d",
		single.commits, single.conflicts, single.other, single.certFailures, single.bfAborts,
		multi.commits, multi.conflicts, multi.other, multi.certFailures, multi.bfAborts)
	if single.conflicts != 0 || single.certFailures != 0 {
		t.Errorf("writes through one node were refused as conflicts: %+v", single)
	}
	if multi.conflicts == 0 && multi.certFailures == 0 {
		t.Errorf("writes spread over the nodes met no conflict on one hot row: %+v (the reason for a single writer would be gone)", multi)
	}
	if single.commits == 0 || multi.commits == 0 {
		t.Errorf("a run committed nothing: %+v %+v", single, multi)
	}
}

type hotResult struct {
	commits, conflicts, other int64
	certFailures, bfAborts    int64
}

// hotRun runs one writer per entry of writers for d, each committing the
// hot-row decrement in a transaction of its own again and again.
func hotRun(ctx context.Context, t *testing.T, nodes, writers []*sql.DB, d time.Duration) hotResult {
	t.Helper()
	cert0, bf0 := sumStatus(ctx, nodes, "wsrep_local_cert_failures"), sumStatus(ctx, nodes, "wsrep_local_bf_aborts")
	var mu sync.Mutex
	var r hotResult
	var wg sync.WaitGroup
	end := time.Now().Add(d)
	for _, db := range writers {
		wg.Go(func() {
			for time.Now().Before(end) {
				err := hotTx(ctx, db)
				var me *mysql.MySQLError
				mu.Lock()
				switch {
				case err == nil:
					r.commits++
				case errors.As(err, &me) && me.Number == 1213:
					r.conflicts++
				default:
					r.other++
					if r.other <= 3 {
						t.Logf("hot row write: %v", err)
					}
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	r.certFailures = sumStatus(ctx, nodes, "wsrep_local_cert_failures") - cert0
	r.bfAborts = sumStatus(ctx, nodes, "wsrep_local_bf_aborts") - bf0
	return r
}

func hotTx(ctx context.Context, db *sql.DB) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, "UPDATE hot SET stock = stock - 1 WHERE id = 1 AND stock >= 1"); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}
