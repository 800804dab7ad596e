//go:build cluster

package orderstatus_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/orderstatus"
	"github.com/flashsale-dev/flashsale/pkg/stock"
)

// A slot migration under a status subscription: when the slot of the
// item's status channel moves to another primary, the old one sends
// `sunsubscribe` and announces nothing more. The subscription must follow
// the slot (subscribe again on its new primary), so a long poll woken by
// that gap, which reads the old status and waits again, is woken by the
// status change that follows, within 1 s, instead of waiting out its time.
func TestClusterStatusSubscriptionFollowsSlotMigration(t *testing.T) {
	cc := testenv.RedisCluster(t)
	s := orderstatus.NewStore(stock.New(cc))
	item, slot := testenv.ItemInEmptySlot(t, cc)
	home := testenv.ClusterNodeAt(t, testenv.PrimaryOf(t, cc, item))
	dst, others := testenv.MoveTargets(t, cc, home)
	t.Cleanup(func() { testenv.PutSlotBack(t, slot, home, dst, others) })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.PutStatus(ctx, item, "before", orderstatus.RankUnpaid, []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	sub, err := s.SubscribeStatuses(ctx, item, 0)
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu     sync.Mutex
		events []subEvent
	)
	nextDone := make(chan struct{})
	go func() {
		defer close(nextDone)
		for {
			a, gap, err := sub.Next(ctx)
			if err != nil {
				return
			}
			rid := a.RequestID
			mu.Lock()
			events = append(events, subEvent{at: time.Now(), rid: rid, gap: gap})
			mu.Unlock()
		}
	}()
	t.Cleanup(func() { sub.Close(); <-nextDone })

	testenv.MoveSlot(t, slot, home, dst, others, 1, func(string) {})
	moved := time.Now()
	if got := testenv.PrimaryOf(t, cc, item); got != dst.Addr {
		t.Fatalf("slot %d on %s after the move, want %s", slot, got, dst.Addr)
	}
	// The move's gap (the old primary's sunsubscribe) has reached the
	// subscriber before the status changes, so the change can only wake a
	// subscription that followed the slot: the move's own gap does not
	// count as the wake.
	testenv.Eventually(t, 5*time.Second, 10*time.Millisecond, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return slices.ContainsFunc(events, func(e subEvent) bool { return e.gap })
	}, "slot %d moved %s -> %s: the subscription saw no gap", slot, home.Addr, dst.Addr)
	changed := time.Now()
	if err := s.PutStatus(ctx, item, "after", orderstatus.RankFinal, []byte(`{}`)); err != nil {
		t.Fatalf("put status on the new primary: %v", err)
	}
	var woke *subEvent
	testenv.Eventually(t, 3*time.Second, 10*time.Millisecond, func() bool {
		mu.Lock()
		defer mu.Unlock()
		for i := range events {
			if events[i].at.After(changed) {
				woke = &events[i]
				return true
			}
		}
		return false
	}, "slot %d moved %s -> %s: no announcement or gap within 3 s of the status change (events: %v)",
		slot, home.Addr, dst.Addr, lazyEvents(&mu, &events, moved))
	took := woke.at.Sub(changed)
	t.Logf("slot %d moved %s -> %s; woken %v after the status change by %s; events since the move: %s",
		slot, home.Addr, dst.Addr, took.Round(time.Millisecond), woke, lazyEvents(&mu, &events, moved))
	if took > time.Second {
		t.Errorf("a waiter would be woken %v after the status change, want within 1 s", took)
	}
}

type subEvent struct {
	at  time.Time
	rid string
	gap bool
}

func (e *subEvent) String() string {
	if e.gap {
		return "gap"
	}
	return fmt.Sprintf("announcement %q", e.rid)
}

type eventList struct {
	mu     *sync.Mutex
	events *[]subEvent
	since  time.Time
}

func lazyEvents(mu *sync.Mutex, events *[]subEvent, since time.Time) fmt.Stringer {
	return eventList{mu, events, since}
}

func (l eventList) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := "["
	for i, e := range *l.events {
		if i > 0 {
			out += ", "
		}
		out += fmt.Sprintf("%s at %+v", e.String(), e.at.Sub(l.since).Round(time.Millisecond))
	}
	return out + "]"
}
