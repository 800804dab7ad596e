//go:build cluster

package rebalance

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/reqid"
	"github.com/flashsale-dev/flashsale/pkg/stock"
	"github.com/flashsale-dev/flashsale/pkg/store"
	"github.com/flashsale-dev/flashsale/pkg/waitroom"
)

// A bucketed item's waitlist on a Redis Cluster whose two buckets' slots
// are on two primaries: a unit released in bucket 1 waits in bucket 1's
// pool, on its primary; a waitlist transfer moves it to bucket 0's pool, on
// the other (each step one script in one slot, the take run twice answering
// the same); the shares are read across both primaries in one pipeline and
// each balances; the unit offered in bucket 0 is claimed there once; the
// audit of both stores holds, bucket by bucket.
func TestClusterWaitlistAcrossPrimaries(t *testing.T) {
	e, cc := newClusterEnv(t)
	ctx := context.Background()
	item := onTwoPrimaries(t, cc, func() int64 { return e.queuedItem(20, 2) })
	e.release(item, 2, 1, 10, 1) // bucket 1 sold out, one unit in its pool
	if _, w := e.conservedWaitlist(item, 2, 20); !slices.Equal(pools(w), []int64{0, 1}) {
		t.Fatalf("before: pools %v; want [0 1]", pools(w))
	}

	tr, err := planTransfer(ctx, e.db, store.TransferWaitlist, item, 2, 1, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := markLive(ctx, e.rdb, item, tr.ID); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if out, err := transferOut(ctx, e.rdb, refOf(tr)); err != nil || out != stepOK {
			t.Fatalf("out step on bucket 1's primary, run %d: %q %v", i+1, out, err)
		}
	}
	if w := e.shares(item, 2); w.Moving() != 1 || !slices.Equal(pools(w), []int64{0, 0}) {
		t.Fatalf("between the halves: %+v; want the unit moving", w)
	}
	if d, err := e.r.drive(ctx, tr); err != nil || d.state != store.TransferDone {
		t.Fatalf("drive to the end: %+v %v", d, err)
	}
	if _, w := e.conservedWaitlist(item, 2, 20); !slices.Equal(pools(w), []int64{1, 0}) || w.Moving() != 0 {
		t.Fatalf("after the transfer: %+v; want the unit in bucket 0's pool", w)
	}
	e.settled(item)

	u := testenv.UserIn(0, 2, e.user+1)
	line := []waitroom.Candidate{{Position: 1, Ticket: fmt.Sprintf("%032x", 1), UserID: u}}
	if p, err := waitroom.NewStore(e.st).OfferReleasedIn(ctx, item, 0, time.Minute, line, false); err != nil || p.Offered != 1 {
		t.Fatalf("offer in bucket 0: %+v %v", p, err)
	}
	for i, want := range []stock.AdmitCode{stock.Admitted, stock.Already} {
		r, err := e.st.Admit(ctx, stock.AdmitRequest{ItemID: item, Buckets: 2, Bucket: 0, UserID: u, Qty: 1,
			RequestID: reqid.NewIn(item, 0, time.Now()), Now: time.Now(), Claim: true})
		if err != nil || r.Code != want {
			t.Fatalf("claim %d in bucket 0: %+v %v; want %s", i+1, r, err, want)
		}
	}
	if _, w := e.conservedWaitlist(item, 2, 20); w.Claimed != 1 || w.Held() != 0 {
		t.Fatalf("after the claim: %+v", w)
	}
	e.auditOK(item)
}
