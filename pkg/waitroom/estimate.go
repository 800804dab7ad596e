package waitroom

import (
	"context"
	"math"
	"time"
)

// observeLag is how much later than the rate alone says a buyer sees their
// admission, on average: the gate moves in passes (FLASHSALE_QUEUE_GATE_INTERVAL,
// 100 ms by default) and a waiting poll learns of a move at the watcher's
// next read (every 100 ms), half an interval each. The bench measured the
// estimate without it (p90 error 34%, most of it on short waits).
const observeLag = 100 * time.Millisecond

// AdmitIn is how long until a buyer n positions beyond the serving position
// sees their admission at rate a second: n/rate, rounded up to the
// millisecond, plus observeLag. It is the estimate a ticket's answer gives,
// at the rate the gate is seen admitting at (admit_rate.go).
func AdmitIn(n int64, rate float64) time.Duration {
	return admitIn(float64(n), rate)
}

// admitIn is AdmitIn for n positions on average (a fraction, for a place
// not drawn yet).
func admitIn(n, rate float64) time.Duration {
	if !(rate > 0) {
		rate = 1
	}
	return time.Duration(math.Ceil(max(n, 0)*1000/rate))*time.Millisecond + observeLag
}

// afterDraw is the expected wait, from its round's close, of a ticket
// drawn among inRound tickets (itself one of them) behind ahead positions
// of the earlier rounds, with the gate at serving now and the close ttc
// away. The draw makes its place uniform over the round's block, (inRound
// + 1) / 2 into it on average; by the close the gate has gone on at rate,
// but no further than the earlier rounds' end, where it stops until then.
func afterDraw(ahead, inRound, serving int64, ttc time.Duration, rate float64) time.Duration {
	atClose := min(ahead, serving+int64(rate*ttc.Seconds()))
	return admitIn(float64(ahead-atClose)+float64(inRound+1)/2, rate)
}

// placedWait is the estimate of a ticket at position pos of item it with
// the gate at serving: its positions to go at the rate the gate is seen
// admitting at.
func (r *Room) placedWait(it Item, pos, serving int64) *int64 {
	ms := AdmitIn(pos-serving, r.admits.rates.rate(it.ID, it.QueueRate)).Milliseconds()
	return &ms
}

// openWait is the estimate at now of ticket t of item it, whose round
// (closing at closes) has not been drawn yet, with the gate at serving and
// tickets taken: the time to the close, then the expected wait for its
// place (afterDraw). The round's tickets so far are those taken after the
// earlier rounds' (which the item's drawn order says: read, at most a
// second old, for a round after the first); more may come before the
// close, so the estimate grows with the round. Without the earlier
// rounds' end (a store not answering) it is the time to the close alone.
func (r *Room) openWait(ctx context.Context, it Item, t Ticket, closes, now time.Time, serving, tickets int64) *int64 {
	ttc := max(closes.Sub(now), 0)
	ms := ttc.Milliseconds()
	ahead, err := r.positions.Ahead(ctx, it, RoundOf(it, t.TakenAt))
	if err != nil {
		return &ms
	}
	rate := r.admits.rates.rate(it.ID, it.QueueRate)
	ms = (ttc + afterDraw(ahead, max(tickets-ahead, 1), serving, ttc, rate)).Milliseconds()
	return &ms
}
