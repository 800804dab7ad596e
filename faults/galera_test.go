//go:build faults && galera

package faults

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/config"
	"github.com/flashsale-dev/flashsale/pkg/store"
)

// galera drives the local stack's Galera mode (stack.sh CMD --galera NODE)
// for the MySQL failover tests: three MariaDB Galera nodes behind one
// HAProxy that sends every connection to one of them, the writer. The
// pipeline's FLASHSALE_MYSQL_DSN is the proxy's; FLASHSALE_GALERA_NODES
// names the nodes themselves (stack.sh env --galera prints both). Cleanup
// starts whatever a test killed (up --galera is idempotent).
type galera struct {
	stack
	t     *testing.T
	names []string          // node-1..3
	addrs map[string]string // node name -> host:port
}

func newGalera(t *testing.T) *galera {
	t.Helper()
	env := os.Getenv("FLASHSALE_GALERA_NODES")
	if env == "" {
		t.Fatalf("FLASHSALE_GALERA_NODES is not set: run deploy/local/stack.sh up --galera, then eval \"$(deploy/local/stack.sh env --galera)\"")
	}
	g := &galera{stack: newStack(t), t: t, addrs: map[string]string{}}
	for i, a := range strings.Split(env, ",") {
		name := fmt.Sprintf("node-%d", i+1)
		g.names = append(g.names, name)
		g.addrs[name] = strings.TrimSpace(a)
	}
	t.Cleanup(func() { g.quiet("up", "--galera") })
	return g
}

// nodeDB opens a small pool on one node (not the proxy) for dsn's database.
func (g *galera) nodeDB(dsn, name string) *sql.DB {
	g.t.Helper()
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		g.t.Fatal(err)
	}
	cfg.Addr, cfg.Timeout, cfg.ReadTimeout = g.addrs[name], 2*time.Second, 10*time.Second
	cfg.InterpolateParams, cfg.ParseTime = true, true
	db, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		g.t.Fatal(err)
	}
	db.SetMaxOpenConns(16)
	g.t.Cleanup(func() { db.Close() })
	return db
}

// statusVar reads one global status variable of a node ("" when it does not answer).
func statusVar(ctx context.Context, db *sql.DB, name string) string {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	var k, v string
	// A literal, not a placeholder: MariaDB cannot prepare SHOW STATUS.
	if err := db.QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE '"+name+"'").Scan(&k, &v); err != nil {
		return ""
	}
	return v
}

// waitSynced waits until every node is Synced in a cluster of all of them.
func (g *galera) waitSynced(dsn string, timeout time.Duration) {
	g.t.Helper()
	dbs := map[string]*sql.DB{}
	for _, n := range g.names {
		dbs[n] = g.nodeDB(dsn, n)
	}
	var last string
	testenv.Eventually(g.t, timeout, 200*time.Millisecond, func() bool {
		var parts []string
		ok := true
		for _, n := range g.names {
			st, size := statusVar(context.Background(), dbs[n], "wsrep_local_state"), statusVar(context.Background(), dbs[n], "wsrep_cluster_size")
			parts = append(parts, fmt.Sprintf("%s state %q size %q", n, st, size))
			ok = ok && st == "4" && size == fmt.Sprint(len(g.names))
		}
		last = strings.Join(parts, ", ")
		return ok
	}, "the Galera nodes are not all Synced (last: %v); stack.sh status --galera", lazy(func() string { return last }))
}

// writer asks the proxy, on a new connection, which node it sends
// connections to now (a pooled one may predate a failover).
func writer(ctx context.Context, dsn string) (string, error) {
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		return "", err
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var n string
	err = db.QueryRowContext(ctx, "SELECT @@wsrep_node_name").Scan(&n)
	return n, err
}

// sumStatus sums a numeric status variable over the nodes that answer.
func sumStatus(ctx context.Context, dbs []*sql.DB, name string) int64 {
	var sum int64
	for _, db := range dbs {
		var n int64
		fmt.Sscan(statusVar(ctx, db, name), &n)
		sum += n
	}
	return sum
}

// probe is a client of the proxy that writes one row every interval, as a
// deployable would, and records what each write answered: how long writes
// were refused after a fault is read from it.
type probe struct {
	mu    sync.Mutex
	tries []probeTry
}

type probeTry struct {
	at, done time.Time
	err      string // "" when the write committed
}

// startProbe creates the probe's table in the pipeline's database and
// writes through a pool built as the deployables build theirs
// (config.Common.DSN: their timeouts, interpolateParams), until ctx ends.
func startProbe(ctx context.Context, t *testing.T, dsn string, storeTimeout time.Duration) *probe {
	t.Helper()
	c := config.Common{MySQLDSN: dsn, StoreTimeout: storeTimeout}
	db, err := store.Pool(c.DSN(), 2)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, "CREATE TABLE galera_probe (id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY, at DATETIME(3) NOT NULL)"); err != nil {
		t.Fatalf("probe table: %v", err)
	}
	pr := &probe{}
	done := make(chan struct{})
	t.Cleanup(func() { <-done; db.Close() })
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			at := time.Now()
			wctx, cancel := context.WithTimeout(ctx, storeTimeout)
			_, err := db.ExecContext(wctx, "INSERT INTO galera_probe (at) VALUES (NOW(3))")
			cancel()
			if ctx.Err() != nil {
				return
			}
			pr.mu.Lock()
			pr.tries = append(pr.tries, probeTry{at: at, done: time.Now(), err: errClass(err)})
			pr.mu.Unlock()
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	return pr
}

// errClass names an error briefly: the server's error number, a timeout,
// or the driver's words.
func errClass(err error) string {
	var me *mysql.MySQLError
	switch {
	case err == nil:
		return ""
	case errors.As(err, &me):
		return fmt.Sprintf("mysql %d", me.Number)
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	}
	s := err.Error()
	if i := strings.LastIndex(s, ": "); i >= 0 {
		s = s[i+2:]
	}
	return s
}

// outage is what the probe saw after at: the time to its first committed
// write, the longest run of refused writes and the errors meanwhile.
type outage struct {
	firstOK time.Duration
	ok      bool
	errs    map[string]int
}

func (pr *probe) since(at time.Time) outage {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	o := outage{errs: map[string]int{}}
	for _, tr := range pr.tries {
		if tr.at.Before(at) {
			continue
		}
		if tr.err == "" {
			o.firstOK, o.ok = tr.done.Sub(at), true
			break
		}
		o.errs[tr.err]++
	}
	return o
}

// errorsSince counts the probe's refused writes sent after at, by error.
func (pr *probe) errorsSince(at time.Time) map[string]int {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	m := map[string]int{}
	for _, tr := range pr.tries {
		if !tr.at.Before(at) && tr.err != "" {
			m[tr.err]++
		}
	}
	return m
}

func countsString(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s: %d", k, m[k]))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}
