package catalog_test

import (
	"context"
	"database/sql"
	"errors"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/catalog"
	"github.com/flashsale-dev/flashsale/pkg/stock"
	"github.com/flashsale-dev/flashsale/pkg/store"
)

// commitCutter is a MySQL dialer whose connections, once armed, close
// instead of sending COMMIT: the client is gone at the commit, so the
// server rolls the transaction back and the client gets an error.
type commitCutter struct {
	armed atomic.Bool
	cuts  atomic.Int32
}

type cutConn struct {
	net.Conn
	c *commitCutter
}

// Write drops a COM_QUERY "COMMIT" packet (4-byte header, command 0x03)
// and closes the connection.
func (k *cutConn) Write(b []byte) (int, error) {
	if k.c.armed.Load() && len(b) >= 5 && b[4] == 0x03 && string(b[5:]) == "COMMIT" {
		k.c.cuts.Add(1)
		_ = k.Conn.Close()
		return 0, net.ErrClosed
	}
	return k.Conn.Write(b)
}

// commitCutDB opens a pool on the test's database through a commitCutter.
func commitCutDB(t *testing.T, dsn string) (*sql.DB, *commitCutter) {
	t.Helper()
	cc := &commitCutter{}
	db := testenv.MySQLVia(t, dsn, func(ctx context.Context, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
		if err != nil {
			return nil, err
		}
		return &cutConn{Conn: c, c: cc}, nil
	})
	return db, cc
}

// sqlWatch is a MySQL connection that calls onCommit once a COMMIT packet
// has been written (the transaction is committed, or about to be, so
// whatever the hook breaks fails only what comes after it), and onRollback
// once a ROLLBACK packet has. Either may be nil.
type sqlWatch struct {
	net.Conn
	onCommit, onRollback func()
}

func (c *sqlWatch) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	if err == nil && len(b) >= 5 && b[4] == 0x03 { // COM_QUERY
		switch string(b[5:]) {
		case "COMMIT":
			if c.onCommit != nil {
				c.onCommit()
			}
		case "ROLLBACK":
			if c.onRollback != nil {
				c.onRollback()
			}
		}
	}
	return n, err
}

// cuttableRedis is a client of the stack's Redis whose connections fd can
// cut: no retries and 300 ms timeouts, so a cut fails the next call fast.
func cuttableRedis(t *testing.T) (*redis.Client, *testenv.FaultDialer) {
	t.Helper()
	fd := testenv.NewFaultDialer()
	common := testenv.Common(t)
	addr := common.RedisAddrs()[0]
	rdb := redis.NewClient(&redis.Options{Addr: addr, Dialer: fd.DialContext, MaxRetries: -1,
		DialTimeout: 300 * time.Millisecond, ReadTimeout: 300 * time.Millisecond, WriteTimeout: 300 * time.Millisecond})
	t.Cleanup(func() { rdb.Close() })
	return rdb, fd
}

func saleItem(id, total int64) store.Item {
	now := time.Now().UTC().Truncate(time.Millisecond)
	return store.Item{ID: id, Name: "catalog test", PriceCents: 500, TotalStock: total, PerUserLimit: 1,
		StartsAt: now.Add(-time.Minute), EndsAt: now.Add(time.Hour)}
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// The connection is lost at COMMIT while an item is created: MySQL rolls
// it back, and Redis must not know the item either (buyers would get 202
// for an item no consumer can write, and a repeated PUT would answer 409
// in_flight for ever). The repeated PUT then succeeds and warms it.
func TestPutCommitLostLeavesRedisBehind(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	_, dsn := testenv.MySQL(t)
	db, cut := commitCutDB(t, dsn)
	st := stock.New(testenv.Redis(t))
	cat := catalog.New(db, st, testenv.NoLag)
	id := testenv.ItemID()

	cut.armed.Store(true)
	_, err := cat.Put(ctx, saleItem(id, 10))
	cut.armed.Store(false)
	if err == nil || cut.cuts.Load() == 0 {
		t.Fatalf("Put with the connection cut at COMMIT = %v (cuts %d); want a commit error", err, cut.cuts.Load())
	}
	if _, err := store.GetItem(ctx, db, id); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("item after the lost commit: %v; want it rolled back", err)
	}
	if _, warmed, err := st.Stock(ctx, id); err != nil || warmed {
		t.Fatalf("Redis knows item %d (warmed %v, %v) although MySQL never committed it: Redis is ahead of MySQL", id, warmed, err)
	}

	it, err := cat.Put(ctx, saleItem(id, 10))
	if err != nil {
		t.Fatalf("repeated Put: %v", err)
	}
	if left, warmed, err := st.Stock(ctx, id); err != nil || !warmed || left != 10 || it.Stock != 10 {
		t.Errorf("after the repeated Put: Redis stock %d warmed %v (%v), item %+v; want 10 in both", left, warmed, err, it)
	}
}

// Redis fails between the commit and the warm: the item is saved (MySQL is
// the truth) and Put says so with ErrNotWarmed; Redis keeps what it had
// (here the previous stock) rather than running ahead, and a later Warm
// brings it in line.
func TestPutWarmFailsAfterCommit(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	db, _ := testenv.MySQL(t)
	rdb, fd := cuttableRedis(t)
	common := testenv.Common(t)
	st := stock.New(rdb)
	var cutInTx atomic.Bool
	// The lag check runs inside Put's transaction, after its Redis reads:
	// cutting Redis there fails exactly the warm that follows the commit.
	lag := func(context.Context) (int64, error) {
		if cutInTx.Load() {
			fd.Cut()
		}
		return 0, nil
	}
	cat := catalog.New(db, st, lag)
	id := testenv.ItemID()
	if _, err := cat.Put(ctx, saleItem(id, 10)); err != nil {
		t.Fatal(err)
	}

	cutInTx.Store(true)
	it, err := cat.Put(ctx, saleItem(id, 25))
	cutInTx.Store(false)
	fd.Restore()
	if !errors.Is(err, catalog.ErrNotWarmed) || !errors.Is(err, stock.ErrUnavailable) {
		t.Fatalf("Put with Redis cut after the commit = %v; want ErrNotWarmed wrapping stock.ErrUnavailable", err)
	}
	if got, err := store.GetItem(ctx, db, id); err != nil || got.TotalStock != 25 || got.Stock != 25 || it.TotalStock != 25 {
		t.Fatalf("MySQL item %+v, %v (returned %+v); want the new total 25 committed", got, err, it)
	}
	// Read through a clean client: the cut left dead connections in rdb's
	// pool, and with MaxRetries -1 the first calls on them fail.
	check := redis.NewClient(&redis.Options{Addr: common.RedisAddrs()[0]})
	t.Cleanup(func() { check.Close() })
	if left, _, err := stock.New(check).Stock(ctx, id); err != nil || left != 10 {
		t.Errorf("Redis stock %d, %v; want the previous 10 (never ahead of MySQL)", left, err)
	}
	if _, err := cat.Warm(ctx, id); err != nil {
		t.Fatalf("Warm: %v", err)
	}
	if left, _, err := stock.New(check).Stock(ctx, id); err != nil || left != 25 {
		t.Errorf("Redis stock after Warm %d, %v; want 25", left, err)
	}
}
