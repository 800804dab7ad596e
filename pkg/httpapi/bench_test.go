package httpapi

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/config"
	"github.com/flashsale-dev/flashsale/pkg/waitroom"
)

// benchServe serves req as the holder of token, in-process, and returns
// its code: what a benchmark's request costs without the harness's
// copies of the answer.
func benchServe(h *harness, req *http.Request, token string) int {
	req.Header.Set("Authorization", "Bearer "+token)
	rec := httptest.NewRecorder()
	h.srv.Echo().ServeHTTP(rec, req)
	return rec.Code
}

// benchOrder serves one POST /api/v1/orders in-process and returns its code.
func benchOrder(h *harness, body, token string) int {
	req := httptest.NewRequest(http.MethodPost, "/api/v1/orders", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json") // or 415, as any client
	return benchServe(h, req, token)
}

// BenchmarkAdmission: full accepted admissions (JWT, Redis Lua, synchronous
// Kafka publish with acks=all), many in parallel as in a sale.
func BenchmarkAdmission(b *testing.B) {
	h := newHarness(b, harnessOpts{partitions: 3})
	item := h.newItem(1_000_000_000, 1)
	body := `{"item_id":` + strconv.FormatInt(item, 10) + `,"qty":1}`
	var next atomic.Int64
	b.SetParallelism(16) // handlers mostly wait on Kafka acks
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			tok := h.token(next.Add(1), "")
			if c := benchOrder(h, body, tok); c != http.StatusAccepted {
				b.Errorf("status %d", c)
				return
			}
		}
	})
}

// BenchmarkAdmissionQueued is BenchmarkAdmission on an item with a waiting
// room, every order carrying its buyer's admission grant: side by side
// with BenchmarkAdmission (-bench 'Admission(Queued)?$' -count N), the
// difference is the queue's cost on an admitted order (the grant's check:
// a cached key and an HMAC, and admit.lua's mark).
func BenchmarkAdmissionQueued(b *testing.B) {
	h := newHarness(b, harnessOpts{partitions: 3})
	item := testenv.ItemID()
	now := time.Now()
	h.putRatedItem(item, 1_000_000_000, now.Add(-time.Minute), now.Add(-time.Second), now.Add(time.Hour), 100_000)
	key, err := waitroom.QueueGrantKey(context.Background(), h.db, item)
	if err != nil {
		b.Fatal(err)
	}
	var next atomic.Int64
	b.SetParallelism(16)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			user := next.Add(1)
			g := waitroom.SignGrant(key, item, user, time.Now().Add(time.Minute))
			body := `{"item_id":` + strconv.FormatInt(item, 10) + `,"qty":1,"admission_grant":"` + g + `"}`
			if c := benchOrder(h, body, h.token(user, "")); c != http.StatusAccepted {
				b.Errorf("status %d", c)
				return
			}
		}
	})
}

func benchSoldOut(b *testing.B, ttl time.Duration) {
	h := newHarness(b, harnessOpts{partitions: 1, ingress: func(in *config.Ingress) { in.SoldOutTTL = ttl }})
	item := h.newItem(0, 1)
	body := `{"item_id":` + strconv.FormatInt(item, 10) + `,"qty":1}`
	tok := h.token(42, "")
	benchOrder(h, body, tok) // Redis says sold out once; the flag is set
	b.ResetTimer()
	for b.Loop() {
		if c := benchOrder(h, body, tok); c != http.StatusGone {
			b.Fatalf("status %d", c)
		}
	}
}

// BenchmarkSoldOutFastPath: 410 answered from process memory.
func BenchmarkSoldOutFastPath(b *testing.B) { benchSoldOut(b, 10*time.Second) }

// BenchmarkSoldOutRedis: the same 410 with the memory flag off, so every
// answer costs the admission script's Redis round trip.
func BenchmarkSoldOutRedis(b *testing.B) { benchSoldOut(b, 0) }
