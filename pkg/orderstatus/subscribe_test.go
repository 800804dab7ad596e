package orderstatus_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/orderstatus"
	"github.com/flashsale-dev/flashsale/pkg/stock"
)

// TestStatusPutAnnounces: every status stored (one call or a pipelined
// batch) is announced on the item's channel with its request id and the
// value stored (which a woken poll answers without reading it back); a
// status kept back because a newer one is cached is not.
func TestStatusPutAnnounces(t *testing.T) {
	s := orderstatus.NewStore(stock.New(testenv.Redis(t)))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	item := testenv.ItemID()
	sub, err := s.SubscribeStatuses(ctx, item, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if err := s.PutStatus(ctx, item, "r1", orderstatus.RankFinal, []byte(`{"status":"PAID"}`)); err != nil {
		t.Fatal(err)
	}
	// Kept back (r1 is final): no announcement.
	if err := s.PutStatus(ctx, item, "r1", orderstatus.RankUnpaid, []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	other := testenv.ItemID() // another item's channel: not ours
	err = s.PutStatuses(ctx, []orderstatus.StatusEntry{
		{ItemID: item, RequestID: "r2", Rank: orderstatus.RankUnpaid, JSON: []byte(`{}`)},
		{ItemID: other, RequestID: "x", Rank: orderstatus.RankUnpaid, JSON: []byte(`{}`)},
		{ItemID: item, RequestID: "r3", Rank: orderstatus.RankFinal, JSON: []byte(`{}`)},
	})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for range 3 {
		a, gap, err := sub.Next(ctx)
		if err != nil || gap {
			t.Fatalf("next: %+v gap %v err %v", a, gap, err)
		}
		got = append(got, a.RequestID+" "+string(a.Status))
	}
	want := []string{
		"r1 " + fmt.Sprint(int(orderstatus.RankFinal)) + `|{"status":"PAID"}`,
		"r2 " + fmt.Sprint(int(orderstatus.RankUnpaid)) + "|{}",
		"r3 " + fmt.Sprint(int(orderstatus.RankFinal)) + "|{}",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("announced %q, want %q", got, want)
	}
}
