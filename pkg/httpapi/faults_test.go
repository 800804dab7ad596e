package httpapi

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/config"
	"github.com/flashsale-dev/flashsale/pkg/stock"
	"github.com/flashsale-dev/flashsale/pkg/store"
)

// TestKafkaCutAndStalled: the writer's connections are cut, then stalled,
// mid-run. No 202 without a durable message; every 503 left nothing
// reserved (stock and buyer back, arbiter ABORTED, status REJECTED).
func TestKafkaCutAndStalled(t *testing.T) {
	fd := testenv.NewFaultDialer()
	h := newHarness(t, harnessOpts{partitions: 2, transport: &kafka.Transport{Dial: fd.DialContext},
		ingress: func(in *config.Ingress) { in.PublishTimeout = time.Second }})
	item := testenv.ItemID()
	const total = 1000
	h.putItem(item, total, 1)

	type answer struct {
		user int64
		code int
		rid  string
	}
	var mu sync.Mutex
	var answers []answer
	next := int64(0)
	burst := func(n int) {
		var wg sync.WaitGroup
		for range n {
			next++
			user := next
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := h.order(user, item, 1, fmt.Sprintf("key-%d", user))
				a := answer{user: user, code: r.Code}
				if r.Code == http.StatusAccepted {
					a.rid = r.json(t)["request_id"].(string)
				}
				mu.Lock()
				answers = append(answers, a)
				mu.Unlock()
			}()
		}
		wg.Wait()
	}
	burst(20) // healthy
	fd.Cut()
	burst(20)
	fd.Stall()
	start := time.Now()
	burst(20)
	// Only a guard against a hang (10 times the PublishTimeout of 1s): a
	// publish its timeout did not bound would wait for the stall to end.
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("stalled publishes took %v; PublishTimeout is 1s", d)
	}
	fd.Restore()
	testenv.Eventually(t, 30*time.Second, 100*time.Millisecond, func() bool {
		burst(1)
		return answers[len(answers)-1].code == http.StatusAccepted
	}, "publishing did not recover after the fault was healed")

	ctx := context.Background()
	msgs := h.readTopic()
	inKafka := map[string]bool{}
	for _, m := range msgs {
		inKafka[m.RequestID] = true
	}
	var ok, failed int
	buyers := map[int64]bool{}
	for _, a := range answers {
		switch a.code {
		case http.StatusAccepted:
			ok++
			buyers[a.user] = true
			if !inKafka[a.rid] {
				t.Errorf("202 %s for user %d has no Kafka message", a.rid, a.user)
			}
		case http.StatusServiceUnavailable:
			failed++
			isBuyer, err := h.rdb.HExists(ctx, stock.KeysOf(item).Holders, fmt.Sprint(a.user)).Result()
			if err != nil || isBuyer {
				t.Errorf("503 user %d still marked as buyer (%v)", a.user, err)
			}
		default:
			t.Errorf("user %d: unexpected status %d", a.user, a.code)
		}
	}
	if failed == 0 || ok < 21 {
		t.Fatalf("want 202s before and after the fault and 503s during it: %d ok, %d failed", ok, failed)
	}
	// Every aborted request is decided ABORTED/publish_failed and shows so.
	rows, err := h.db.QueryContext(ctx, "SELECT request_id, user_id, outcome, reason FROM request_outcomes WHERE item_id = ?", item)
	if err != nil {
		t.Fatal(err)
	}
	aborted := 0
	for rows.Next() {
		var rid, outcome, reason string
		var user int64
		if err := rows.Scan(&rid, &user, &outcome, &reason); err != nil {
			t.Fatal(err)
		}
		if outcome != string(store.Aborted) || reason != store.ReasonPublishFailed || buyers[user] {
			t.Errorf("decision %s user %d %s/%s", rid, user, outcome, reason)
		}
		if _, ok, _ := h.st.GetReservation(ctx, item, rid); ok {
			t.Errorf("aborted %s still reserved", rid)
		}
		aborted++
		if r := h.do(http.MethodGet, "/api/v1/orders/"+rid, "", h.as(user)); r.Code != 200 ||
			r.json(t)["status"] != "REJECTED" || r.json(t)["reason"] != "publish_failed" {
			t.Errorf("status of aborted %s: %d %s", rid, r.Code, r.Body)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if aborted != failed {
		t.Errorf("%d ABORTED decisions for %d answers 503", aborted, failed)
	}
	if s := h.redisStock(item); s != int64(total-ok) {
		t.Errorf("redis stock %d, want %d - %d accepted", s, total, ok)
	}
	t.Logf("%d accepted, %d aborted, %d messages", ok, failed, len(msgs))
}

// TestRedisDown: with the (private) Redis killed, admission answers 503
// (bounded: it does not hang) and nothing is admitted; the per-IP limit fails
// open rather than turning the outage into 429s or 500s.
func TestRedisDown(t *testing.T) {
	pr := testenv.StartPrivateRedis(t)
	const storeTimeout = 300 * time.Millisecond
	h := newHarness(t, harnessOpts{partitions: 1, rdb: pr.Client(storeTimeout), storeTimeout: storeTimeout,
		ingress: func(in *config.Ingress) { in.IPRateLimit = 1000 }})
	item := h.newItem(10, 1)
	if r := h.order(1, item, 1, ""); r.Code != http.StatusAccepted {
		t.Fatalf("healthy order: %d %s", r.Code, r.Body)
	}
	pr.Stop()
	// Open the per-IP limiter's breaker: its one failing call may cost a
	// store timeout; after that it fails open without asking Redis. The
	// first admissions may find a pooled connection to the dead server: a
	// command written and never answered is ambiguous (a server can die
	// right after running it), so those are outcome_unknown, decided
	// ABORTED; once the pool is drained, a refused dial is a plain
	// "unavailable", nothing reserved, nothing decided.
	unknown := 0
	for user := int64(2); user < 14; user++ {
		start := time.Now()
		r := h.order(user, item, 1, "")
		d := time.Since(start)
		switch body := r.json(t); {
		case r.Code == http.StatusServiceUnavailable && body["error"] == "unavailable":
		case r.Code == http.StatusServiceUnavailable && body["error"] == "outcome_unknown" && body["request_id"] != nil && user < 5:
			unknown++
		default:
			t.Fatalf("order %d with redis down: %d %s", user, r.Code, r.Body)
		}
		// Only a guard against a hang, 10 store timeouts: how fast a
		// refused or reset connection is answered is not asserted.
		if d > 10*storeTimeout {
			t.Errorf("503 took %v, store timeout %v", d, storeTimeout)
		}
	}
	if r := h.do(http.MethodGet, "/api/v1/orders/"+"1-0000000000000000000000000000", "", h.as(1)); r.Code != http.StatusServiceUnavailable {
		t.Errorf("status poll with redis down: %d %s", r.Code, r.Body)
	}
	if msgs := h.readTopic(); len(msgs) != 1 {
		t.Fatalf("%d messages in Kafka, want only the one admitted before the outage", len(msgs))
	}
	var n int
	if err := h.db.QueryRow("SELECT COUNT(*) FROM request_outcomes WHERE outcome = 'ABORTED'").Scan(&n); err != nil || n != unknown {
		t.Fatalf("%d ABORTED rows (%v) for %d outcome_unknown answers: only ambiguous requests may be decided", n, err, unknown)
	}
	if err := h.db.QueryRow("SELECT COUNT(*) FROM request_outcomes").Scan(&n); err != nil || n != unknown {
		t.Fatalf("arbiter rows %d (%v): nothing may be decided for unreserved requests", n, err)
	}
}

// TestRedisStalled: with the (private) Redis SIGSTOPped — its port accepts
// connections but nothing answers, unlike a refused connection — orders and
// status polls get a 503 (each Redis call bounded by the store timeout, not
// by a socket timeout), nothing is admitted, and once Redis answers again
// the pipeline recovers and every hold taken by a stalled call is given
// back. The client's socket timeouts are a minute here, so a call the store
// timeout did not bound would hang: the bounds below only guard against
// that, they are not latency targets.
func TestRedisStalled(t *testing.T) {
	pr := testenv.StartPrivateRedis(t)
	const storeTimeout = 500 * time.Millisecond
	// An order may wait for two Redis calls: the admission script, and the
	// release of what it may have reserved (its reply was lost). A status
	// poll waits for one. Each bound is 10 times that: a hang guard.
	const orderBound, pollBound = 10 * 2 * storeTimeout, 10 * storeTimeout
	h := newHarness(t, harnessOpts{partitions: 1, rdb: pr.Client(time.Minute), storeTimeout: storeTimeout,
		ingress: func(in *config.Ingress) { in.IPRateLimit = 1000 }})
	item := testenv.ItemID()
	const total = 10
	h.putItem(item, total, 1)
	r := h.order(1, item, 1, "")
	if r.Code != http.StatusAccepted {
		t.Fatalf("healthy order: %d %s", r.Code, r.Body)
	}
	rid := r.json(t)["request_id"].(string)

	pr.Pause()
	resumed := false
	defer func() {
		if !resumed {
			pr.Resume()
		}
	}()
	check := func(what string, r resp, d, bound time.Duration) {
		t.Helper()
		code, _ := r.json(t)["error"].(string)
		if r.Code != http.StatusServiceUnavailable || (code != "unavailable" && code != "outcome_unknown") {
			t.Errorf("%s with redis stalled: %d %s, want 503", what, r.Code, r.Body)
		}
		if d > bound {
			t.Errorf("%s: 503 took %v with redis stalled; store timeout %v, bound %v", what, d.Round(time.Millisecond), storeTimeout, bound)
		}
	}
	var slowest time.Duration
	for user := int64(2); user < 6; user++ {
		start := time.Now()
		r := h.order(user, item, 1, fmt.Sprintf("stalled-%d", user))
		d := time.Since(start)
		slowest = max(slowest, d)
		check(fmt.Sprintf("order of user %d", user), r, d, orderBound)
	}
	// A burst at once: the calls must not queue behind each other.
	var wg sync.WaitGroup
	var mu sync.Mutex
	burstStart := time.Now()
	for user := int64(10); user < 30; user++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			r := h.order(user, item, 1, "")
			d := time.Since(start)
			mu.Lock()
			defer mu.Unlock()
			slowest = max(slowest, d)
			check(fmt.Sprintf("burst order of user %d", user), r, d, orderBound)
		}()
	}
	wg.Wait()
	burst := time.Since(burstStart)
	var slowestPoll time.Duration
	for range 3 {
		start := time.Now()
		r := h.do(http.MethodGet, "/api/v1/orders/"+rid, "", h.as(1))
		d := time.Since(start)
		slowestPoll = max(slowestPoll, d)
		check("status poll", r, d, pollBound)
	}
	t.Logf("redis stalled, store timeout %v: slowest order 503 %v, burst of 20 %v, slowest poll 503 %v",
		storeTimeout, slowest.Round(time.Millisecond), burst.Round(time.Millisecond), slowestPoll.Round(time.Millisecond))

	pr.Resume()
	resumed = true
	recovered := time.Now()
	next := int64(100)
	testenv.Eventually(t, 15*time.Second, 100*time.Millisecond, func() bool {
		next++
		return h.order(next, item, 1, "").Code == http.StatusAccepted
	}, "orders did not recover after redis resumed")
	t.Logf("first 202 %v after redis resumed", time.Since(recovered).Round(time.Millisecond))
	// Calls written to the stalled server run when it resumes; none may
	// reserve, and every hold a stalled admission took comes back.
	testenv.Eventually(t, 15*time.Second, 100*time.Millisecond, func() bool {
		return h.redisStock(item) == total-2
	}, "redis stock did not come back to %d - 2 accepted (now %d)", total, h.redisStock(item))
	if msgs := h.readTopic(); len(msgs) != 2 {
		t.Errorf("%d messages in Kafka, want the 2 orders accepted outside the stall", len(msgs))
	}
}

// TestStockChangeRedisStalled: a restock taken while Redis is stalled gets a
// 503 and loses nothing: MySQL holds the change as PENDING (total and
// stock already grown, the row naming it), Redis has not got the units, and
// the audit counts the change as in between. Once Redis answers, the same
// call finishes it once (200, applied 5) and a third call is a replay that
// changes nothing; both stores then agree and the audit is exact.
func TestStockChangeRedisStalled(t *testing.T) {
	pr := testenv.StartPrivateRedis(t)
	const storeTimeout = 300 * time.Millisecond
	h := newHarness(t, harnessOpts{partitions: 1, rdb: pr.Client(time.Minute), storeTimeout: storeTimeout,
		ingress: func(in *config.Ingress) { in.IPRateLimit = 1000 }})
	item := h.newItem(10, 1)
	path := fmt.Sprintf("/api/v1/admin/items/%d/stock", item)
	const body = `{"delta":5,"operation_id":"stall-restock-1"}`

	pr.Pause()
	start := time.Now()
	r := h.do(http.MethodPost, path, body, h.admin())
	d := time.Since(start)
	pr.Resume()
	t.Logf("with redis stalled: %d %s in %v", r.Code, r.Body, d)
	if r.Code != http.StatusServiceUnavailable {
		t.Fatalf("restock with redis stalled: %d %s", r.Code, r.Body)
	}
	if code := r.json(t)["error"]; code != "not_applied" && code != "unavailable" {
		t.Fatalf("restock with redis stalled: error %v", code)
	}
	// One bounded Redis call per bucket, then the answer. Only a guard
	// against a hang (10 times that): the client's socket timeouts are a
	// minute, so a call the store timeout did not bound would hang.
	if d > 10*(3*storeTimeout+time.Second) {
		t.Errorf("503 took %v with a store timeout of %v", d, storeTimeout)
	}
	var state string
	var total int64
	err := h.db.QueryRow("SELECT state FROM stock_changes WHERE operation_id = ?", "stall-restock-1").Scan(&state)
	if err == nil {
		if err := h.db.QueryRow("SELECT total_stock FROM items WHERE id = ?", item).Scan(&total); err != nil || state != "PENDING" || total != 15 {
			t.Fatalf("after the 503: change %s, total %d (%v); want PENDING and 15", state, total, err)
		}
	} else if !errors.Is(err, sql.ErrNoRows) {
		t.Fatal(err)
	}
	if got := h.redisStock(item); got != 10 {
		t.Fatalf("redis stock %d after a 503, want the 10 before it", got)
	}
	if a := h.do(http.MethodGet, fmt.Sprintf("/api/v1/admin/items/%d/audit", item), "", h.admin()); a.Code != http.StatusOK || a.json(t)["ok"] != true {
		t.Fatalf("audit with the change in between: %d %s", a.Code, a.Body)
	}

	r = h.do(http.MethodPost, path, body, h.admin())
	if r.Code != http.StatusOK || r.json(t)["applied"] != float64(5) {
		t.Fatalf("the same call once redis answers: %d %s", r.Code, r.Body)
	}
	r = h.do(http.MethodPost, path, body, h.admin())
	if r.Code != http.StatusOK || r.json(t)["replayed"] != true || r.json(t)["applied"] != float64(5) {
		t.Fatalf("a third call: %d %s, want a replay of applied 5", r.Code, r.Body)
	}
	if got := h.redisStock(item); got != 15 {
		t.Errorf("redis stock %d, want 15 (applied once)", got)
	}
	if err := h.db.QueryRow("SELECT total_stock FROM items WHERE id = ?", item).Scan(&total); err != nil || total != 15 {
		t.Errorf("mysql total %d (%v), want 15", total, err)
	}
	if a := h.do(http.MethodGet, fmt.Sprintf("/api/v1/admin/items/%d/audit", item), "", h.admin()); a.Code != http.StatusOK || a.json(t)["ok"] != true {
		t.Errorf("audit after: %d %s", a.Code, a.Body)
	}
}
