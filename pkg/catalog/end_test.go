package catalog_test

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/catalog"
	"github.com/flashsale-dev/flashsale/pkg/reqid"
	"github.com/flashsale-dev/flashsale/pkg/stock"
	"github.com/flashsale-dev/flashsale/pkg/store"
)

// Redis is lost between End's MySQL commit and its rewrite of the sale
// window in Redis. End must say so (ErrNotWarmed, wrapping
// stock.ErrUnavailable), MySQL keeps the end, and Redis, the place
// admissions are judged, still has the old window: that is what the 503
// not_warmed answer tells the operator to repair by repeating the End. The
// repeated End keeps the first end time and closes the window in Redis:
// an admission is then refused.
func TestEndRedisLostAfterCommitIsRepairedByRepeating(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	_, dsn := testenv.MySQL(t)
	rdb, fd := cuttableRedis(t)
	common := testenv.Common(t)
	st := stock.New(rdb)
	var armed bool
	db := testenv.MySQLVia(t, dsn, func(ctx context.Context, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
		if err != nil {
			return nil, err
		}
		return &sqlWatch{Conn: c, onCommit: func() {
			if armed {
				fd.Cut()
			}
		}}, nil
	})
	db.SetMaxOpenConns(1) // one connection: the hook's flag is read by the End's own goroutine
	cat := catalog.New(db, st, testenv.NoLag)
	id := testenv.ItemID()
	if _, err := cat.Put(ctx, saleItem(id, 10)); err != nil {
		t.Fatal(err)
	}
	check := stock.New(redis.NewClient(&redis.Options{Addr: common.RedisAddrs()[0]}))
	t.Cleanup(func() { check.Client().Close() })
	admit := func(user int64) stock.AdmitCode {
		t.Helper()
		r, err := check.Admit(ctx, stock.AdmitRequest{ItemID: id, UserID: user, Qty: 1, RequestID: reqid.New(id, time.Now()),
			Deadline: time.Now().Add(5 * time.Second)})
		if err != nil {
			t.Fatalf("admit user %d: %v", user, err)
		}
		return r.Code
	}

	armed = true
	ended, err := cat.End(ctx, id)
	armed = false
	fd.Restore()
	if !errors.Is(err, catalog.ErrNotWarmed) || !errors.Is(err, stock.ErrUnavailable) {
		t.Fatalf("End with Redis cut after the commit = %v; want ErrNotWarmed wrapping stock.ErrUnavailable", err)
	}
	got, err := store.GetItem(ctx, db, id)
	if err != nil || got.EndsAt.After(time.Now()) || !got.EndsAt.Equal(ended.EndsAt) {
		t.Fatalf("MySQL item %+v, %v; want it ended at %v (committed before the cut)", got, err, ended.EndsAt)
	}
	if code := admit(1); code != stock.Admitted {
		t.Fatalf("admission in Redis after the failed rewrite = %s; want ok: Redis kept the old window (what not_warmed reports)", code)
	}

	again, err := cat.End(ctx, id)
	if err != nil {
		t.Fatalf("repeated End: %v", err)
	}
	if !again.EndsAt.Equal(ended.EndsAt) {
		t.Errorf("repeated End moved the end from %v to %v; want the first end kept", ended.EndsAt, again.EndsAt)
	}
	if code := admit(2); code != stock.NotActive {
		t.Fatalf("admission after the repeated End = %s; want %s", code, stock.NotActive)
	}
}
