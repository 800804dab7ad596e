package waitroom

import (
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/flashsale-dev/flashsale/pkg/api"
	"github.com/flashsale-dev/flashsale/pkg/store"
	"github.com/flashsale-dev/flashsale/pkg/waitroom/draw"
)

// storelessRoom is a Room with no store behind it: what is tested here is
// the estimate from the reads its readers already hold, which needs none.
// Its rates are timed by the returned clock, which the test steps.
func storelessRoom(t *testing.T) (*Room, *time.Time) {
	t.Helper()
	r := NewRoom(RoomConfig{StoreTimeout: time.Second}, nil, nil, NewRoomMetrics(prometheus.NewRegistry()), slog.New(slog.DiscardHandler))
	t.Cleanup(r.Stop)
	now := time.Unix(1_800_000_000, 0)
	r.admits.rates.now = func() time.Time { return now }
	return r, &now
}

// watched is a reader's state with the gate read at serving, tickets taken
// and stock left at at, and no goroutine behind it.
func watched(serving, tickets, left int64, at time.Time) *watchedItem {
	wi := newWatchedItem()
	wi.setGate(serving, tickets, at)
	wi.setStock(left)
	return wi
}

func estimateOf(t *testing.T, v api.TicketStatus) int64 {
	t.Helper()
	if v.State != api.TicketWaiting || v.EstimatedWaitMs == nil {
		t.Fatalf("%+v, want waiting with an estimate", v)
	}
	return *v.EstimatedWaitMs
}

// TestWaitEstimateAtTheSeenRate: a waiting ticket's estimate at the end of
// its long poll counts its positions to go at the rate the gate was seen
// admitting at (here held to 50 a second by the pipeline against a
// queue_rate of 200), not at queue_rate.
func TestWaitEstimateAtTheSeenRate(t *testing.T) {
	r, now := storelessRoom(t)
	it := Item{ID: 7, StartsAt: now.Add(-time.Minute), EndsAt: now.Add(time.Hour), ItemQueue: store.ItemQueue{QueueRate: 200}}
	var serving int64 = 100
	for range 30 { // 3 s of reads, every 100 ms, the gate moving 5 a read
		*now = now.Add(100 * time.Millisecond)
		serving += 5
		r.admits.rates.observe(it.ID, serving, 10_000)
	}
	pos := serving + 100
	v := api.TicketStatus{State: api.TicketWaiting, ItemID: it.ID, Position: &pos}
	got := estimateOf(t, r.waitingView(t.Context(), it, Ticket{ID: "t"}, v, watched(serving, 10_000, 50, *now)))
	if want := AdmitIn(100, 50).Milliseconds(); got != want {
		t.Errorf("estimate %d ms for 100 positions with the gate seen at 50 a second, want %d ms (at queue_rate: %d)",
			got, want, AdmitIn(100, 200).Milliseconds())
	}
}

// TestWaitEstimateCountsFromTheRead: the estimate counts from the read of
// the gate it answers with, not from the answer: a gate read 200 ms before
// has gone on at its rate (here queue_rate, 200 a second: 40 positions), so
// a ticket 200 positions beyond the read is 160 away. A read stamped after
// the answer (another clock's) counts as the answer's. The estimated moment
// of admission is the answer's time plus the wait.
func TestWaitEstimateCountsFromTheRead(t *testing.T) {
	r, now := storelessRoom(t)
	it := Item{ID: 11, StartsAt: now.Add(-time.Minute), EndsAt: now.Add(time.Hour), ItemQueue: store.ItemQueue{QueueRate: 200}}
	pos := int64(300)
	for _, c := range []struct {
		name string
		read time.Duration // before the answer
		togo int64
	}{
		{"read 200 ms before", 200 * time.Millisecond, 160},
		{"read as it answers", 0, 200},
		{"read stamped 50 ms after", -50 * time.Millisecond, 200},
		{"read 2 s before: the gate is past it", 2 * time.Second, 0},
	} {
		v := api.TicketStatus{State: api.TicketWaiting, ItemID: it.ID, Position: &pos}
		v = r.waitingView(t.Context(), it, Ticket{ID: "t"}, v, watched(100, 10_000, 50, now.Add(-c.read)))
		got := estimateOf(t, v)
		if want := AdmitIn(c.togo, 200).Milliseconds(); got != want {
			t.Errorf("%s: estimate %d ms, want %d ms (%d positions at 200 a second)", c.name, got, want, c.togo)
		}
		// The same estimate as a moment: the answer's time plus the wait.
		if at, want := v.EstimatedAdmissionAt, now.Add(time.Duration(got)*time.Millisecond); at == nil || !at.Equal(want) {
			t.Errorf("%s: estimated_admission_at %v, want %v (the answer's time plus %d ms)", c.name, at, want, got)
		}
	}
}

// wantCloseEstimate checks an estimate of got ms, computed between before
// and after: the time from then to closes plus AdmitIn(places, rate).
func wantCloseEstimate(t *testing.T, got int64, before, after, closes time.Time, places int64, rate float64) {
	t.Helper()
	draw := AdmitIn(places, rate).Milliseconds()
	if lo, hi := closes.Sub(after).Milliseconds()+draw, closes.Sub(before).Milliseconds()+draw+1; got < lo || got > hi {
		t.Errorf("estimate %d ms, want the time to the close (%d..%d ms) plus %d ms for %d places at %g a second",
			got, lo-draw, hi-draw-1, draw, places, rate)
	}
}

// TestOpenRoundEstimateCountsTheDraw: a ticket whose round is still open
// waits until the close and then for its place in line, which the draw
// makes uniform over the round: the estimate is the time to the close
// plus the positions to the middle of the round's tickets so far (after
// the earlier rounds' not yet admitted) at the rate. The long poll's
// answer at the end of its wait gives it as it stands then.
func TestOpenRoundEstimateCountsTheDraw(t *testing.T) {
	r, now := storelessRoom(t)
	ctx := t.Context()
	t.Run("the first round: the middle of the tickets taken", func(t *testing.T) {
		start := time.Now().Add(time.Hour)
		it := Item{ID: 8, StartsAt: start, EndsAt: start.Add(time.Hour), ItemQueue: store.ItemQueue{QueueRate: 10}}
		tk := Ticket{ID: "t", TakenAt: start.Add(-time.Minute)}
		v := api.TicketStatus{State: api.TicketWaiting, ItemID: it.ID}
		withRound(&v, it, tk)
		before := time.Now()
		got := estimateOf(t, r.waitingView(ctx, it, tk, v, watched(0, 41, 50, *now)))
		after := time.Now()
		// 41 tickets: the 21st place on average, at 10 a second.
		wantCloseEstimate(t, got, before, after, start, 21, 10)
	})
	t.Run("a later round: behind the earlier rounds' tickets still waiting", func(t *testing.T) {
		// Rounds of 10 s in a 20 s window: round 0 closed 5 s ago with
		// arrivals 1..30, round 1 closes in 5 s; 51 tickets taken, the
		// gate at 20.
		start := time.Now().Add(-15 * time.Second)
		it := Item{ID: 9, StartsAt: start, EndsAt: start.Add(time.Hour), ItemQueue: store.ItemQueue{QueueRate: 10, QueueShuffleWindow: 20 * time.Second, QueueRound: 10 * time.Second}}
		r.positions.m[it.ID] = drawnOrder{drawnAt: time.Now(), closed: 1, bound: 30, rounds: []roundTree{{round: draw.Round{N: 0, First: 1, Last: 30}}}}
		tk := Ticket{ID: "t", TakenAt: time.Now().Add(-time.Second)}
		v := api.TicketStatus{State: api.TicketWaiting, ItemID: it.ID}
		withRound(&v, it, tk)
		closes := *v.RoundClosesAt
		before := time.Now()
		got := estimateOf(t, r.waitingView(ctx, it, tk, v, watched(20, 51, 50, *now)))
		after := time.Now()
		// Round 1 so far: arrivals 31..51, 21 tickets, the 11th of them
		// on average; the gate is at round 0's end (30) by the close, so
		// 11 places to go at 10 a second.
		wantCloseEstimate(t, got, before, after, closes, 11, 10)
	})
}

// TestAfterDraw: the wait after a round's close of a ticket drawn in it,
// on average.
func TestAfterDraw(t *testing.T) {
	for _, c := range []struct {
		name           string
		ahead, inRound int64
		serving        float64
		ttc            time.Duration
		rate           float64
		want           time.Duration
	}{
		{"the first round, one ticket", 0, 1, 0, time.Second, 10, 100*time.Millisecond + observeLag},
		{"the first round, 100 tickets: the 50.5th place", 0, 100, 0, time.Minute, 10, 5050*time.Millisecond + observeLag},
		{"the gate catches up with the earlier rounds by the close", 30, 21, 20, 5 * time.Second, 10, 1100*time.Millisecond + observeLag},
		{"the gate still in the earlier rounds at the close", 300, 21, 20, 5 * time.Second, 10, (230+11)*100*time.Millisecond + observeLag},
	} {
		if got := afterDraw(c.ahead, c.inRound, c.serving, c.ttc, c.rate); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
