package main

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"sync"
	"time"
)

// Settler polls every accepted request to a terminal status (I4 seen from
// the buyer's side) and pays for the buyers of the plan who pay. It runs
// during the attack, so "time to settle" is what a buyer would wait.
type Settler struct {
	api    *API
	tokens Tokens
	payers []bool
	// workers bounds concurrent polls, so polling never becomes the load.
	workers int
	// wait > 0 long-polls instead (?wait=): each pending request is
	// followed by a poller of its own (at most maxFollowers at once) whose
	// polls the server holds until the status leaves PENDING.
	wait time.Duration

	mu       sync.Mutex
	pending  map[string]*tracked
	seen     map[string]bool // every id ever tracked: a late replay is not a new request
	settled  []time.Duration // accept → terminal, per request
	lastDone time.Time
	statuses map[string]int
	paid     int
	payNo    int // pay refused (409 not_payable: the reaper won the race)
	payErr   int
	pollErr  int
	polls    int // status requests sent
	byAnswer int // settled by what their 202 carried (-order-wait)
	units    int // distinct requests that reached UNPAID or PAID
	// following marks the pending requests a long poller follows.
	following map[string]bool
	// tracked wakes runFollowing when Track added a request, so a long
	// poll starts at once rather than at the next -poll-interval tick.
	tracked chan struct{}
}

// maxFollowers bounds the long polls in flight (each holds a connection).
const maxFollowers = 4096

type tracked struct {
	buyer    int
	accepted time.Time
}

// NewSettler returns a settler for the plan's buyers.
func NewSettler(api *API, tokens Tokens, payers []bool) *Settler {
	return &Settler{api: api, tokens: tokens, payers: payers, workers: 32,
		pending: map[string]*tracked{}, seen: map[string]bool{}, statuses: map[string]int{}, following: map[string]bool{},
		tracked: make(chan struct{}, 1)}
}

// Track starts following one accepted request. A replay's 202 repeats the
// first request id and is followed once. said is the status the 202
// carried (-order-wait): one already decided is settled here without a
// poll, but an UNPAID order of a buyer who pays, which a poll pays.
func (s *Settler) Track(buyer int, requestID string, at time.Time, said OrderStatus) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.seen[requestID] {
		return
	}
	s.seen[requestID] = true
	tr := &tracked{buyer: buyer, accepted: at}
	if said.RequestID == requestID && Terminal(said.Status) && (said.Status != "UNPAID" || !s.payers[buyer]) {
		// Settled, but not timed: its 202 came after the write, so
		// accept→terminal, the settle time of a polled request, is unknown.
		s.settleLocked(tr, said, said.Status, time.Time{})
		s.byAnswer++
		if at.After(s.lastDone) {
			s.lastDone = at
		}
		return
	}
	s.pending[requestID] = tr
	select {
	case s.tracked <- struct{}{}:
	default:
	}
}

// Pending is the number of accepted requests not yet terminal.
func (s *Settler) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.pending)
}

// Run polls in rounds until attackDone is closed and nothing is pending, or
// until timeout has passed since attackDone, or ctx ends.
func (s *Settler) Run(ctx context.Context, attackDone <-chan struct{}, interval, timeout time.Duration) {
	if s.wait > 0 {
		s.runFollowing(ctx, attackDone, interval, timeout)
		return
	}
	s.until(ctx, attackDone, interval, timeout, nil, func() { s.round(ctx) })
}

// until runs pass at once, then every interval and whenever wake fires
// (nil: never), until attackDone is closed and nothing is pending, or
// timeout has passed since attackDone, or ctx ends.
func (s *Settler) until(ctx context.Context, attackDone <-chan struct{}, interval, timeout time.Duration, wake <-chan struct{}, pass func()) {
	var deadline <-chan time.Time
	done := attackDone
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		pass()
		if done == nil && s.Pending() == 0 {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-done:
			done = nil
			deadline = time.After(timeout)
		case <-deadline:
			return
		case <-t.C:
		case <-wake:
		}
	}
}

// round polls each pending request once.
func (s *Settler) round(ctx context.Context) {
	s.mu.Lock()
	ids := make([]string, 0, len(s.pending))
	for id := range s.pending {
		ids = append(ids, id)
	}
	s.mu.Unlock()
	slices.Sort(ids) // oldest first: ids start with a time prefix
	sem := make(chan struct{}, s.workers)
	var wg sync.WaitGroup
	for _, id := range ids {
		if ctx.Err() != nil {
			break
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			s.poll(ctx, id)
		}()
	}
	wg.Wait()
}

// poll asks for id's status once (a long poll when s.wait > 0) and records
// it if terminal; done is true once id is no longer pending.
func (s *Settler) poll(ctx context.Context, id string) (done bool) {
	s.mu.Lock()
	tr := s.pending[id]
	if tr != nil {
		s.polls++
	}
	s.mu.Unlock()
	if tr == nil {
		return true
	}
	bearer := s.tokens.Buyers[tr.buyer]
	st, err := s.api.Status(ctx, bearer, id, s.wait)
	if err != nil {
		s.mu.Lock()
		if ctx.Err() == nil {
			s.pollErr++
		}
		s.mu.Unlock()
		return false
	}
	if !Terminal(st.Status) {
		return false
	}
	now := time.Now()
	final := st.Status
	var payOK, payNo, payErr bool
	if st.Status == "UNPAID" && s.payers[tr.buyer] {
		switch err := s.api.Pay(ctx, bearer, id); {
		case err == nil:
			payOK, final = true, "PAID"
		case isStatus(err, http.StatusConflict):
			payNo = true
		default:
			payErr = true
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.pending[id]; !ok {
		return true
	}
	delete(s.pending, id)
	s.settleLocked(tr, st, final, now)
	if payOK {
		s.paid++
	}
	if payNo {
		s.payNo++
	}
	if payErr {
		s.payErr++
	}
	return true
}

// settleLocked records tr, no longer pending, as settled at now in st
// (final after its pay); a zero now is a settle of unknown time. s.mu is
// held.
func (s *Settler) settleLocked(tr *tracked, st OrderStatus, final string, now time.Time) {
	if !now.IsZero() {
		s.settled = append(s.settled, now.Sub(tr.accepted))
	}
	if now.After(s.lastDone) {
		s.lastDone = now
	}
	s.statuses[final]++
	if st.Status == "UNPAID" || st.Status == "PAID" {
		s.units += max(st.Qty, 1)
	}
}

func isStatus(err error, code int) bool {
	var se *StatusError
	return errors.As(err, &se) && se.Code == code
}

// SettleStats is what the settler saw.
type SettleStats struct {
	Tracked   int `json:"tracked"`
	Settled   int `json:"settled"`
	Unsettled int `json:"unsettled"`
	// P50ms, P99ms and Maxms are accept→terminal of the polled requests
	// (those settled by their 202 have no accept time apart from it).
	P50ms        float64        `json:"settle_p50_ms"`
	P99ms        float64        `json:"settle_p99_ms"`
	Maxms        float64        `json:"settle_max_ms"`
	LastSettled  time.Time      `json:"-"`
	Statuses     map[string]int `json:"statuses"`
	OrderedUnits int            `json:"ordered_units"`
	Paid         int            `json:"paid"`
	PayRefused   int            `json:"pay_refused"`
	PayErrors    int            `json:"pay_errors"`
	PollErrors   int            `json:"poll_errors"`
	// Polls is every status request sent; PollWaitMs the ?wait= of each
	// (0: plain polling every -poll-interval).
	Polls           int     `json:"polls"`
	PollsPerSettled float64 `json:"polls_per_settled"`
	PollWaitMs      int64   `json:"poll_wait_ms"`
	// SettledByAnswer counts the requests whose 202 carried their
	// decided status (-order-wait): never polled.
	SettledByAnswer int      `json:"settled_by_answer"`
	UnsettledIDs    []string `json:"unsettled_sample,omitempty"`
}

// Stats summarises the settling.
func (s *Settler) Stats() SettleStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	sorted := slices.Clone(s.settled)
	slices.Sort(sorted)
	settled := len(s.settled) + s.byAnswer
	st := SettleStats{Tracked: settled + len(s.pending), Settled: settled, Unsettled: len(s.pending),
		LastSettled: s.lastDone, Statuses: map[string]int{}, OrderedUnits: s.units,
		Paid: s.paid, PayRefused: s.payNo, PayErrors: s.payErr, PollErrors: s.pollErr,
		Polls: s.polls, PollWaitMs: s.wait.Milliseconds(), SettledByAnswer: s.byAnswer}
	if settled > 0 {
		st.PollsPerSettled = float64(s.polls) / float64(settled)
	}
	if len(sorted) > 0 {
		st.P50ms, st.P99ms, st.Maxms = ms(quantile(sorted, .5)), ms(quantile(sorted, .99)), ms(sorted[len(sorted)-1])
	}
	for k, v := range s.statuses {
		st.Statuses[k] = v
	}
	for id := range s.pending {
		if len(st.UnsettledIDs) == 5 {
			break
		}
		st.UnsettledIDs = append(st.UnsettledIDs, id)
	}
	return st
}
