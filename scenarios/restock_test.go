package scenarios

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// soldOutTTL is the ingress' FLASHSALE_SOLDOUT_TTL (its default): a
// restock sells on every replica within it.
const soldOutTTL = 500 * time.Millisecond

// TestRestockLiveSale restocks a live sale twice and withdraws once, each
// change in the middle of a burst of buyers racing for the item, through
// the real ingress, consumers and reaper. After every burst the audit is
// exact (per bucket too), MySQL's orders are exactly the 202s, and the
// stock left is the total less them. After a restock whose burst ended
// with units left, no buyer is told 410 more than the sold-out bound after
// the restock's answer (units were there all along: only sales took them).
func TestRestockLiveSale(t *testing.T) {
	for _, buckets := range []int{1, 8} {
		t.Run(fmt.Sprintf("%d buckets", buckets), func(t *testing.T) {
			s := shared(t)
			item := s.newItem(100, buckets, 1)
			total, sold := int64(100), int64(0)
			user := atomic.Int64{}
			user.Store(time.Now().UnixNano() % 1_000_000_000 * 1000)
			for i, w := range []struct {
				delta   int64
				buyers  int
				opAfter int // buyers started before the change is sent
			}{{+150, 200, 60}, {-80, 100, 20}, {+120, 80, 20}} {
				var wg sync.WaitGroup
				var mu sync.Mutex
				var accepted []answer
				var gone []answer
				var users []int64
				sem := make(chan struct{}, 32)
				started := make(chan struct{}, w.buyers)
				// buy is one buyer's order and the bookkeeping of its answer.
				buy := func() {
					u := user.Add(1)
					a := s.order(item, u, 1, "")
					mu.Lock()
					defer mu.Unlock()
					switch {
					case a.Code == http.StatusAccepted:
						accepted = append(accepted, a)
						users = append(users, u)
					case a.Code == http.StatusGone:
						gone = append(gone, a)
					case a.Code == http.StatusServiceUnavailable && a.Error == "stock_moving":
					default:
						t.Errorf("order of user %d: %s %s", u, a, a.Body)
					}
				}
				for range w.buyers {
					wg.Add(1)
					sem <- struct{}{}
					go func() {
						defer wg.Done()
						defer func() { <-sem }()
						started <- struct{}{}
						buy()
					}()
					if len(started) >= w.opAfter {
						break
					}
				}
				// The change races the buyers still to come.
				op := s.call(http.MethodPost, itemPath(item, "/stock"), s.admin,
					map[string]any{"delta": w.delta, "operation_id": fmt.Sprintf("live-%d-%d", item, i)}, nil)
				for range w.buyers - len(started) {
					wg.Add(1)
					sem <- struct{}{}
					go func() {
						defer wg.Done()
						defer func() { <-sem }()
						buy()
					}()
				}
				wg.Wait()
				if op.Code != http.StatusOK {
					t.Fatalf("change %+d: %s %s", w.delta, op, op.Body)
				}
				var res struct {
					Applied int64 `json:"applied"`
				}
				if err := json.Unmarshal(op.Body, &res); err != nil {
					t.Fatal(err)
				}
				if w.delta > 0 && res.Applied != w.delta || w.delta < 0 && (res.Applied > 0 || res.Applied < w.delta) {
					t.Fatalf("change %+d applied %d", w.delta, res.Applied)
				}
				total += res.Applied
				sold += int64(len(accepted))
				// Every 202 becomes an order: Redis never admitted a unit
				// MySQL did not have.
				for j, a := range accepted {
					var v struct {
						RequestID string `json:"request_id"`
					}
					_ = json.Unmarshal(a.Body, &v)
					st, err := s.decided(users[j], v.RequestID, 20*time.Second)
					if err != nil || st.Status != "UNPAID" {
						t.Fatalf("a 202 of wave %d ended %+v %v, want UNPAID", i, st, err)
					}
				}
				au := s.checkAudit(item, buckets, total, 0, sold, 0)
				units, _ := s.ordersInMySQL(item)
				if units != sold {
					t.Fatalf("wave %d: %d units in MySQL's orders, %d buyers told 202", i, units, sold)
				}
				t.Logf("wave %d: change %+d applied %d, %d × 202, %d × 410, total %d, left %d", i, w.delta, res.Applied, len(accepted), len(gone), au.Total, au.RedisStock)
				if w.delta > 0 && au.RedisStock > 0 {
					for _, g := range gone {
						if g.Sent.After(op.Got.Add(soldOutTTL + 100*time.Millisecond)) {
							t.Errorf("a buyer sent %v after the restock's answer was told 410 with units left", g.Sent.Sub(op.Got))
						}
					}
				}
			}
		})
	}
}
