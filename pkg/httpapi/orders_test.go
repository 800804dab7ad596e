package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/admission"
	"github.com/flashsale-dev/flashsale/pkg/config"
)

// TestRaceHundredUnits: 10,000 goroutines of 2,000 users (duplicates with
// and without a shared Idempotency-Key) race for 100 units, of one item
// and of an item of 8 stock buckets.
func TestRaceHundredUnits(t *testing.T) {
	for _, buckets := range []int{1, 8} {
		t.Run(fmt.Sprintf("buckets=%d", buckets), func(t *testing.T) { raceHundredUnits(t, buckets) })
	}
}

func raceHundredUnits(t *testing.T, buckets int) {
	h := newHarness(t, harnessOpts{partitions: 3})
	item := testenv.ItemID()
	h.putBucketedItem(item, 100, 1, buckets)

	const users, perUser = 2000, 5
	var (
		mu       sync.Mutex
		ridsOf   = map[int64]map[string]bool{}
		allRids  = map[string]int64{}
		codes    = map[int]int{}
		minStock atomic.Int64
		wg       sync.WaitGroup
	)
	minStock.Store(100)
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() { // watch the Redis stock for negatives while the race runs
		defer close(sampled)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if n, ok, err := h.st.Stock(context.Background(), item); err == nil && ok && n < minStock.Load() {
				minStock.Store(n)
			}
		}
	}()
	start := make(chan struct{})
	for i := range users * perUser {
		user := int64(i%users) + 1
		key := ""
		if i/users%2 == 0 { // rounds 0, 2, 4 replay one key; 1, 3 are plain duplicates
			key = fmt.Sprintf("k-%d", user)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			r := h.order(user, item, 1, key)
			mu.Lock()
			defer mu.Unlock()
			codes[r.Code]++
			if r.Code == http.StatusAccepted {
				rid := r.json(t)["request_id"].(string)
				if ridsOf[user] == nil {
					ridsOf[user] = map[string]bool{}
				}
				ridsOf[user][rid] = true
				allRids[rid] = user
			}
		}()
	}
	close(start)
	wg.Wait()
	close(stop)
	<-sampled

	t.Logf("answers by status: %v", codes)
	if len(allRids) != 100 || len(ridsOf) != 100 {
		t.Fatalf("accepted %d request ids for %d users, want exactly 100 and 100", len(allRids), len(ridsOf))
	}
	if codes[http.StatusAccepted] <= 100 {
		t.Errorf("%d answers 202: no replay got the first answer back", codes[http.StatusAccepted])
	}
	for u, rids := range ridsOf {
		if len(rids) != 1 {
			t.Errorf("user %d got %d different request ids", u, len(rids))
		}
	}
	for code := range codes {
		switch code {
		case http.StatusAccepted, http.StatusConflict, http.StatusGone:
		default:
			t.Errorf("unexpected status %d (%d times)", code, codes[code])
		}
	}
	if s := h.redisStock(item); s != 0 {
		t.Errorf("redis stock %d, want 0", s)
	}
	if m := minStock.Load(); m < 0 {
		t.Errorf("redis stock went negative: %d", m)
	}
	msgs := h.readTopic()
	seen := map[string]bool{}
	for _, m := range msgs {
		seen[m.RequestID] = true
		if want, ok := allRids[m.RequestID]; !ok || want != m.UserID || m.ItemID != item {
			t.Errorf("message %+v does not match a 202", m)
		}
	}
	ctx := context.Background()
	for rid := range allRids {
		if !seen[rid] {
			t.Errorf("202 %s has no Kafka message", rid)
		}
		if _, ok, err := h.st.GetReservation(ctx, item, rid); err != nil || !ok {
			t.Errorf("202 %s has no reservation (%v)", rid, err)
		}
	}
	if len(seen) != 100 {
		t.Errorf("%d distinct messages, want 100", len(seen))
	}
}

// TestGrabOne: one unit, 10,000 distinct buyers at once: exactly one 202,
// also with the unit in one of 8 stock buckets (the other buckets' buyers
// must wait for it and then hear "sold out", never early, never a 503).
func TestGrabOne(t *testing.T) {
	for _, buckets := range []int{1, 8} {
		t.Run(fmt.Sprintf("buckets=%d", buckets), func(t *testing.T) { grabOne(t, buckets) })
	}
}

func grabOne(t *testing.T, buckets int) {
	h := newHarness(t, harnessOpts{partitions: 1})
	item := testenv.ItemID()
	h.putBucketedItem(item, 1, 1, buckets)
	var accepted, soldOut, other atomic.Int64
	var mu sync.Mutex
	others := map[string]int{}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range 10000 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			switch r := h.order(int64(i)+1, item, 1, ""); r.Code {
			case http.StatusAccepted:
				accepted.Add(1)
			case http.StatusGone:
				soldOut.Add(1)
			default:
				other.Add(1)
				mu.Lock()
				others[fmt.Sprintf("%d %s", r.Code, r.Body)]++
				mu.Unlock()
			}
		}()
	}
	close(start)
	wg.Wait()
	if accepted.Load() != 1 || other.Load() != 0 {
		t.Fatalf("accepted %d, sold out %d, other %d (%v); want exactly one 202 and the rest 410", accepted.Load(), soldOut.Load(), other.Load(), others)
	}
	if msgs := h.readTopic(); len(msgs) != 1 {
		t.Fatalf("%d messages, want 1", len(msgs))
	}
	if s := h.redisStock(item); s != 0 {
		t.Fatalf("redis stock %d", s)
	}
}

// TestIdempotentReplayAfterAnswer: a later replay returns the first answer.
func TestIdempotentReplayAfterAnswer(t *testing.T) {
	h := newHarness(t, harnessOpts{partitions: 1})
	item := h.newItem(10, 1)
	first := h.order(7, item, 1, "abc")
	again := h.order(7, item, 1, "abc")
	if first.Code != 202 || again.Code != 202 || first.json(t)["request_id"] != again.json(t)["request_id"] {
		t.Fatalf("first %d %s, replay %d %s", first.Code, first.Body, again.Code, again.Body)
	}
	if r := h.order(7, item, 1, "other"); r.Code != http.StatusConflict || r.json(t)["error"] != "already_purchased" ||
		r.json(t)["request_id"] != first.json(t)["request_id"] {
		t.Fatalf("new key of a buyer: %d %s", r.Code, r.Body)
	}
	if r := h.order(8, item, 1, "abc"); r.Code != 202 || r.json(t)["request_id"] == first.json(t)["request_id"] {
		t.Fatalf("another user's same key must be independent: %d %s", r.Code, r.Body)
	}
	if s := h.redisStock(item); s != 8 {
		t.Fatalf("stock %d, want 8", s)
	}
}

// TestSoldOutFlagKeepsReplays: an item's first sold-out flag only counts:
// every request goes to Redis, so a holder is told 409 already_purchased
// (never 410) and a replay gets its 202. Once it has seen
// admission.BitsWorthAt requests it is marked again with the holder bitmap
// snapshot: unkeyed requests and keyed ones of users whose holder bit is
// clear are answered from memory, a holder's requests still go to Redis.
func TestSoldOutFlagKeepsReplays(t *testing.T) {
	h := newHarness(t, harnessOpts{partitions: 1, ingress: func(in *config.Ingress) { in.SoldOutTTL = 5 * time.Second }})
	item := h.newItem(1, 1)
	first := h.order(7, item, 1, "k7")
	if first.Code != http.StatusAccepted {
		t.Fatalf("first: %d %s", first.Code, first.Body)
	}
	if r := h.order(8, item, 1, "k8"); r.Code != http.StatusGone { // Redis says sold out and the flag is set
		t.Fatalf("second buyer: %d %s", r.Code, r.Body)
	}
	hits := testenv.Metric(t, h.reg, "flashsale_soldout_cache_hits_total")
	holder := func(when string) {
		t.Helper()
		if r := h.order(7, item, 1, ""); r.Code != http.StatusConflict || r.json(t)["request_id"] != first.json(t)["request_id"] {
			t.Fatalf("%s: the holder's unkeyed request: %d %s, want 409 already_purchased naming its request", when, r.Code, r.Body)
		}
		if again := h.order(7, item, 1, "k7"); again.Code != http.StatusAccepted || again.json(t)["request_id"] != first.json(t)["request_id"] {
			t.Fatalf("%s: the holder's replay: %d %s, want the first 202", when, again.Code, again.Body)
		}
	}
	holder("first flag")
	for u := int64(100); u < 100+admission.BitsWorthAt-2; u++ { // the holder's two made 2
		key := ""
		if u%2 == 0 {
			key = fmt.Sprintf("k%d", u)
		}
		if r := h.order(u, item, 1, key); r.Code != http.StatusGone {
			t.Fatalf("non-buyer %d: %d %s", u, r.Code, r.Body)
		}
	}
	if got := testenv.Metric(t, h.reg, "flashsale_soldout_cache_hits_total"); got != hits {
		t.Fatalf("the first flag answered from memory (hits %v -> %v), want every request sent to Redis", hits, got)
	}
	// The flag has seen BitsWorthAt requests and ended: the next sold-out
	// answer from Redis marks it again, with the snapshot.
	if r := h.order(200, item, 1, "k200"); r.Code != http.StatusGone {
		t.Fatalf("non-buyer marking the flag: %d %s", r.Code, r.Body)
	}
	hits = testenv.Metric(t, h.reg, "flashsale_soldout_cache_hits_total")
	if r := h.order(201, item, 1, "k201"); r.Code != http.StatusGone {
		t.Fatalf("keyed non-buyer: %d %s", r.Code, r.Body)
	}
	if r := h.order(202, item, 1, ""); r.Code != http.StatusGone {
		t.Fatalf("unkeyed non-buyer: %d %s", r.Code, r.Body)
	}
	if got := testenv.Metric(t, h.reg, "flashsale_soldout_cache_hits_total"); got != hits+2 {
		t.Fatalf("with the snapshot non-buyers were not answered from memory (hits %v -> %v)", hits, got)
	}
	holder("with the snapshot")
	if got := testenv.Metric(t, h.reg, "flashsale_soldout_cache_hits_total"); got != hits+2 {
		t.Fatalf("the holder's requests were answered from memory (hits %v -> %v)", hits, got)
	}
}

// TestUserRateLimitAndShedding: the per-user window answers 429 with
// Retry-After; the in-process limiter sheds with 503 without reserving.
func TestUserRateLimitAndShedding(t *testing.T) {
	h := newHarness(t, harnessOpts{partitions: 1, ingress: func(in *config.Ingress) { in.UserRateLimit = 2 }})
	item := h.newItem(10, 1)
	var limited resp
	for range 4 {
		if r := h.order(5, item, 1, ""); r.Code == http.StatusTooManyRequests {
			limited = r
		}
	}
	if limited.Code != http.StatusTooManyRequests || limited.Header.Get("Retry-After") == "" || limited.json(t)["error"] != "rate_limited" {
		t.Fatalf("want a 429 with Retry-After, got %d %v %s", limited.Code, limited.Header, limited.Body)
	}

	shed := newHarness(t, harnessOpts{partitions: 1, ingress: func(in *config.Ingress) { in.AdmissionRPS = 1 }})
	item2 := testenv.ItemID()
	shed.putItem(item2, 100, 1)
	codes := map[int]int{}
	for u := range 20 {
		codes[shed.order(int64(u)+1, item2, 1, "").Code]++
	}
	if codes[http.StatusServiceUnavailable] == 0 || codes[http.StatusAccepted] == 0 {
		t.Fatalf("want some 202 and some 503 under AdmissionRPS=1, got %v", codes)
	}
	if s := shed.redisStock(item2); s != int64(100-codes[http.StatusAccepted]) {
		t.Fatalf("stock %d after %d accepted: shed requests reserved something", s, codes[http.StatusAccepted])
	}
}
