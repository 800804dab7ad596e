//go:build faults

package faults

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/flashsale-dev/flashsale/pkg/stock"
)

// spec is a burst of buyers. Every buyer orders qty 1 once; some send a
// second request without a key (a duplicate buyer, refused by Redis or by
// the orders' UNIQUE), some replay their Idempotency-Key (must get the first
// answer), and some pay as soon as their order is UNPAID.
type spec struct {
	FirstUser   int64
	Buyers      int
	Rate        float64 // requests per second
	Concurrency int
	DupFrac     float64
	ReplayFrac  float64
	PayFrac     float64
	// HomeBuckets, when set, keeps only the users (from FirstUser up) whose
	// home bucket of an item of Buckets buckets is one of them: demand
	// skewed onto a few buckets.
	Buckets     int
	HomeBuckets []int
}

// nextUser returns the first buyer id after u that the spec keeps.
func (s spec) nextUser(u int64) int64 {
	for u++; len(s.HomeBuckets) > 0 && !slices.Contains(s.HomeBuckets, stock.HomeBucket(u, s.Buckets)); u++ {
	}
	return u
}

type attempt struct {
	user   int64
	key    string
	replay bool
	repeat bool // a buyer's second attempt (a replay or a dup)
}

// answer is one POST /orders response.
type answer struct {
	sentAt time.Time
	doneAt time.Time // when the answer arrived
	code   int       // 0 = no answer (connection error)
	errKey string    // the contract's error code, or the transport error
	rid    string
	user   int64
	key    string
}

// accepted is one 202.
type accepted struct {
	rid    string
	user   int64
	key    string
	sentAt time.Time
}

// workload runs a spec against a pipeline and records every answer.
type workload struct {
	p    *pipeline
	spec spec

	mu       sync.Mutex
	answers  []answer
	accepted map[string]accepted // by request id
	keyRIDs  map[string]map[string]bool
	paid     map[string]bool // request id -> pay answered 200

	sent    atomic.Int64
	nAccept atomic.Int64
	cancel  context.CancelFunc
	done    chan struct{}
	payers  sync.WaitGroup
	// enough is closed by finish: no buyer starts after it.
	enough     chan struct{}
	enoughOnce sync.Once
}

// start launches the burst in the background. Every buyer call of the
// pipeline is recorded from the first start on (p.history) and the history
// is checked when the test ends.
func (p *pipeline) start(s spec) *workload {
	p.history()
	w := &workload{p: p, spec: s, accepted: map[string]accepted{}, keyRIDs: map[string]map[string]bool{},
		paid: map[string]bool{}, done: make(chan struct{}), enough: make(chan struct{})}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	w.cancel = cancel
	p.t.Cleanup(func() { cancel(); <-w.done; w.payers.Wait() })
	go w.run(ctx)
	return w
}

func (w *workload) plan() []attempt {
	s := w.spec
	var out []attempt
	var extra []attempt
	u := s.FirstUser - 1
	for range s.Buyers {
		u = s.nextUser(u)
		a := attempt{user: u}
		r := rand.Float64()
		if r < s.ReplayFrac {
			a.key = fmt.Sprintf("k-%d", u)
			extra = append(extra, attempt{user: u, key: a.key, replay: true, repeat: true})
		} else if r < s.ReplayFrac+s.DupFrac {
			extra = append(extra, attempt{user: u, repeat: true})
		}
		out = append(out, a)
		// Repeats follow their first attempt closely (a client retrying
		// while the first is in flight), or much later.
		if len(extra) > 0 && rand.IntN(3) == 0 {
			out = append(out, extra[0])
			extra = extra[1:]
		}
	}
	for _, e := range extra {
		out = append(out, e)
	}
	return out
}

func (w *workload) run(ctx context.Context) {
	defer close(w.done)
	todo := make(chan attempt)
	lim := rate.NewLimiter(rate.Limit(w.spec.Rate), max(1, int(w.spec.Rate/20)))
	var wg sync.WaitGroup
	for range max(1, w.spec.Concurrency) {
		wg.Go(func() {
			for a := range todo {
				w.order(ctx, a)
			}
		})
	}
	started := map[int64]bool{}
	for _, a := range w.plan() {
		select {
		case <-w.enough:
			// Only the second attempts of buyers already started: the
			// replays and dups sent after the fault stay part of it.
			if !a.repeat || !started[a.user] {
				continue
			}
		default:
		}
		if lim.Wait(ctx) != nil {
			break
		}
		started[a.user] = true
		todo <- a
	}
	close(todo)
	wg.Wait()
}

func (w *workload) order(ctx context.Context, a attempt) {
	h := map[string]string{}
	if a.key != "" {
		h["Idempotency-Key"] = a.key
	}
	sent := time.Now()
	w.sent.Add(1)
	code, b := w.p.call(ctx, http.MethodPost, "/api/v1/orders", w.p.bearer(a.user),
		map[string]any{"item_id": w.p.itemID, "qty": 1}, h)
	an := answer{sentAt: sent, doneAt: time.Now(), code: code, user: a.user, key: a.key}
	var body struct {
		RequestID string `json:"request_id"`
		Error     string `json:"error"`
	}
	if code == 0 {
		an.errKey = "transport"
	} else if err := json.Unmarshal(b, &body); err != nil {
		an.errKey = "bad_json"
	}
	an.rid = body.RequestID
	if an.errKey == "" {
		an.errKey = body.Error
	}
	w.mu.Lock()
	w.answers = append(w.answers, an)
	if code == http.StatusAccepted {
		if _, seen := w.accepted[an.rid]; !seen {
			w.accepted[an.rid] = accepted{rid: an.rid, user: a.user, key: a.key, sentAt: sent}
			w.nAccept.Add(1)
		}
		if a.key != "" {
			if w.keyRIDs[a.key] == nil {
				w.keyRIDs[a.key] = map[string]bool{}
			}
			w.keyRIDs[a.key][an.rid] = true
		}
	}
	w.mu.Unlock()
	if code == http.StatusAccepted && !a.replay && rand.Float64() < w.spec.PayFrac {
		w.payers.Go(func() { w.pay(ctx, a.user, an.rid) })
	}
}

// pay polls the request until it is UNPAID and pays it, within the window.
// Half the payers long-poll (?wait=), so histories hold both kinds of poll.
func (w *workload) pay(ctx context.Context, user int64, rid string) {
	deadline := time.Now().Add(w.p.cfg.PaymentWindow + 30*time.Second)
	long := rand.IntN(2) == 0
	for time.Now().Before(deadline) && ctx.Err() == nil {
		var st view
		var ok bool
		if long {
			st, ok = w.p.statusWait(ctx, user, rid, time.Second)
		} else {
			st, ok = w.p.status(ctx, user, rid)
		}
		if ok && st.Status != "PENDING" {
			if st.Status != "UNPAID" {
				return
			}
			code, _ := w.p.call(ctx, http.MethodPost, "/api/v1/orders/"+rid+"/pay", w.p.bearer(user), nil, nil)
			if code == http.StatusOK {
				w.mu.Lock()
				w.paid[rid] = true
				w.mu.Unlock()
			}
			if code != 0 && code < 500 {
				return
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// wait blocks until every attempt has been answered and payers are done.
// finish ends the burst early: no buyer starts from now on, the second
// attempts of those who did are still sent, and wait returns once every
// request sent is answered. A test calls it once it has seen what it came
// for (the fault and the recovery after it): the rest of a burst sized to
// outlast the slowest recovery adds time, not evidence.
func (w *workload) finish() {
	w.enoughOnce.Do(func() { close(w.enough) })
}

// finishAfterRecovery waits for ten more 202s than there are now (the
// recovery shown by orders accepted after the fault) and then ends the
// burst (finish).
func (w *workload) finishAfterRecovery(t *testing.T) {
	t.Helper()
	waitAccepted(t, w, w.nAccept.Load()+10)
	w.finish()
}

func (w *workload) wait() {
	<-w.done
	w.payers.Wait()
}

// answersBetween returns the answers to requests sent in [from, to).
func (w *workload) answersBetween(from, to time.Time) []answer {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []answer
	for _, a := range w.answers {
		if !a.sentAt.Before(from) && a.sentAt.Before(to) {
			out = append(out, a)
		}
	}
	return out
}

// codes summarises answers as "202:31 410 sold_out:12 …".
func codes(as []answer) string {
	m := map[string]int{}
	for _, a := range as {
		k := fmt.Sprint(a.code)
		if a.errKey != "" {
			k += " " + a.errKey
		}
		m[k]++
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var sb strings.Builder
	for i, k := range keys {
		if i > 0 {
			sb.WriteString(", ")
		}
		fmt.Fprintf(&sb, "%s: %d", k, m[k])
	}
	return sb.String()
}

func (w *workload) snapshot() (answers []answer, acc []accepted, keyRIDs map[string]map[string]bool, paid map[string]bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	answers = append(answers, w.answers...)
	for _, a := range w.accepted {
		acc = append(acc, a)
	}
	keyRIDs = map[string]map[string]bool{}
	for k, v := range w.keyRIDs {
		keyRIDs[k] = v
	}
	paid = map[string]bool{}
	for k, v := range w.paid {
		paid[k] = v
	}
	return
}
