package orderwriter_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/segmentio/kafka-go"

	"github.com/flashsale-dev/flashsale/pkg/orderlog"
	"github.com/flashsale-dev/flashsale/pkg/orderwriter"
	"github.com/flashsale-dev/flashsale/pkg/store"
)

// MySQL becomes unreachable for the consumer mid-stream (every connection of
// its pool cut, new ones refused; the shared server keeps running). While it
// is away no committed offset passes a message without its outcome in MySQL
// and nothing is written; when it returns the consumer resumes by itself and
// every request is written exactly once.
func TestMySQLOutage(t *testing.T) {
	t.Parallel()
	const n = 400
	e := newEnv(t, 1, 1000, 1000)
	msgs := e.admit(users(1, n))
	e.produce(encode(t, msgs), true) // one partition: offset i is msgs[i]

	pool := faultMySQL(t, e.dsn)

	c := e.config()
	c.BatchSize = 20
	c.MaxBackoff = 200 * time.Millisecond
	m := orderwriter.NewMetrics(prometheus.NewRegistry())
	r := e.start(c, pool.db, m)
	e.waitDecided(60, 60*time.Second)
	pool.cut(e)

	// During the outage: decisions freeze, and the committed offset never
	// runs ahead of them. The outage lasts while the consumer's retry loops
	// retry it thirty times between them (over a second at this backoff):
	// each retry is a chance to write or commit ahead of MySQL.
	frozen := e.decided()
	retries := func() float64 { return testutil.ToFloat64(m.Retries.WithLabelValues("transient")) }
	until := retries() + 30
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for hang := time.Now().Add(60 * time.Second); retries() < until; <-tick.C {
		if time.Now().After(hang) { // a hang guard, not a speed bound
			t.Fatalf("%v transient retries in 60 s of outage, want %v: the round is not retrying", retries(), until)
		}
		off := e.committed()
		dec, err := store.DecisionsAmong(context.Background(), e.db, ids(msgs[:max(0, off)]))
		if err != nil {
			t.Fatal(err)
		}
		if int64(len(dec)) != off {
			t.Fatalf("committed offset %d but only %d of those messages are decided", off, len(dec))
		}
		if now := e.decided(); now != frozen {
			t.Fatalf("decisions moved from %d to %d while MySQL was cut", frozen, now)
		}
	}
	if frozen >= n {
		t.Fatalf("everything was written before the cut; the test proves nothing")
	}
	pool.fd.Restore()
	e.waitDrained(90 * time.Second)
	r.stop(t)

	if got := e.count("SELECT COUNT(*) FROM orders"); got != n {
		t.Errorf("orders = %d, want %d", got, n)
	}
	if got := e.count("SELECT stock FROM items WHERE id = ?", e.item); got != 1000-n {
		t.Errorf("MySQL stock = %d, want %d", got, 1000-n)
	}
	e.checkInvariants()
}

// committed returns the group's committed offset of partition 0 (0 if none).
func (e *env) committed() int64 {
	e.t.Helper()
	client := &kafka.Client{Addr: kafka.TCP(e.brokers...)}
	res, err := client.OffsetFetch(context.Background(), &kafka.OffsetFetchRequest{GroupID: e.group, Topics: map[string][]int{e.topic: {0}}})
	if err != nil {
		e.t.Fatalf("offset fetch: %v", err)
	}
	for _, p := range res.Topics[e.topic] {
		if p.Error != nil {
			e.t.Fatal(fmt.Errorf("offset fetch: %w", p.Error))
		}
		return max(0, p.CommittedOffset)
	}
	return 0
}

func ids(ms []orderlog.OrderMessage) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.RequestID
	}
	return out
}
