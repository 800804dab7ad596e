package orderwriter_test

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/orderwriter"
)

// lagMetric is the series FlashsaleConsumerLagGrowing reads
// (deploy/prometheus/alerts.yml). It was flashsale_consumer_lag, set only
// when a round ends; that gauge stayed at 160 for the whole outage below.
const lagMetric = "flashsale_consumer_group_lag"

// While a round is stuck retrying a MySQL outage, buyers keep sending
// orders: the lag the alert reads must grow with them, not freeze at the
// value of the last round that ended.
func TestLagMovesWhileRoundIsStuck(t *testing.T) {
	t.Parallel()
	const before, during = 200, 300
	e := newEnv(t, 1, 1000, 1000)
	msgs := e.admit(users(1, before+during))
	e.produce(encode(t, msgs[:before]), true)

	pool := faultMySQL(t, e.dsn)
	c := e.config()
	c.BatchSize = 20
	c.MaxBackoff = 200 * time.Millisecond
	c.LagInterval = 500 * time.Millisecond
	reg := prometheus.NewRegistry()
	m := orderwriter.NewMetrics(reg)
	r := e.start(c, pool.db, m)
	e.waitDecided(40, 60*time.Second)
	pool.cut(e)
	frozen := e.decided()

	// The lag the alert sees once the round is stuck, then after more orders:
	// what the broker says the group has not committed, read at each poll.
	// The commit loop commits in the background, so the offset of a round
	// done just before the cut can land after the cut: the broker's count
	// is read anew each time, not once.
	var off int64
	testenv.Eventually(t, 10*time.Second, 100*time.Millisecond, func() bool {
		off = e.committed()
		return sumSeries(t, reg, lagMetric) == float64(before-off)
	}, "%s = %v while the group has %d messages not committed", lagMetric, seriesNow{t, reg, lagMetric}, lazyCount(func() int64 { return before - e.committed() }))
	e.produce(encode(t, msgs[before:]), true)
	testenv.Eventually(t, 15*time.Second, 100*time.Millisecond, func() bool {
		off = e.committed()
		return sumSeries(t, reg, lagMetric) == float64(before+during-off)
	}, "%s = %v, want %v: %d more messages arrived while the round was stuck", lagMetric, seriesNow{t, reg, lagMetric}, lazyCount(func() int64 { return before + during - e.committed() }), during)
	if off > frozen {
		t.Fatalf("committed offset %d is past the %d requests MySQL decided while it was cut", off, frozen)
	}
	if now := e.decided(); now != frozen {
		t.Fatalf("decisions moved from %d to %d while MySQL was cut: the round was not stuck", frozen, now)
	}
	if testutil.ToFloat64(m.Retries.WithLabelValues("transient")) == 0 {
		t.Fatalf("no transient retries: the round was not retrying")
	}
	pool.fd.Restore()
	e.waitDrained(90 * time.Second)
	testenv.Eventually(t, 15*time.Second, 100*time.Millisecond, func() bool {
		return sumSeries(t, reg, lagMetric) == 0
	}, "%s did not come back to 0 after the order log drained", lagMetric)
	r.stop(t)
	if got := e.count("SELECT COUNT(*) FROM orders"); got != before+during {
		t.Errorf("orders = %d, want %d", got, before+during)
	}
	e.checkInvariants()
}

// sumSeries adds up every series of the gauge name in reg (0 if none).
func sumSeries(t testing.TB, reg prometheus.Gatherer, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() == name {
			for _, s := range mf.GetMetric() {
				sum += s.GetGauge().GetValue()
			}
		}
	}
	return sum
}

// seriesNow prints the sum of a gauge's series when the message is
// formatted, that is at the failure, not when the check started.
type seriesNow struct {
	t    testing.TB
	reg  prometheus.Gatherer
	name string
}

func (s seriesNow) String() string { return fmt.Sprint(sumSeries(s.t, s.reg, s.name)) }

// faultPool is the consumer's MySQL pool behind a FaultDialer, which
// remembers the local port of every connection it dialed so that the test
// can tell when the server is done with them.
type faultPool struct {
	db *sql.DB
	fd *testenv.FaultDialer

	mu    sync.Mutex
	ports map[string]bool
}

// faultMySQL opens the test's database through a FaultDialer, so the test
// can cut this pool's connections without touching the shared server.
func faultMySQL(t testing.TB, dsn string) *faultPool {
	t.Helper()
	p := &faultPool{fd: testenv.NewFaultDialer(), ports: map[string]bool{}}
	p.db = testenv.MySQLVia(t, dsn, func(ctx context.Context, addr string) (net.Conn, error) {
		c, err := p.fd.DialContext(ctx, "tcp", addr)
		if err != nil {
			return nil, err
		}
		if _, port, err := net.SplitHostPort(c.LocalAddr().String()); err == nil {
			p.mu.Lock()
			p.ports[port] = true
			p.mu.Unlock()
		}
		return c, nil
	})
	p.db.SetMaxOpenConns(4)
	return p
}

// cut cuts every connection of the pool and waits until the server has
// ended each of their sessions. A statement the server had already
// received (a COMMIT on its way when the cut came) has then landed or been
// rolled back, so the decisions read from now on cannot move because of
// it. The sessions are found by the pool's ports in PROCESSLIST's HOST
// ("host:port"); the test first sees one of them, so a HOST of another
// shape fails here instead of making the wait vacuous.
func (p *faultPool) cut(e *env) {
	e.t.Helper()
	testenv.Eventually(e.t, 30*time.Second, 10*time.Millisecond, func() bool { return p.sessions(e) > 0 },
		"no session of the consumer's pool found in PROCESSLIST by its ports")
	p.fd.Cut()
	testenv.Eventually(e.t, 30*time.Second, 10*time.Millisecond, func() bool { return p.sessions(e) == 0 },
		"the server still has %d sessions of the cut pool", lazyCount(func() int64 { return int64(p.sessions(e)) }))
}

// sessions counts the server's sessions on the test's database that
// connections of the pool opened.
func (p *faultPool) sessions(e *env) int {
	e.t.Helper()
	rows, err := e.db.Query("SELECT HOST FROM information_schema.PROCESSLIST WHERE DB = DATABASE()")
	if err != nil {
		e.t.Fatal(err)
	}
	defer rows.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for rows.Next() {
		var host string
		if err := rows.Scan(&host); err != nil {
			e.t.Fatal(err)
		}
		if i := strings.LastIndexByte(host, ':'); i >= 0 && p.ports[host[i+1:]] {
			n++
		}
	}
	if err := rows.Err(); err != nil {
		e.t.Fatal(err)
	}
	return n
}
