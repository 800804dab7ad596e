package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/segmentio/kafka-go"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/config"
	"github.com/flashsale-dev/flashsale/pkg/reqid"
	"github.com/flashsale-dev/flashsale/pkg/stock"
	"github.com/flashsale-dev/flashsale/pkg/store"
)

// An ingress SIGKILLed between its Redis reservation and its publish leaves
// a reserved request whose message never existed. A client that retries
// with the same Idempotency-Key (on this or any replica) must not get a 202
// for it: it gets 503 outcome_unknown naming the request, which it can poll.
func TestReplayOfUnpublishedRequestIsNot202(t *testing.T) {
	h := newHarness(t, harnessOpts{partitions: 1})
	item := h.newItem(5, 1)
	// What the dead ingress did: reserve, and nothing else.
	rid := reqid.New(item, time.Now())
	if r, err := h.st.Admit(context.Background(), stock.AdmitRequest{ItemID: item, UserID: 7, Qty: 1, RequestID: rid,
		IdempotencyKey: "crash", IdempotencyTTL: time.Hour}); err != nil || r.Code != stock.Admitted {
		t.Fatalf("reserve: %+v %v", r, err)
	}
	r := h.order(7, item, 1, "crash")
	if r.Code != http.StatusServiceUnavailable || r.json(t)["error"] != "outcome_unknown" || r.json(t)["request_id"] != rid {
		t.Fatalf("replay of a never-published request: %d %s, want 503 outcome_unknown naming %s", r.Code, r.Body, rid)
	}
	if n := len(h.readTopic()); n != 0 {
		t.Fatalf("%d messages in Kafka", n)
	}
	// A request that was published and acknowledged replays as 202.
	ok := h.order(8, item, 1, "fine")
	again := h.order(8, item, 1, "fine")
	if ok.Code != http.StatusAccepted || again.Code != http.StatusAccepted || again.json(t)["request_id"] != ok.json(t)["request_id"] {
		t.Fatalf("replay of a published request: %d %s then %d %s", ok.Code, ok.Body, again.Code, again.Body)
	}
}

// A Redis reply lost after admit.lua ran (the server took the stock and
// marked the buyer, the client timed out): the buyer must not be told
// "nothing was reserved" while their hold remains, and must not be locked
// out of the item once Redis answers again.
func TestLostRedisReplyNeverMisleadsOrLocksOut(t *testing.T) {
	fd := testenv.NewFaultDialer()
	const storeTimeout = 400 * time.Millisecond
	c := testenv.Common(t)
	rdb := redis.NewClient(&redis.Options{Addr: c.RedisAddrs()[0], Dialer: fd.DialContext,
		DialTimeout: storeTimeout, ReadTimeout: storeTimeout, WriteTimeout: storeTimeout, PoolSize: 8, MaxRetries: 1})
	t.Cleanup(func() { rdb.Close() })
	h := newHarness(t, harnessOpts{partitions: 1, rdb: rdb, storeTimeout: storeTimeout})
	item := h.newItem(5, 1)
	shared := stock.New(testenv.Redis(t)) // a healthy view of the same Redis
	// One order first, so the fault hits a connection in use: a new one's
	// handshake reply would be lost before the script is ever written
	// (the coalesced calls ride go-redis' separate pipeline pool).
	if r := h.order(6, item, 1, ""); r.Code != http.StatusAccepted {
		t.Fatalf("first order: %d %s", r.Code, r.Body)
	}

	fd.LoseReplies()
	r := h.order(7, item, 1, "")
	if r.Code != http.StatusServiceUnavailable {
		t.Fatalf("lost reply: %d %s", r.Code, r.Body)
	}
	body := r.json(t)
	_, held, _, err := shared.HeldBy(context.Background(), item, 0, 7)
	if err != nil {
		t.Fatal(err)
	}
	if !held {
		t.Fatalf("the fault did not take: the script ran and should hold the item for user 7 (answer %s)", r.Body)
	}
	if body["error"] != "outcome_unknown" {
		t.Fatalf("answered %s while the buyer still holds the item: %s", body["error"], r.Body)
	}
	rid, _ := body["request_id"].(string)
	if body["error"] == "outcome_unknown" && rid == "" {
		t.Fatalf("outcome_unknown without a request_id: %s", r.Body)
	}
	fd.Restore()

	// Within seconds of Redis answering again the hold is released and the
	// request is decided: the buyer can poll it and can buy.
	testenv.Eventually(t, 10*time.Second, 100*time.Millisecond, func() bool {
		_, held, _, err := shared.HeldBy(context.Background(), item, 0, 7)
		return err == nil && !held
	}, "the aborted hold was not released after Redis recovered")
	if rid != "" {
		if p := h.do(http.MethodGet, "/api/v1/orders/"+rid, "", h.as(7)); p.Code != 200 || p.json(t)["status"] != "REJECTED" {
			t.Fatalf("poll of the aborted request: %d %s", p.Code, p.Body)
		}
	}
	if r := h.order(7, item, 1, ""); r.Code != http.StatusAccepted {
		t.Fatalf("the buyer is locked out after the blip: %d %s", r.Code, r.Body)
	}
	if s := h.redisStock(item); s != 3 {
		t.Fatalf("redis stock %d, want 3 (two units sold, the aborted one back)", s)
	}
}

// Kafka did not acknowledge and the arbiter is unreachable (the old
// "orphaned" answer): the outcome is unknown, and the answer says so and
// names the request instead of claiming nothing was reserved.
func TestPublishAndArbiterDownIsOutcomeUnknown(t *testing.T) {
	kfd, mfd := testenv.NewFaultDialer(), testenv.NewFaultDialer()
	h := newHarness(t, harnessOpts{partitions: 1, transport: &kafka.Transport{Dial: kfd.DialContext}, mysqlFaults: mfd,
		storeTimeout: 500 * time.Millisecond, ingress: func(in *config.Ingress) { in.PublishTimeout = 500 * time.Millisecond }})
	item := h.newItem(5, 1)
	kfd.Cut()
	mfd.Cut()
	r := h.order(7, item, 1, "")
	if r.Code != http.StatusServiceUnavailable || r.json(t)["error"] != "outcome_unknown" {
		t.Fatalf("publish and arbiter down: %d %s, want 503 outcome_unknown", r.Code, r.Body)
	}
	rid, _ := r.json(t)["request_id"].(string)
	if _, ok, err := h.st.GetReservation(context.Background(), item, rid); err != nil || !ok {
		t.Fatalf("the request %q it names must be the reservation left for the sweep (%v %v)", rid, ok, err)
	}
	// The buyer who retries learns which request holds the item.
	kfd.Restore()
	again := h.order(7, item, 1, "")
	if again.Code != http.StatusConflict || again.json(t)["error"] != "already_purchased" || again.json(t)["request_id"] != rid {
		t.Fatalf("retry: %d %s, want 409 already_purchased naming %s", again.Code, again.Body, rid)
	}
}

// GET /api/v1/orders?item_id=N finds the request the caller holds, from
// Redis, and from MySQL when Redis does not have the item.
func TestHeldOrderLookup(t *testing.T) {
	h := newHarness(t, harnessOpts{partitions: 1})
	item := h.newItem(5, 1)
	first := h.order(7, item, 1, "")
	if first.Code != http.StatusAccepted {
		t.Fatalf("order: %d %s", first.Code, first.Body)
	}
	rid := first.json(t)["request_id"].(string)
	path := fmt.Sprintf("/api/v1/orders?item_id=%d", item)
	if r := h.do(http.MethodGet, path, "", h.as(7)); r.Code != 200 || r.json(t)["request_id"] != rid || r.json(t)["status"] != "PENDING" {
		t.Fatalf("held order: %d %s", r.Code, r.Body)
	}
	if r := h.do(http.MethodGet, path, "", h.as(8)); r.Code != http.StatusNotFound || r.json(t)["error"] != "not_found" {
		t.Fatalf("another user: %d %s", r.Code, r.Body)
	}
	for _, bad := range []string{"", "0", "-1", "abc", "01", "99999999999999999999"} {
		if r := h.do(http.MethodGet, "/api/v1/orders?item_id="+bad, "", h.as(7)); r.Code != http.StatusBadRequest || r.json(t)["error"] != "invalid_item_id" {
			t.Errorf("item_id=%q: %d %s", bad, r.Code, r.Body)
		}
	}
	if r := h.do(http.MethodGet, path, "", nil); r.Code != http.StatusUnauthorized {
		t.Fatalf("anonymous: %d", r.Code)
	}

	// The order as MySQL has it, with Redis knowing nothing of the item.
	ctx := context.Background()
	if _, err := h.db.ExecContext(ctx, `INSERT INTO orders (request_id, user_id, item_id, qty, price_cents, status, expires_at)
		VALUES (?, 9, ?, 1, 999, 'UNPAID', DATE_ADD(NOW(3), INTERVAL 1 HOUR))`, "r-held-9", item); err != nil {
		t.Fatal(err)
	}
	if err := store.InsertDecisions(ctx, h.db, []store.Decision{{RequestID: "r-held-9", ItemID: item, UserID: 9, Qty: 1, Outcome: store.Ordered}}); err != nil {
		t.Fatal(err)
	}
	k := stock.KeysOf(item)
	if err := h.rdb.Del(ctx, k.Stock, k.Holders).Err(); err != nil {
		t.Fatal(err)
	}
	if r := h.do(http.MethodGet, path, "", h.as(9)); r.Code != 200 || r.json(t)["request_id"] != "r-held-9" || r.json(t)["status"] != "UNPAID" {
		t.Fatalf("held order from MySQL: %d %s", r.Code, r.Body)
	}
	if r := h.do(http.MethodGet, path, "", h.as(10)); r.Code != http.StatusNotFound {
		t.Fatalf("no order in MySQL either: %d %s", r.Code, r.Body)
	}
}
