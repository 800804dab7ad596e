package testenv

import (
	"context"
	"database/sql"
	"net"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

// MySQLVia opens a pool on dsn whose connections are made by dial, with the
// session settings flashsale forces (parseTime, UTC) and short timeouts, so a
// test can cut, stall or break this pool's connections without touching the
// server other tests share. The pool is closed when the test ends.
func MySQLVia(t testing.TB, dsn string, dial func(ctx context.Context, addr string) (net.Conn, error)) *sql.DB {
	t.Helper()
	NeedStack(t, "MySQL")
	netName := "via-" + Suffix()
	mysql.RegisterDialContext(netName, dial)
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Net = netName
	cfg.Timeout = time.Second
	cfg.ReadTimeout, cfg.WriteTimeout = 2*time.Second, 2*time.Second
	cfg.ParseTime, cfg.Loc = true, time.UTC
	cfg.Params = map[string]string{"time_zone": "'+00:00'"}
	db, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// FaultyMySQL is MySQLVia through fd.
func FaultyMySQL(t testing.TB, dsn string, fd *FaultDialer) *sql.DB {
	t.Helper()
	return MySQLVia(t, dsn, func(ctx context.Context, addr string) (net.Conn, error) {
		return fd.DialContext(ctx, "tcp", addr)
	})
}
