package scenarios

import (
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// limit is the per-user limit of every scenario item: buyers order 1 to 3.
const limit = 3

// bucketCounts are the layouts every scenario runs on: unbucketed, and
// issue 22's 8 and 64 buckets.
var bucketCounts = []int{1, 8, 64}

// attempt is one order a buyer sent and what came back.
type attempt struct {
	user int64
	qty  int
	a    answer
}

// ledger collects every order answer of a scenario, for the checks made
// after it: which buyers hold what, and which refusals were wrong.
type ledger struct {
	mu       sync.Mutex
	attempts []attempt
	held     map[int64]held // user -> the 202 they were given
}

type held struct {
	rid string
	qty int
}

func newLedger() *ledger { return &ledger{held: map[int64]held{}} }

func (l *ledger) add(user int64, qty int, a answer) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.attempts = append(l.attempts, attempt{user, qty, a})
	if a.Code == http.StatusAccepted {
		rid := a.RequestID
		if h, ok := l.held[user]; ok && h.rid != rid {
			// Two different requests accepted for one buyer: the pipeline
			// must never do that (one order per buyer per item).
			l.held[user] = held{rid: h.rid + "," + rid, qty: h.qty + qty}
			return
		}
		l.held[user] = held{rid: rid, qty: qty}
	}
}

// sold is the units of every 202 (each buyer counted once).
func (l *ledger) sold() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	var n int64
	for _, h := range l.held {
		n += int64(h.qty)
	}
	return n
}

// codes counts the answers by code and error, for messages.
func (l *ledger) codes() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	m := map[string]int{}
	for _, at := range l.attempts {
		m[at.a.String()]++
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s x%d; ", k, m[k])
	}
	return strings.TrimSuffix(b.String(), "; ")
}

func (l *ledger) count(code int, errCode string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, at := range l.attempts {
		if at.a.Code == code && at.a.Error == errCode {
			n++
		}
	}
	return n
}

// wrongSoldOut returns the 410s answered to a buyer of qty while at least
// qty units were still unsold: units that requests sent after the 410 was
// received went on to buy. Units leave an item only by being sold or held,
// and come back only from a hold given back: a request answered "nothing
// reserved" (503 unavailable, or publish_failed) after the 410 may have
// held units then, so its qty is not counted against the 410 (no orders
// are cancelled in these phases: every buyer pays at once).
func (l *ledger) wrongSoldOut() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	// A buyer's units were taken no earlier than the first send of a copy
	// answered with its request id (replays of an Idempotency-Key answer
	// the same 202 later).
	taken := map[int64]time.Time{}
	for _, at := range l.attempts {
		if at.a.Code == http.StatusAccepted && l.held[at.user].rid == at.a.RequestID {
			if t, ok := taken[at.user]; !ok || at.a.Sent.Before(t) {
				taken[at.user] = at.a.Sent
			}
		}
	}
	var wrong []string
	for _, r := range l.attempts {
		if r.a.Code != http.StatusGone {
			continue
		}
		var later, mayReturn int
		for u, sent := range taken {
			if sent.After(r.a.Got) {
				later += l.held[u].qty
			}
		}
		for _, at := range l.attempts {
			if at.a.Code >= 500 && at.a.Error != "stock_moving" && at.a.Got.After(r.a.Got) {
				mayReturn += at.qty
			}
		}
		if later >= r.qty+mayReturn {
			wrong = append(wrong, fmt.Sprintf("user %d qty %d answered 410 at %s, then %d units were sold to requests sent later (%d may have been given back)",
				r.user, r.qty, r.a.Got.Format("15:04:05.000"), later, mayReturn))
		}
	}
	return wrong
}

// retryable answers are those a buyer is told to retry: nothing reserved.
func retryable(a answer) bool {
	switch {
	case a.Code == http.StatusServiceUnavailable && (a.Error == "stock_moving" || a.Error == "unavailable"):
		return true
	case a.Code == http.StatusTooManyRequests:
		return true
	}
	return false
}

// retryPause is how long a buyer waits before a retry: the Retry-After the
// answer carried (at most a second), as a well-behaved client does.
func retryPause(a answer) time.Duration {
	if s, err := strconv.Atoi(a.RetryAfter); err == nil && s > 0 {
		return min(time.Duration(s)*time.Second, time.Second)
	}
	return 200 * time.Millisecond
}

// backOff waits before a buyer's retry of the answer a, as retryPause says.
func backOff(a answer) {
	// Real time is the subject: a buyer honours the Retry-After of a real
	// server, whose rate limits and stock moves run in real seconds; a
	// retry sooner would measure a client no buyer is.
	time.Sleep(retryPause(a))
}

// buy is one buyer: orders qty, retries what says retry (up to tries
// times), and records every answer. It returns the last answer.
func (s *system) buy(l *ledger, item, user int64, qty int, key string, tries int) answer {
	var a answer
	for i := 0; i < tries; i++ {
		a = s.order(item, user, qty, key)
		l.add(user, qty, a)
		if !retryable(a) {
			return a
		}
		backOff(a)
	}
	return a
}
