package orderwriter_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/segmentio/kafka-go"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/orderstatus"
	"github.com/flashsale-dev/flashsale/pkg/orderwriter"
	"github.com/flashsale-dev/flashsale/pkg/store"
)

// failOrders makes every INSERT into the test database's orders table (or
// only user's, when user > 0) fail with the given server error number: a
// trigger SIGNALs it, so the consumer gets the real server's error packet,
// as it would from a read-only or failing-over primary. The returned func
// removes the trigger.
func (e *env) failOrders(errno int, message string, user int64) func() {
	e.t.Helper()
	name := "fail_orders_" + testenv.Suffix()
	cond := "TRUE"
	if user > 0 {
		cond = fmt.Sprintf("NEW.user_id = %d", user)
	}
	ddl := fmt.Sprintf("CREATE TRIGGER %s BEFORE INSERT ON orders FOR EACH ROW BEGIN IF %s THEN SIGNAL SQLSTATE 'HY000' SET MYSQL_ERRNO = %d, MESSAGE_TEXT = '%s'; END IF; END",
		name, cond, errno, message)
	if _, err := e.db.Exec(ddl); err != nil {
		e.t.Fatalf("create trigger: %v", err)
	}
	dropped := false
	drop := func() {
		if dropped {
			return
		}
		dropped = true
		if _, err := e.db.Exec("DROP TRIGGER IF EXISTS " + name); err != nil {
			e.t.Errorf("drop trigger: %v", err)
		}
	}
	e.t.Cleanup(drop)
	return drop
}

// dlqCount is the number of messages written to the test's DLQ topic.
func (e *env) dlqCount() int64 {
	e.t.Helper()
	c := &kafka.Client{Addr: kafka.TCP(e.brokers...)}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := c.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{e.dlq: {kafka.LastOffsetOf(0)}}})
	if err != nil {
		e.t.Fatalf("dlq offsets: %v", err)
	}
	var n int64
	for _, p := range res.Topics[e.dlq] {
		if p.Error != nil {
			e.t.Fatalf("dlq offsets: %v", p.Error)
		}
		n += p.LastOffset
	}
	return n
}

// The primary is read-only for a while (error 1290, as during a switchover):
// the consumer keeps retrying far past the five attempts that used to send
// each message to the DLQ, dead-letters nothing, and orders everything once
// the server is writable again.
func TestReadOnlyServerIsWaitedOut(t *testing.T) {
	t.Parallel()
	const n = 20
	e := newEnv(t, 1, 100, 100)
	msgs := e.admit(users(1, n))
	restore := e.failOrders(1290, "The MariaDB server is running with the --read-only option so it cannot execute this statement", 0)
	e.produce(encode(t, msgs), true)

	m := orderwriter.NewMetrics(prometheus.NewRegistry())
	cfg := e.config()
	cfg.MaxBackoff = 50 * time.Millisecond
	cfg.GiveUpAfter = 200 * time.Millisecond // a permanent error would be given up well within the wait below
	r := e.start(cfg, nil, m)
	const oldAttempts = 5 // FLASHSALE_MAX_ATTEMPTS' default before attempts became time
	retries := func() float64 {
		return testutil.ToFloat64(m.Retries.WithLabelValues("transient")) + testutil.ToFloat64(m.Retries.WithLabelValues("failure"))
	}
	testenv.Eventually(t, 30*time.Second, 20*time.Millisecond, func() bool {
		return retries() >= 4*oldAttempts || testutil.ToFloat64(m.DLQ) > 0
	}, "the consumer did not retry the read-only error (retries %v)", retries())
	if got := testutil.ToFloat64(m.DLQ); got > 0 {
		t.Fatalf("%v messages dead-lettered after %v retries of a read-only server (error 1290)", got, retries())
	}
	if got := e.count("SELECT COUNT(*) FROM request_outcomes"); got != 0 {
		t.Fatalf("%d requests decided while every order insert failed", got)
	}
	restore()
	e.waitDrained(60 * time.Second)
	r.stop(t)

	t.Logf("retries while read-only: transient %v, failure %v", testutil.ToFloat64(m.Retries.WithLabelValues("transient")), testutil.ToFloat64(m.Retries.WithLabelValues("failure")))
	if got := e.count("SELECT COUNT(*) FROM orders"); got != n {
		t.Errorf("orders = %d, want %d", got, n)
	}
	if got := e.count("SELECT COUNT(*) FROM request_outcomes WHERE outcome = 'ORDERED'"); got != n {
		t.Errorf("ORDERED = %d, want %d", got, n)
	}
	if got := testutil.ToFloat64(m.DLQ); got != 0 {
		t.Errorf("dlq_messages_total = %v, want 0", got)
	}
	if got := e.dlqCount(); got != 0 {
		t.Errorf("DLQ topic holds %d messages, want 0", got)
	}
	e.checkInvariants()
}

// One message fails with a permanent error (data too long) while its
// neighbours are fine: the item batch is retried for GiveUpAfter, then its
// messages are written one by one; the bad one alone is dead-lettered and
// rejected through the arbiter (REJECTED unprocessable), its stock and buyer
// mark come back, and its buyer's poll ends at once instead of after the
// orphan grace.
func TestPermanentErrorGivesUpOnlyItsMessage(t *testing.T) {
	t.Parallel()
	const n = 10
	const badUser = 5
	e := newEnv(t, 1, 100, 100)
	msgs := e.admit(users(1, n))
	var bad string
	for _, m := range msgs {
		if m.UserID == badUser {
			bad = m.RequestID
		}
	}
	e.failOrders(1406, "Data too long for column ''request_id'' at row 1", badUser)
	e.produce(encode(t, msgs), true)

	m := orderwriter.NewMetrics(prometheus.NewRegistry())
	cfg := e.config()
	cfg.GiveUpAfter = 500 * time.Millisecond
	start := time.Now()
	r := e.start(cfg, nil, m)
	e.waitDrained(60 * time.Second)
	took := time.Since(start)
	r.stop(t)

	ctx := context.Background()
	if took < cfg.GiveUpAfter {
		t.Errorf("gave up after %v, before GiveUpAfter %v", took, cfg.GiveUpAfter)
	}
	if got := e.count("SELECT COUNT(*) FROM orders"); got != n-1 {
		t.Errorf("orders = %d, want %d (every message but the bad one)", got, n-1)
	}
	d, err := store.GetDecision(ctx, e.db, bad)
	if err != nil || d.Outcome != store.Rejected || d.Reason != store.ReasonUnprocessable {
		t.Fatalf("decision of the bad request = %+v, %v; want REJECTED %s", d, err, store.ReasonUnprocessable)
	}
	v, ok, err := orderstatus.Get(ctx, e.st, e.item, bad)
	if err != nil || !ok || v.Status != orderstatus.Rejected || v.Reason != store.ReasonUnprocessable {
		t.Errorf("cached status of the bad request = %+v %v %v; want REJECTED %s", v, ok, err, store.ReasonUnprocessable)
	}
	rs, err := e.st.ReadState(ctx, e.item)
	if err != nil || rs.Pending != 0 || rs.Stock != 100-(n-1) || rs.Buyers != n-1 {
		t.Errorf("redis state %+v, %v: want no reservation, stock %d and %d buyers (the bad one's unit and mark given back)", rs, err, 100-(n-1), n-1)
	}
	if got := testutil.ToFloat64(m.DLQ); got != 1 {
		t.Errorf("dlq_messages_total = %v, want 1", got)
	}
	if got := e.dlqCount(); got != 1 {
		t.Errorf("DLQ topic holds %d messages, want 1", got)
	}
	if got := testutil.ToFloat64(m.Outcomes.WithLabelValues(string(store.Rejected), store.ReasonUnprocessable)); got != 1 {
		t.Errorf("outcomes_total{REJECTED,%s} = %v, want 1", store.ReasonUnprocessable, got)
	}
	e.checkInvariants()
}
