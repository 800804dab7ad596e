package waitroom_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/api"
	"github.com/flashsale-dev/flashsale/pkg/stock"
	"github.com/flashsale-dev/flashsale/pkg/waitroom"
)

// soldOutRoom is a Room over the stack with a queued item of one unit
// whose sale started a second ago, user 7's ticket of it, and a sell that
// takes the last unit (as an order would, through the ledger).
func soldOutRoom(t *testing.T) (room *waitroom.Room, it waitroom.Item, ticket string, sell func()) {
	t.Helper()
	ctx := context.Background()
	db, _ := testenv.MySQL(t)
	st := stock.New(testenv.Redis(t))
	id := queuedItem(t, db, st, 1, time.Now().Add(-time.Second), 100, 0)
	it, err := waitroom.ReadItem(ctx, db, id)
	if err != nil {
		t.Fatal(err)
	}
	room = waitroom.NewRoom(waitroom.RoomConfig{StoreTimeout: 2 * time.Second}, st, db, waitroom.NewRoomMetrics(prometheus.NewRegistry()), slog.New(slog.DiscardHandler))
	t.Cleanup(room.Stop)
	tk, _, err := room.Take(ctx, it, 7)
	if err != nil {
		t.Fatal(err)
	}
	sell = func() {
		res, err := st.Admit(ctx, stock.AdmitRequest{ItemID: id, Buckets: 1, UserID: 999, Qty: 1, RequestID: fmt.Sprintf("last-%d", id), Now: time.Now(), Granted: true})
		if err != nil || res.Code != stock.Admitted {
			t.Fatalf("order of the last unit: %+v, %v", res, err)
		}
	}
	return room, it, tk.Ticket, sell
}

// TestTicketNeverAdmittedAfterTheSellOut: a ticket whose turn has come is
// told admitted only if the item still has stock in Redis at that read,
// whatever this replica's reader of the item last saw: the reader reads
// every 100 ms and its read stands for 150 ms, so a ticket read just after
// the last unit went used to answer admitted (with a grant) while every
// order got 410. The reader's state is planted here as it stands in that
// window (stock 1, the ticket's turn come, read just now), after the last
// unit was sold.
func TestTicketNeverAdmittedAfterTheSellOut(t *testing.T) {
	room, it, ticket, sell := soldOutRoom(t)
	sell()
	p := waitroom.PlantAdmitRead(room, it.ID, 1, 1000)
	t.Cleanup(p.Remove)
	if !p.Fresh() {
		t.Fatal("the planted read is not taken as fresh: the test would not test the cache")
	}
	v, err := room.Status(t.Context(), it, 7, ticket, 0)
	if err != nil || v.State != api.TicketSoldOut || v.AdmissionGrant != "" || v.StockLeft != 0 {
		t.Fatalf("ticket read after the sell-out: %+v, %v; want sold_out with no grant", v, err)
	}
}

// TestWaitingTicketNeverAdmittedAfterTheSellOut: a long poll woken by the
// gate reaching its position answers admitted only if Redis still has
// stock; here the reader saw stock 1 before the last unit went and then
// the gate move, which used to answer admitted with a grant.
func TestWaitingTicketNeverAdmittedAfterTheSellOut(t *testing.T) {
	room, it, ticket, sell := soldOutRoom(t)
	// A reader's state with the ticket's turn not yet come (serving 0)
	// and stock 1; no goroutine reads for it, so only the test moves it.
	p := waitroom.PlantAdmitRead(room, it.ID, 1, 0)
	t.Cleanup(p.Remove)
	answered := make(chan api.TicketStatus, 1)
	go func() {
		v, err := room.Status(context.Background(), it, 7, ticket, 20*time.Second)
		if err != nil {
			t.Errorf("long poll: %v", err)
		}
		answered <- v
	}()
	testenv.Eventually(t, 10*time.Second, 5*time.Millisecond, func() bool { return p.Waiters() == 1 },
		"the long poll did not wait on the planted reader")
	sell()
	p.Move(1000) // the gate's move, as the reader saw it
	select {
	case v := <-answered:
		if v.State != api.TicketSoldOut || v.AdmissionGrant != "" || v.StockLeft != 0 {
			t.Fatalf("long poll woken by the gate after the sell-out answered %+v, want sold_out with no grant", v)
		}
	case <-time.After(15 * time.Second): // a hang guard: the poll's own wait is 20 s
		t.Fatal("the long poll was not woken by the gate's move")
	}
}

// commandCount counts the commands a Redis client sends.
type commandCount struct{ n atomic.Int64 }

func (c *commandCount) DialHook(next redis.DialHook) redis.DialHook { return next }
func (c *commandCount) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { c.n.Add(1); return next(ctx, cmd) }
}
func (c *commandCount) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error { c.n.Add(int64(len(cmds))); return next(ctx, cmds) }
}

// TestTicketReadsShareTheItemRead: 300 reads of tickets of one item at
// once (a round's close, when every page asks again) cost a handful of
// Redis commands, not three round trips each: they share one read of the
// item's stock and gate. Each read alone was 3 commands and more (900 in
// all); at the bench's 11,000 tickets they emptied the client's pool and
// answered 503.
func TestTicketReadsShareTheItemRead(t *testing.T) {
	ctx := context.Background()
	db, _ := testenv.MySQL(t)
	rdb := testenv.Redis(t)
	st := stock.New(rdb)
	id := queuedItem(t, db, st, 10, time.Now().Add(time.Hour), 100, 0)
	it, err := waitroom.ReadItem(ctx, db, id)
	if err != nil {
		t.Fatal(err)
	}
	room := waitroom.NewRoom(waitroom.RoomConfig{StoreTimeout: 5 * time.Second}, st, db, waitroom.NewRoomMetrics(prometheus.NewRegistry()), slog.New(slog.DiscardHandler))
	t.Cleanup(room.Stop)
	const n = 300
	tickets := make([]string, n)
	for i := range n {
		tk, _, err := room.Take(ctx, it, int64(i+1))
		if err != nil {
			t.Fatal(err)
		}
		tickets[i] = tk.Ticket
	}
	// Every ticket read once already (the tickets themselves are cached):
	// what is counted is the reads of the item.
	for i := range n {
		if _, err := room.Status(ctx, it, int64(i+1), tickets[i], 0); err != nil {
			t.Fatal(err)
		}
	}
	var count commandCount
	rdb.AddHook(&count)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if v, err := room.Status(ctx, it, int64(i+1), tickets[i], 0); err != nil || v.State != api.TicketWaiting {
				t.Errorf("ticket %d: %+v, %v", i, v, err)
			}
		}()
	}
	wg.Wait()
	if c := count.n.Load(); c > 20 {
		t.Fatalf("%d reads of one item's tickets sent %d Redis commands, want a shared read (a few)", n, c)
	}
}
