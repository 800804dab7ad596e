package waitroom

import "time"

// observeLag is how much later than the rate alone says a buyer sees their
// admission, on average: the gate moves in passes (FLASHSALE_QUEUE_GATE_INTERVAL,
// 100 ms by default) and a waiting poll learns of a move at the watcher's
// next read (every 100 ms), half an interval each. The bench measured the
// estimate without it (p90 error 34%, most of it on short waits).
const observeLag = 100 * time.Millisecond

// AdmitIn is how long until a buyer n positions beyond the serving position
// sees their admission at rate a second: n/rate, rounded up to the
// millisecond, plus observeLag. It is the estimate a ticket's answer gives.
func AdmitIn(n int64, rate int) time.Duration {
	rate = max(rate, 1)
	return time.Duration((n*1000+int64(rate)-1)/int64(rate))*time.Millisecond + observeLag
}
