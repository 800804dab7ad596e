package main

import (
	"cmp"
	"slices"
	"sync"
	"time"
)

// Result is the answer to one attempt.
type Result struct {
	Attempt   int
	Outcome   string
	RequestID string
	// Status is what an accepted order's 202 said of it: PENDING, or with
	// -order-wait the status it reached within the wait.
	Status  OrderStatus
	Detail  string
	Latency time.Duration
	End     time.Time
}

// Recorder keeps every answer of an attack: latencies per outcome for the
// percentiles, and each attempt's outcome and request id so replays can be
// checked against their first answer. Safe for concurrent use.
type Recorder struct {
	mu       sync.Mutex
	start    time.Time
	last     time.Time
	lat      map[string][]time.Duration
	other    map[string]int
	answers  []Result
	answered []bool
	onAccept func(Result)
}

// NewRecorder sizes the recorder for a plan of n attempts; onAccept is called
// for every 202 (outside the lock) so settling starts while the attack runs.
func NewRecorder(n int, onAccept func(Result)) *Recorder {
	return &Recorder{lat: map[string][]time.Duration{}, other: map[string]int{},
		answers: make([]Result, n), answered: make([]bool, n), onAccept: onAccept}
}

// Start marks the beginning of the attack (throughput is per attack second).
func (r *Recorder) Start(t time.Time) {
	r.mu.Lock()
	r.start = t
	r.mu.Unlock()
}

// Add records one answer.
func (r *Recorder) Add(res Result) {
	r.mu.Lock()
	r.lat[res.Outcome] = append(r.lat[res.Outcome], res.Latency)
	if res.Detail != "" {
		r.other[res.Detail]++
	}
	if res.End.After(r.last) {
		r.last = res.End
	}
	if res.Attempt >= 0 && res.Attempt < len(r.answers) {
		r.answers[res.Attempt], r.answered[res.Attempt] = res, true
	}
	r.mu.Unlock()
	if res.Outcome == OutAccepted && r.onAccept != nil {
		r.onAccept(res)
	}
}

// Counts returns the number of answers per outcome and in total.
func (r *Recorder) Counts() (map[string]int, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, total := map[string]int{}, 0
	for k, v := range r.lat {
		c[k] = len(v)
		total += len(v)
	}
	return c, total
}

// Since returns how many answers of each outcome were added after marks,
// and their latencies (all outcomes together), then advances marks to now.
// The timeline sampler calls it once a second for per-second rates and
// percentiles: the recorder's latency lists only grow, so a mark per outcome
// is all the state a window needs, and Add stays as cheap as before.
func (r *Recorder) Since(marks map[string]int) (map[string]int, []time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	counts := make(map[string]int, len(r.lat))
	var lat []time.Duration
	for o, l := range r.lat {
		from := min(marks[o], len(l))
		counts[o] = len(l) - from
		lat = append(lat, l[from:]...)
		marks[o] = len(l)
	}
	return counts, lat
}

// Elapsed is the attack's length: first send to last answer.
func (r *Recorder) Elapsed() time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.last.IsZero() {
		return time.Since(r.start)
	}
	return r.last.Sub(r.start)
}

// Stats summarises the recording into report rows.
func (r *Recorder) Stats() (rows []OutcomeStats, all OutcomeStats, other map[string]int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	secs := r.last.Sub(r.start).Seconds()
	var every []time.Duration
	for _, o := range Outcomes {
		rows = append(rows, summarize(o, r.lat[o], secs))
		every = append(every, r.lat[o]...)
	}
	other = make(map[string]int, len(r.other))
	for k, v := range r.other {
		other[k] = v
	}
	return rows, summarize("all", every, secs), other
}

// Answer returns attempt i's answer, if it got one.
func (r *Recorder) Answer(i int) (Result, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if i < 0 || i >= len(r.answers) {
		return Result{}, false
	}
	return r.answers[i], r.answered[i]
}

func summarize(outcome string, lat []time.Duration, secs float64) OutcomeStats {
	s := OutcomeStats{Outcome: outcome, Count: len(lat)}
	if len(lat) == 0 {
		return s
	}
	if secs > 0 {
		s.PerSec = float64(len(lat)) / secs
	}
	sorted := slices.Clone(lat)
	slices.Sort(sorted)
	s.P50ms = ms(quantile(sorted, 0.50))
	s.P90ms = ms(quantile(sorted, 0.90))
	s.P99ms = ms(quantile(sorted, 0.99))
	s.Maxms = ms(sorted[len(sorted)-1])
	return s
}

// quantile is the nearest-rank quantile of sorted values (durations,
// ratios).
func quantile[T cmp.Ordered](sorted []T, q float64) T {
	if len(sorted) == 0 {
		var zero T
		return zero
	}
	i := int(q*float64(len(sorted)) + 0.5)
	return sorted[min(max(i-1, 0), len(sorted)-1)]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
