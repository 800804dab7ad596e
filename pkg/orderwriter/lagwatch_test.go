package orderwriter_test

import (
	"database/sql"
	"fmt"
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

	faultDB, fd := faultMySQL(t, e.dsn)
	c := e.config()
	c.BatchSize = 20
	c.MaxBackoff = 200 * time.Millisecond
	c.LagInterval = 500 * time.Millisecond
	reg := prometheus.NewRegistry()
	m := orderwriter.NewMetrics(reg)
	r := e.start(c, faultDB, m)
	e.waitDecided(40, 60*time.Second)
	fd.Cut()
	time.Sleep(300 * time.Millisecond) // let an in-flight commit land
	frozen := e.decided()

	// The lag the alert sees once the round is stuck, then after more orders:
	// what the broker says the group has not committed.
	off := e.committed()
	testenv.Eventually(t, 10*time.Second, 100*time.Millisecond, func() bool {
		return sumSeries(t, reg, lagMetric) == float64(before-off)
	}, "%s = %v while the group has %d messages not committed", lagMetric, seriesNow{t, reg, lagMetric}, before-off)
	e.produce(encode(t, msgs[before:]), true)
	testenv.Eventually(t, 15*time.Second, 100*time.Millisecond, func() bool {
		return sumSeries(t, reg, lagMetric) == float64(before+during-off)
	}, "%s = %v, want %d: %d more messages arrived while the round was stuck", lagMetric, seriesNow{t, reg, lagMetric}, before+during-off, during)
	if now := e.committed(); now != off {
		t.Fatalf("committed offset moved from %d to %d while MySQL was cut", off, now)
	}
	if now := e.decided(); now != frozen {
		t.Fatalf("decisions moved from %d to %d while MySQL was cut: the round was not stuck", frozen, now)
	}
	if testutil.ToFloat64(m.Retries.WithLabelValues("transient")) == 0 {
		t.Fatalf("no transient retries: the round was not retrying")
	}
	fd.Restore()
	e.waitDrained(90 * time.Second)
	testenv.Eventually(t, 15*time.Second, 100*time.Millisecond, func() bool {
		return sumSeries(t, reg, lagMetric) == 0
	}, "%s did not come back to 0 after the queue drained", lagMetric)
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

// faultMySQL opens the test's database through a FaultDialer, so the test
// can cut this pool's connections without touching the shared server.
func faultMySQL(t testing.TB, dsn string) (*sql.DB, *testenv.FaultDialer) {
	t.Helper()
	fd := testenv.NewFaultDialer()
	db := testenv.FaultyMySQL(t, dsn, fd)
	db.SetMaxOpenConns(4)
	return db, fd
}
