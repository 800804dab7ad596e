package httpapi

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// benchPoll serves one GET /api/v1/orders/{rid} in-process and returns its
// code.
func benchPoll(h *harness, rid, token string) int {
	return benchServe(h, httptest.NewRequest(http.MethodGet, "/api/v1/orders/"+rid, nil), token)
}

// BenchmarkPendingPoll: status polls of a pending request, the hot poll of a
// sale (one Redis lookup, no MySQL), many in parallel.
func BenchmarkPendingPoll(b *testing.B) {
	h := newHarness(b, harnessOpts{partitions: 1})
	item := h.newItem(10, 1)
	rid := h.pendingOrder(7, item)
	tok := h.token(7, "")
	b.SetParallelism(8)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if c := benchPoll(h, rid, tok); c != http.StatusOK {
				b.Errorf("status %d", c)
				return
			}
		}
	})
}
