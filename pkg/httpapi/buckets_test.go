package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/config"
	"github.com/flashsale-dev/flashsale/pkg/stock"
)

// usersIn returns n user ids whose home bucket of an item of buckets is b.
func usersIn(b, buckets, n int, first int64) []int64 {
	var out []int64
	for u := first; len(out) < n; u++ {
		u = testenv.UserIn(b, buckets, u)
		out = append(out, u)
	}
	return out
}

// TestNoEarlySoldOut: 8 units in 8 buckets, and every buyer's home is
// bucket 0. Once bucket 0's unit is gone, 7 units are left elsewhere, so no
// buyer may hear "sold out". With no rebalancer running (this harness has
// none) they wait FLASHSALE_BUCKET_WAIT and get 503 stock_moving with a
// Retry-After, and nothing is reserved for them.
func TestNoEarlySoldOut(t *testing.T) {
	// A per-user limit of 2 a second: the wait's repeated looks are one
	// attempt of the buyer's, not 40 (a limit counting them would answer
	// 429 rate_limited after the second look).
	h := newHarness(t, harnessOpts{partitions: 1, ingress: func(in *config.Ingress) { in.UserRateLimit = 2 }})
	item := testenv.ItemID()
	h.putBucketedItem(item, 8, 1, 8)
	users := usersIn(0, 8, 12, 1)
	var mu sync.Mutex
	codes := map[int]int{}
	var moving []resp
	var wg sync.WaitGroup
	start := time.Now()
	for _, u := range users {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := h.order(u, item, 1, "")
			mu.Lock()
			defer mu.Unlock()
			codes[r.Code]++
			if r.Code == http.StatusServiceUnavailable {
				moving = append(moving, r)
			}
		}()
	}
	wg.Wait()
	t.Logf("answers %v in %v", codes, time.Since(start).Round(time.Millisecond))
	if codes[http.StatusAccepted] != 1 || codes[http.StatusGone] != 0 || codes[http.StatusServiceUnavailable] != len(users)-1 {
		t.Fatalf("answers %v; want one 202, no 410 while 7 units are in other buckets, the rest 503", codes)
	}
	for _, r := range moving {
		if e := r.json(t)["error"]; e != "stock_moving" || r.Header.Get("Retry-After") == "" {
			t.Fatalf("503 %s (Retry-After %q); want stock_moving with a Retry-After", r.Body, r.Header.Get("Retry-After"))
		}
	}
	if left := h.redisStock(item); left != 7 {
		t.Fatalf("redis stock %d after the waits, want 7: a wait must reserve nothing", left)
	}
}

// TestBucketCountChanges: the count is validated, refused with 409
// sale_open while the sale window is open, changed between sales (stock
// laid out anew, Redis told), and refused with 409 in_flight while a
// reservation is pending, changing nothing.
func TestBucketCountChanges(t *testing.T) {
	h := newHarness(t, harnessOpts{partitions: 1})
	item := testenv.ItemID()
	putIn := func(buckets int, from, to time.Duration) resp {
		body := fmt.Sprintf(`{"name":"b","price_cents":1,"stock":40,"per_user_limit":1,"starts_at":%q,"ends_at":%q,"buckets":%d}`,
			time.Now().Add(from).UTC().Format(time.RFC3339), time.Now().Add(to).UTC().Format(time.RFC3339), buckets)
		return h.do(http.MethodPut, fmt.Sprintf("/api/v1/admin/items/%d", item), body, h.admin())
	}
	put := func(buckets int) resp { return putIn(buckets, -time.Hour, time.Hour) }
	between := func(buckets int) resp { return putIn(buckets, 2*time.Hour, 3*time.Hour) }
	for _, bad := range []int{0, -1, 65} {
		if r := put(bad); r.Code != http.StatusBadRequest || r.json(t)["error"] != "invalid_buckets" {
			t.Fatalf("buckets %d: %d %s; want 400 invalid_buckets", bad, r.Code, r.Body)
		}
	}
	if r := put(4); r.Code != http.StatusOK || r.json(t)["buckets"] != float64(4) {
		t.Fatalf("create with 4 buckets: %d %s", r.Code, r.Body)
	}
	if r := put(2); r.Code != http.StatusConflict || r.json(t)["error"] != "sale_open" {
		t.Fatalf("re-bucket to 2 during the sale: %d %s; want 409 sale_open", r.Code, r.Body)
	}
	if r := between(4); r.Code != http.StatusOK {
		t.Fatalf("close the window: %d %s", r.Code, r.Body)
	}
	if r := between(2); r.Code != http.StatusOK || r.json(t)["buckets"] != float64(2) {
		t.Fatalf("re-bucket to 2 between sales with nothing pending: %d %s", r.Code, r.Body)
	}
	if r := put(2); r.Code != http.StatusOK {
		t.Fatalf("open the window again: %d %s", r.Code, r.Body)
	}
	ctx := context.Background()
	if n, _, err := h.st.Buckets(ctx, item); err != nil || n != 2 {
		t.Fatalf("Redis bucket count %d, %v; want 2", n, err)
	}
	if left := h.redisStock(item); left != 40 {
		t.Fatalf("Redis stock %d after re-bucketing, want 40", left)
	}
	if r := h.order(7, item, 1, ""); r.Code != http.StatusAccepted {
		t.Fatalf("order: %d %s", r.Code, r.Body)
	}
	if r := between(2); r.Code != http.StatusOK {
		t.Fatalf("close the window: %d %s", r.Code, r.Body)
	}
	if r := between(8); r.Code != http.StatusConflict || r.json(t)["error"] != "in_flight" {
		t.Fatalf("re-bucket with a reservation pending: %d %s; want 409 in_flight", r.Code, r.Body)
	}
	if n, _, _ := h.st.Buckets(ctx, item); n != 2 {
		t.Fatalf("Redis bucket count %d after a refused change, want 2", n)
	}
	var mysqlBuckets int
	if err := h.db.QueryRowContext(ctx, "SELECT buckets FROM items WHERE id = ?", item).Scan(&mysqlBuckets); err != nil || mysqlBuckets != 2 {
		t.Fatalf("MySQL bucket count %d, %v after a refused change, want 2", mysqlBuckets, err)
	}
}

// TestQtyTwoSoldOutLeavesQtyOneBuyers: 1 unit left in 2 buckets. A buyer of
// 2 is rightly told sold out (the buckets together hold less than 2), but
// that must not mark the item sold out for everyone: the ingress's memory
// answered every qty-1 buyer 410 for FLASHSALE_SOLDOUT_TTL while the unit
// was still there (and each new qty-2 buyer renewed it).
func TestQtyTwoSoldOutLeavesQtyOneBuyers(t *testing.T) {
	h := newHarness(t, harnessOpts{partitions: 1, ingress: func(in *config.Ingress) { in.SoldOutTTL = time.Minute }})
	item := testenv.ItemID()
	h.putBucketedItem(item, 1, 2, 2) // 1 unit over 2 buckets: bucket 0 holds it
	if s := h.st.Client().Get(context.Background(), stock.BucketKeys(item, 0).Stock).Val(); s != "1" {
		t.Fatalf("bucket 0 holds %q, want the one unit", s)
	}
	home0 := usersIn(0, 2, 2, 1)
	if r := h.order(home0[0], item, 2, ""); r.Code != http.StatusGone {
		t.Fatalf("qty 2 with 1 unit left: %d %s, want 410 sold_out", r.Code, r.Body)
	}
	if r := h.order(home0[1], item, 1, ""); r.Code != http.StatusAccepted {
		t.Fatalf("qty 1 right after, the unit still in bucket 0: %d %s, want 202", r.Code, r.Body)
	}
}
