package httpapi

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/orderstatus"
	"github.com/flashsale-dev/flashsale/pkg/stock"
)

// TestWaitAnswersALostAnnouncement: a status stored with no announcement
// reaching the ingress (pub/sub is fire-and-forget: a status stored on a
// primary importing the item's slot is announced where no ingress listens,
// a failover drops messages in flight) is still answered, by the waiting
// poll's own re-read every FLASHSALE_STATUS_RECHECK: no announcement comes,
// and the end of the ?wait= would answer the PENDING the poll last read, so
// an UNPAID answer is the recheck's.
func TestWaitAnswersALostAnnouncement(t *testing.T) {
	h := waitHarness(t, 100)
	item := testenv.ItemID()
	h.putItem(item, 10, 1)
	rid := h.pendingOrder(43, item)
	got := make(chan timedStatus, 1)
	go func() { got <- h.poll(context.Background(), 43, rid, "10s") }()
	h.waitingOn(item, 1)
	// What status_put.lua stores, without its SPUBLISH.
	exp := time.Now().Add(15 * time.Minute).UTC()
	v := orderstatus.View{RequestID: rid, ItemID: item, Qty: 1, Status: orderstatus.Unpaid, OrderID: 1, ExpiresAt: &exp}
	b, err := json.Marshal(struct {
		orderstatus.View
		Owner int64 `json:"owner"`
	}{v, 43})
	if err != nil {
		t.Fatal(err)
	}
	key := stock.RequestKeys(item, rid).Status(rid)
	stored := time.Now()
	if err := h.rdb.Set(context.Background(), key, strconv.Itoa(int(orderstatus.RankUnpaid))+"|"+string(b), 15*time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	r := <-got
	if r.code != 200 || r.status != orderstatus.Unpaid {
		t.Fatalf("got %d %s %v after the status was stored unannounced, want 200 UNPAID: the poll waited out its 10s instead of reading again", r.code, r.body, r.at.Sub(stored))
	}
}
