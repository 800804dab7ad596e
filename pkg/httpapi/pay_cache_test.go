package httpapi

import (
	"net/http"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flashsale-dev/flashsale/internal/testenv"
)

// faultyRedis is a client of the shared Redis whose connections all go
// through fd, so a test can cut this server's Redis alone.
func faultyRedis(t *testing.T, fd *testenv.FaultDialer, timeout time.Duration) redis.UniversalClient {
	t.Helper()
	common := testenv.Common(t)
	c := common.RedisConn()
	rdb := redis.NewUniversalClient(&redis.UniversalOptions{
		Addrs: c.Addrs, DB: c.DB, Username: c.Username, Password: c.Password,
		Dialer: fd.DialContext, DialTimeout: timeout, ReadTimeout: timeout, WriteTimeout: timeout,
		ContextTimeoutEnabled: true, MaxRetries: -1,
	})
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// mysqlStatus is the order's status in MySQL.
func mysqlStatus(t *testing.T, h *harness, rid string) string {
	t.Helper()
	var st string
	if err := h.db.QueryRow("SELECT status FROM orders WHERE request_id = ?", rid).Scan(&st); err != nil {
		t.Fatal(err)
	}
	return st
}

// TestPaidNeverGoesBackToUnpaid: a buyer answered 200 PAID never reads
// UNPAID afterwards, even when the status cache write that follows the
// pay's MySQL commit fails while the cache still holds the UNPAID a poll
// put there (5 s lifetime). The fault suite's history checker found exactly
// this under Redis connection resets (issue 21, TestRedisResetMidReply).
func TestPaidNeverGoesBackToUnpaid(t *testing.T) {
	const storeTimeout = 500 * time.Millisecond
	fd := testenv.NewFaultDialer()
	h := newHarness(t, harnessOpts{partitions: 1, rdb: faultyRedis(t, fd, storeTimeout), storeTimeout: storeTimeout})
	item := h.newItem(10, 1)
	t.Cleanup(func() { testHookAfterPayCommit = nil })

	// pollUnpaid reads the order once, which caches UNPAID (5 s).
	pollUnpaid := func(t *testing.T, user int64, rid string) {
		t.Helper()
		if r := h.do("GET", "/api/v1/orders/"+rid, "", h.as(user)); r.Code != 200 || r.json(t)["status"] != "UNPAID" {
			t.Fatalf("status before pay: %d %s", r.Code, r.Body)
		}
	}
	// afterPay: whatever pay answered, no later poll contradicts it.
	afterPay := func(t *testing.T, user int64, rid string, r resp) {
		t.Helper()
		fd.Restore()
		got := h.do("GET", "/api/v1/orders/"+rid, "", h.as(user))
		switch {
		case r.Code == http.StatusOK && r.json(t)["status"] == "PAID":
			if got.Code != 200 || got.json(t)["status"] != "PAID" {
				t.Fatalf("pay answered 200 PAID (MySQL %s), then a status poll answered %d %s", mysqlStatus(t, h, rid), got.Code, got.Body)
			}
		case r.Code == http.StatusServiceUnavailable:
			if st := mysqlStatus(t, h, rid); st != "UNPAID" {
				t.Fatalf("pay answered 503 %s but MySQL has %s: a 503 must change nothing", r.Body, st)
			}
			if got.Code != 200 || got.json(t)["status"] != "UNPAID" {
				t.Fatalf("after a 503 pay the status is %d %s, want UNPAID", got.Code, got.Body)
			}
		default:
			t.Fatalf("pay: %d %s", r.Code, r.Body)
		}
	}

	t.Run("cache write after the commit fails", func(t *testing.T) {
		const user = 40
		rid := insertOrder(t, h, item, user, "UNPAID", time.Hour)
		pollUnpaid(t, user, rid)
		testHookAfterPayCommit = fd.Cut
		r := h.do("POST", "/api/v1/orders/"+rid+"/pay", "", h.as(user))
		testHookAfterPayCommit = nil
		if r.Code != http.StatusOK || mysqlStatus(t, h, rid) != "PAID" {
			t.Fatalf("pay with Redis cut after the commit: %d %s (MySQL %s), want 200 PAID", r.Code, r.Body, mysqlStatus(t, h, rid))
		}
		afterPay(t, user, rid, r)
		// The poll that read PAID from MySQL repaired the cache: Redis
		// alone answers PAID now, even with MySQL's answer gone.
		if got := h.do("GET", "/api/v1/orders/"+rid, "", h.as(user)); got.Code != 200 || got.json(t)["status"] != "PAID" {
			t.Fatalf("second poll: %d %s", got.Code, got.Body)
		}
	})

	t.Run("redis down before the pay", func(t *testing.T) {
		const user = 41
		rid := insertOrder(t, h, item, user, "UNPAID", time.Hour)
		pollUnpaid(t, user, rid)
		fd.Cut()
		start := time.Now()
		r := h.do("POST", "/api/v1/orders/"+rid+"/pay", "", h.as(user))
		if took := time.Since(start); r.Code != http.StatusServiceUnavailable {
			t.Errorf("pay with Redis down: %d %s, want a 503 before MySQL is touched", r.Code, r.Body)
		} else {
			t.Logf("pay with Redis down answered 503 in %v", took)
		}
		afterPay(t, user, rid, r)
	})
}

// TestPayKeepsPollsOnRedis: the in-doubt marker costs MySQL reads only
// while a pay is in doubt. A pending request is not marked (pay is a 409,
// its polls stay on Redis), and after a pay whose cache write succeeded the
// polls are answered by the cache alone.
func TestPayKeepsPollsOnRedis(t *testing.T) {
	base := newHarness(t, harnessOpts{partitions: 1})
	h, reads := base.countingServer(t, "FROM request_outcomes")
	item := h.newItem(10, 1)

	pending := h.pendingOrder(50, item)
	if r := h.do("POST", "/api/v1/orders/"+pending+"/pay", "", h.as(50)); r.Code != http.StatusConflict || r.json(t)["error"] != "not_payable" {
		t.Fatalf("pay of a pending request: %d %s", r.Code, r.Body)
	}
	if r := h.do("POST", "/api/v1/orders/"+pending+"/pay", "", h.as(51)); r.Code != http.StatusNotFound {
		t.Fatalf("pay of another buyer's pending request: %d %s", r.Code, r.Body)
	}
	before := reads.Load()
	for range 3 {
		if r := h.do("GET", "/api/v1/orders/"+pending, "", h.as(50)); r.Code != 200 || r.json(t)["status"] != "PENDING" {
			t.Fatalf("poll of a pending request after pay: %d %s", r.Code, r.Body)
		}
	}
	if n := reads.Load() - before; n != 0 {
		t.Fatalf("PENDING polls after a refused pay read MySQL %d times, want none", n)
	}

	rid := insertOrder(t, h, item, 52, "UNPAID", time.Hour)
	if r := h.do("POST", "/api/v1/orders/"+rid+"/pay", "", h.as(52)); r.Code != http.StatusOK {
		t.Fatalf("pay: %d %s", r.Code, r.Body)
	}
	before = reads.Load()
	for range 3 {
		if r := h.do("GET", "/api/v1/orders/"+rid, "", h.as(52)); r.Code != 200 || r.json(t)["status"] != "PAID" {
			t.Fatalf("poll after pay: %d %s", r.Code, r.Body)
		}
	}
	if n := reads.Load() - before; n != 0 {
		t.Fatalf("polls of a paid order read MySQL %d times, want none (the PAID was cached)", n)
	}
}
