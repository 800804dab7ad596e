package waitroom

import (
	"context"
	"math"
	"time"

	"github.com/flashsale-dev/flashsale/pkg/api"
)

// observeLag is how much later than the rate alone says a buyer sees their
// admission, on average. The gate moves in passes (FLASHSALE_QUEUE_GATE_INTERVAL,
// 100 ms by default), so it reaches a position half a pass after its rate
// would; but the estimate counts from a read of the gate, which was as far
// behind the rate, half a pass, on average (placedWait): the two cancel. What
// is left is the watcher's next read of the move (every 100 ms), half an
// interval. The bench, with the answers' server times, measured the rest of
// the estimates' error at 44 ms (median) with a lag of 100 ms: the pass
// counted twice.
const observeLag = 50 * time.Millisecond

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
func afterDraw(ahead, inRound int64, serving float64, ttc time.Duration, rate float64) time.Duration {
	atClose := min(float64(ahead), serving+rate*ttc.Seconds())
	return admitIn(float64(ahead)-atClose+float64(inRound+1)/2, rate)
}

// placedWait is the estimate of a ticket at position pos of item it,
// with the gate read at serving at read: its positions to go at the rate
// the gate is seen admitting at, counted from the read. The read is up to
// an interval and a half old when the answer is made (itemReads,
// admitWatch), and the gate went on meanwhile: an estimate counted from
// the answer was long by that much (bench -bots-queue, seed 1: 886 of 886
// estimates long, by 231 ms at the median, most of the error of the short
// waits).
func (r *Room) placedWait(it Item, pos, serving int64, read time.Time) time.Duration {
	rate := r.admits.rates.rate(it.ID, it.QueueRate)
	return admitIn(float64(pos)-r.servingAt(serving, read, rate), rate)
}

// servingAt is where a gate read at serving at read stands now, on
// average, at rate a second (a read stamped later than now, by a clock
// ahead, counts as now's).
func (r *Room) servingAt(serving int64, read time.Time, rate float64) float64 {
	return float64(serving) + rate*max(r.admits.rates.now().Sub(read), 0).Seconds()
}

// openWait is the estimate at now of ticket t of item it, whose round
// (closing at closes) has not been drawn yet, with the gate read at
// serving at read and tickets taken: the time to the close, then the
// expected wait for its place (afterDraw). The round's tickets so far are
// those taken after the earlier rounds' (which the item's drawn order
// says: read, at most a second old, for a round after the first); more
// may come before the close, so the estimate grows with the round.
// Without the earlier rounds' end (a store not answering) it is the time
// to the close alone.
func (r *Room) openWait(ctx context.Context, it Item, t Ticket, closes, now time.Time, serving int64, read time.Time, tickets int64) time.Duration {
	ttc := max(closes.Sub(now), 0)
	ahead, err := r.positions.Ahead(ctx, it, RoundOf(it, t.TakenAt))
	if err != nil {
		return ttc
	}
	rate := r.admits.rates.rate(it.ID, it.QueueRate)
	return ttc + afterDraw(ahead, max(tickets-ahead, 1), r.servingAt(serving, read, rate), ttc, rate)
}

// withEstimate sets waiting view v's estimate, wait from now: as a wait
// (estimated_wait_ms) and as the moment it ends by the server's clock
// (estimated_admission_at). The two say the same when the answer is made;
// the moment still says it when the answer arrives late. At a round's
// close every page of the item asks at once, and the answers' delivery
// took 30-600 ms more in the bench (its pages on the server's two cores):
// a wait read on arrival is long by that, a countdown to the moment is not.
func (r *Room) withEstimate(v *api.TicketStatus, wait time.Duration) {
	ms := wait.Milliseconds()
	at := r.admits.rates.now().Add(wait).UTC().Truncate(time.Millisecond)
	v.EstimatedWaitMs, v.EstimatedAdmissionAt = &ms, &at
}
