package testenv

import (
	"bytes"
	"context"
	"database/sql"
	"net"
	"sync/atomic"
	"testing"

	"github.com/go-sql-driver/mysql"
)

// CountingMySQL opens a second pool on db's database (MySQLVia) that counts
// the statements it sends whose text contains match, so a test can tell
// exactly how many reads a cache saved MySQL. It counts on the wire: the
// driver writes each command packet whole, and with the parameters
// interpolated every query is one packet with its text (a plaintext
// connection, as the local stack's). The pool is closed when the test ends.
func CountingMySQL(t testing.TB, db *sql.DB, match string) (*sql.DB, *atomic.Int64) {
	t.Helper()
	var name string
	if err := db.QueryRow("SELECT DATABASE()").Scan(&name); err != nil {
		t.Fatal(err)
	}
	common := Common(t)
	cfg, err := mysql.ParseDSN(common.DSN())
	if err != nil {
		t.Fatal(err)
	}
	cfg.DBName = name
	cfg.InterpolateParams = true
	n := new(atomic.Int64)
	var d net.Dialer
	counting := MySQLVia(t, cfg.FormatDSN(), func(ctx context.Context, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return nil, err
		}
		return &countingConn{Conn: c, match: []byte(match), n: n}, nil
	})
	return counting, n
}

// countingConn counts the packets written that contain match.
type countingConn struct {
	net.Conn
	match []byte
	n     *atomic.Int64
}

func (c *countingConn) Write(b []byte) (int, error) {
	if bytes.Contains(b, c.match) {
		c.n.Add(1)
	}
	return c.Conn.Write(b)
}
