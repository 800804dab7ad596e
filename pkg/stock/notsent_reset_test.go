package stock_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/reqid"
	"github.com/flashsale-dev/flashsale/pkg/stock"
)

// An admission whose command reached Redis and ran, whose connection was
// then reset before the reply came back, and whose retry found the server
// refusing connections, must not be "not sent": the buyer would be told
// 503 unavailable (nothing reserved) while Redis holds the reservation and
// the buyer mark, and is refused as "already" for the whole orphan grace.
// go-redis retries after EOF or a reset on a command it already wrote and
// returns the last attempt's error only, a dial refusal here.
//
// The fault is a proxy (testenv.ResetProxy) in front of the stack's real
// Redis: the write survives on the server, as with AOF or a promoted
// replica that had it.
func TestNotSentNeverAfterAWrittenAttempt(t *testing.T) {
	direct := testenv.Redis(t)
	if _, ok := direct.(*redis.Client); !ok {
		t.Fatal("needs the single-node Redis (stack.sh env)")
	}
	target := testenv.Common(t).RedisAddr
	for _, coalesced := range []bool{false, true} {
		name := "alone"
		if coalesced {
			name = "coalesced"
		}
		t.Run(name, func(t *testing.T) {
			proxy := testenv.NewResetProxy(t, target, time.Second)
			// The deployables' client (one retry, one dial per attempt).
			rdb := stock.NewClient([]string{proxy.Addr}, 3*time.Second, 8)
			t.Cleanup(func() { rdb.Close() })
			s := stock.New(rdb)
			if coalesced {
				co := stock.NewCoalescer(rdb, stock.CoalesceConfig{MaxBatch: 16, Flushers: 2})
				t.Cleanup(co.Close)
				s = s.WithCoalescer(co)
			}
			ds := stock.New(direct)
			item := warmItem(t, ds, 10, 1)
			// The scripts loaded and a connection pooled, so the armed
			// write is the admission itself.
			if r := admit(t, s, item, 1, 1, ""); r.Code != stock.Admitted {
				t.Fatalf("warm-up admission: %+v", r)
			}
			for user := int64(2); user < 6; user++ {
				rid := reqid.New(item, time.Now())
				proxy.Arm(rid)
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				r, err := s.Admit(ctx, stock.AdmitRequest{ItemID: item, UserID: user, Qty: 1, RequestID: rid})
				cancel()
				if proxy.Resets() != user-1 {
					t.Fatalf("user %d: the proxy fired %d times, want %d", user, proxy.Resets(), user-1)
				}
				held, isHeld, _, herr := ds.HeldBy(context.Background(), item, 0, user)
				if herr != nil {
					t.Fatal(herr)
				}
				t.Logf("user %d: admit answered %+v, err %v (not sent: %v); Redis holds the buyer: %v (%s)",
					user, r, err, stock.NotSent(err), isHeld, held)
				if !isHeld {
					t.Fatalf("user %d: the proxy forwarded the admission but Redis holds no buyer mark: the fault did not happen", user)
				}
				if err != nil && stock.NotSent(err) {
					t.Errorf("user %d: admission classed never sent (503 unavailable, nothing reserved) while Redis holds its reservation: %v", user, err)
				}
				if err == nil && (r.Code != stock.Admitted || held != rid) {
					t.Errorf("user %d: answered %+v, Redis holds %s for request %s", user, r, held, rid)
				}
				// Let the proxy listen again before the next round.
				testenv.Eventually(t, 5*time.Second, 50*time.Millisecond, func() bool {
					return rdb.Ping(context.Background()).Err() == nil
				}, "the proxy does not accept connections again")
			}
		})
	}
}
