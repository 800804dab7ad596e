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
	"github.com/flashsale-dev/flashsale/pkg/audit"
	"github.com/flashsale-dev/flashsale/pkg/config"
)

func stockPath(id int64) string { return fmt.Sprintf("/api/v1/admin/items/%d/stock", id) }

func (h *harness) changeStock(id, delta int64, op string) resp {
	return h.do(http.MethodPost, stockPath(id), fmt.Sprintf(`{"delta":%d,"operation_id":%q}`, delta, op), h.admin())
}

func (h *harness) auditExact(when string, id int64) audit.Report {
	h.t.Helper()
	rep, err := audit.Item(context.Background(), h.db, h.st, id)
	if err != nil {
		h.t.Fatalf("%s: audit: %v", when, err)
	}
	if !rep.OK || len(rep.Info) > 0 {
		h.t.Fatalf("%s: audit not exact: %v %v", when, rep.Violations, rep.Info)
	}
	return rep
}

// TestAdminStockValidation: bad input is a 400 (or 404, 409, 415) with a
// JSON error, and changes nothing.
func TestAdminStockValidation(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	id := testenv.ItemID()
	h.putItem(id, 10, 1)
	if r := h.changeStock(id, 5, "first"); r.Code != http.StatusOK {
		t.Fatalf("restock: %d %s", r.Code, r.Body)
	}
	for _, c := range []struct {
		name, path, body, ctype string
		hdr                     map[string]string
		code                    int
		errCode                 string
	}{
		{"zero delta", stockPath(id), `{"delta":0,"operation_id":"a"}`, "", nil, 400, "invalid_delta"},
		{"no delta", stockPath(id), `{"operation_id":"a"}`, "", nil, 400, "invalid_delta"},
		{"fraction", stockPath(id), `{"delta":1.5,"operation_id":"a"}`, "", nil, 400, "invalid_json"},
		{"delta as string", stockPath(id), `{"delta":"5","operation_id":"a"}`, "", nil, 400, "invalid_json"},
		{"null delta", stockPath(id), `{"delta":null,"operation_id":"a"}`, "", nil, 400, "invalid_json"},
		{"huge delta", stockPath(id), `{"delta":1000000001,"operation_id":"a"}`, "", nil, 400, "invalid_delta"},
		{"no operation id", stockPath(id), `{"delta":5}`, "", nil, 400, "invalid_operation_id"},
		{"empty operation id", stockPath(id), `{"delta":5,"operation_id":""}`, "", nil, 400, "invalid_operation_id"},
		{"operation id with a space", stockPath(id), `{"delta":5,"operation_id":"a b"}`, "", nil, 400, "invalid_operation_id"},
		{"operation id too long", stockPath(id), fmt.Sprintf(`{"delta":5,"operation_id":"%065d"}`, 0), "", nil, 400, "invalid_operation_id"},
		{"unknown field", stockPath(id), `{"delta":5,"operation_id":"a","x":1}`, "", nil, 400, "invalid_json"},
		{"not an object", stockPath(id), `[1]`, "", nil, 400, "invalid_json"},
		{"text/plain", stockPath(id), `{"delta":5,"operation_id":"a"}`, "text/plain", nil, 415, "unsupported_media_type"},
		{"unknown item", stockPath(id + 1), `{"delta":5,"operation_id":"b"}`, "", nil, 404, "not_found"},
		{"id reused, other delta", stockPath(id), `{"delta":6,"operation_id":"first"}`, "", nil, 409, "operation_conflict"},
		{"id reused, other item", stockPath(id + 1), `{"delta":5,"operation_id":"first"}`, "", nil, 404, "not_found"},
		{"buyer's token", stockPath(id), `{"delta":5,"operation_id":"c"}`, "", h.as(7), 403, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			hdr := c.hdr
			if hdr == nil {
				hdr = h.admin()
			}
			if c.ctype != "" {
				hdr = map[string]string{"Authorization": hdr["Authorization"], "Content-Type": c.ctype}
			}
			r := h.do(http.MethodPost, c.path, c.body, hdr)
			if r.Code != c.code {
				t.Fatalf("%d %s, want %d", r.Code, r.Body, c.code)
			}
			if m := r.json(t); c.errCode != "" && m["error"] != c.errCode {
				t.Fatalf("error %v, want %s (%s)", m["error"], c.errCode, r.Body)
			}
		})
	}
	rep := h.auditExact("after the refusals", id)
	if rep.Total != 15 || h.redisStock(id) != 15 {
		t.Fatalf("total %d redis %d after refusals, want 15", rep.Total, h.redisStock(id))
	}
	if got := testenv.Metric(t, h.reg, "flashsale_stock_changes_total", "direction", "restock", "result", "applied"); got != 1 {
		t.Fatalf("applied restocks counted %v, want 1", got)
	}
	if got := testenv.Metric(t, h.reg, "flashsale_stock_changes_total", "direction", "restock", "result", "conflict"); got != 1 {
		t.Fatalf("conflicts counted %v, want 1", got)
	}
}

// TestAdminStockReplay: a retried call answers the same and changes nothing.
func TestAdminStockReplay(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	id := testenv.ItemID()
	h.putItem(id, 10, 1)
	var first map[string]any
	for i := range 3 {
		r := h.changeStock(id, -25, "w1")
		if r.Code != http.StatusOK {
			t.Fatalf("withdraw %d: %d %s", i, r.Code, r.Body)
		}
		m := r.json(t)
		if m["applied"] != float64(-10) || m["replayed"] != (i > 0) {
			t.Fatalf("withdraw %d: %s, want applied -10 (all that was free), replayed %v", i, r.Body, i > 0)
		}
		if i == 0 {
			first = m
		} else if m["operation_id"] != first["operation_id"] || m["delta"] != first["delta"] {
			t.Fatalf("replay %s differs from %v", r.Body, first)
		}
	}
	h.auditExact("after the withdraw", id)
	if n := h.redisStock(id); n != 0 {
		t.Fatalf("redis stock %d, want 0", n)
	}
	if r := h.order(100, id, 1, ""); r.Code != http.StatusGone {
		t.Fatalf("order after a withdraw to zero: %d %s, want 410", r.Code, r.Body)
	}
	if got := testenv.Metric(t, h.reg, "flashsale_stock_changes_total", "direction", "withdraw", "result", "replayed"); got != 2 {
		t.Fatalf("replays counted %v, want 2", got)
	}
}

// sellOutHard sells item out on h and asks it again until h answers 410
// from memory (a flag with its holder snapshot: the first flag of an item
// only counts, see admission.BitsWorthAt).
func (h *harness) sellOutHard(item int64, firstUser int64) int64 {
	h.t.Helper()
	u := firstUser
	deadline := time.Now().Add(10 * time.Second)
	for testenv.Metric(h.t, h.reg, "flashsale_soldout_cache_hits_total") < 3 {
		if time.Now().After(deadline) {
			h.t.Fatal("no sold-out answer from memory")
		}
		if r := h.order(u, item, 1, ""); r.Code != http.StatusGone {
			h.t.Fatalf("order of user %d: %d %s, want 410", u, r.Code, r.Body)
		}
		u++
	}
	return u
}

// TestRestockedItemSellsAgain: an item sold out (both replicas answering
// 410 from memory) is restocked through replica a. a sells at once; b
// once its FLASHSALE_SOLDOUT_TTL has passed (polled for, with a deadline
// far past the TTL that only guards against a hang).
func TestRestockedItemSellsAgain(t *testing.T) {
	a := newHarness(t, harnessOpts{})
	b := a.replica(t)
	id := testenv.ItemID()
	a.putItem(id, 2, 1)
	for u := int64(1); u <= 2; u++ {
		if r := a.order(u, id, 1, ""); r.Code != http.StatusAccepted {
			t.Fatalf("order %d: %d %s", u, r.Code, r.Body)
		}
	}
	u := a.sellOutHard(id, 1000)
	u = b.sellOutHard(id, u)
	if r := a.changeStock(id, 5, "more"); r.Code != http.StatusOK {
		t.Fatalf("restock: %d %s", r.Code, r.Body)
	}
	if r := a.order(u, id, 1, ""); r.Code != http.StatusAccepted {
		t.Fatalf("the restocking replica, just after the restock: %d %s, want 202", r.Code, r.Body)
	}
	u++
	// b answers 410 from memory for at most its FLASHSALE_SOLDOUT_TTL after
	// the read that saw it sold out, then asks Redis and sells. The deadline
	// only guards against a hang (20 TTLs): how soon is not asserted.
	start := time.Now()
	bound := testIngress().SoldOutTTL
	testenv.Eventually(t, 20*bound, 5*time.Millisecond, func() bool {
		r := b.order(u, id, 1, "")
		u++
		if r.Code != http.StatusAccepted && r.Code != http.StatusGone {
			t.Fatalf("replica b: %d %s", r.Code, r.Body)
		}
		return r.Code == http.StatusAccepted
	}, "replica b still sold out after the restock (FLASHSALE_SOLDOUT_TTL = %v)", bound)
	t.Logf("replica b sold again %v after the restock (bound FLASHSALE_SOLDOUT_TTL = %v)", time.Since(start), bound)
	a.auditExact("after", id)
}

// TestStockChangesUnderSale: buyers race POST /orders at an item in waves
// while it is restocked twice and withdrawn once, each operation racing a
// wave; between waves (the sale still live) and at the end the audit is
// exact, and the units admitted plus those left are the final total.
func TestStockChangesUnderSale(t *testing.T) {
	for _, buckets := range []int{1, 4} {
		t.Run(fmt.Sprintf("%d buckets", buckets), func(t *testing.T) {
			// No rebalancer runs here: a buyer whose home bucket is empty
			// waits the bucket wait for nothing (503 stock_moving), so keep
			// it short.
			h := newHarness(t, harnessOpts{ingress: func(in *config.Ingress) { in.Buckets.Wait = 50 * time.Millisecond }})
			id := testenv.ItemID()
			h.putBucketedItem(id, 300, 1, buckets)
			h.auditExact("before", id)
			var admitted, user atomic.Int64
			user.Store(10_000)
			total := int64(300)
			for i, op := range []int64{+200, -150, +100} {
				var wg sync.WaitGroup
				for range 16 {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for range 15 {
							r := h.order(user.Add(1), id, 1, "")
							switch r.Code {
							case http.StatusAccepted:
								admitted.Add(1)
							case http.StatusGone, http.StatusServiceUnavailable:
							default:
								t.Errorf("order: %d %s", r.Code, r.Body)
							}
						}
					}()
				}
				r := h.changeStock(id, op, fmt.Sprintf("op-%d", i))
				wg.Wait()
				if r.Code != http.StatusOK {
					t.Fatalf("change %+d: %d %s", op, r.Code, r.Body)
				}
				ans := decode[stockAnswer](t, r)
				if op > 0 && ans.Applied != op || op < 0 && (ans.Applied > 0 || ans.Applied < op) {
					t.Fatalf("change %+d applied %d", op, ans.Applied)
				}
				total += ans.Applied
				rep := h.auditExact(fmt.Sprintf("after wave %d", i), id)
				if rep.Total != total {
					t.Fatalf("total %d, want %d", rep.Total, total)
				}
				if left := h.redisStock(id); left+admitted.Load() != total {
					t.Fatalf("wave %d: %d admitted + %d left != total %d", i, admitted.Load(), left, total)
				}
			}
		})
	}
}
