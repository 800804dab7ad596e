package ops

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"
)

// Check reports whether one dependency is reachable. It should honour ctx;
// readiness answers on time even when it does not.
type Check func(ctx context.Context) error

// DefaultReadinessCache is how long one readiness result answers every probe
// when Readiness.CacheFor is zero.
const DefaultReadinessCache = time.Second

// Readiness describes a deployable's readiness: named checks, run
// concurrently, each bounded by Timeout.
type Readiness struct {
	Timeout time.Duration
	Checks  map[string]Check
	// Optional names checks whose failure degrades the deployable without
	// taking it out of rotation: /readyz still answers 200, with status
	// "degraded" and the failing check's error. The ingress admits with
	// Redis and Kafka alone, so MySQL is optional there.
	Optional map[string]bool
	// CacheFor is how long one result answers every probe (0 means
	// DefaultReadinessCache, negative means never cached), so a burst of
	// probes costs the dependencies one round of checks, not one per probe.
	CacheFor time.Duration
}

// prober runs one Readiness for every probe of a handler, singleflight
// style: at most one round of checks is in flight, and a probe that arrives
// during it waits for it rather than starting another; at most one run of
// each check is in flight, and a round joins a run still going from an
// earlier round. So a check that ignores its context (a driver call with no
// deadline against a SIGSTOPped server) costs one goroutine, not one per
// probe, and every probe still answers within the timeout.
type prober struct {
	r        Readiness
	cacheFor time.Duration
	// now stamps each round's result and judges the cache's age; a test
	// steps it past the cache period instead of sleeping through it.
	now func() time.Time

	mu       sync.Mutex
	inflight map[string]*flight
	round    *round  // the round in flight, nil if none
	last     *report // the last round's result, nil before the first
}

// flight is one run of one check; err is set before done is closed.
type flight struct {
	done chan struct{}
	err  error
}

// round is one collection of every check's result; rep is set before done
// is closed.
type round struct {
	done chan struct{}
	rep  *report
}

// report is one round's result. Its map is shared by every probe it answers
// and never written after the round ends.
type report struct {
	checks   map[string]string
	ok       bool
	degraded bool // ok, but an optional check failed
	at       time.Time
}

func newProber(r Readiness) *prober {
	c := r.CacheFor
	if c == 0 {
		c = DefaultReadinessCache
	}
	return &prober{r: r, cacheFor: c, now: time.Now, inflight: map[string]*flight{}}
}

// run returns each check's result text ("ok" or the error) and whether all
// required ones passed: the cached result if it is fresh, else the result
// of the round in flight or of a new one, within r.Timeout whatever the
// checks do. If ctx ends first it returns an empty, failed report (the
// caller has gone).
func (p *prober) run(ctx context.Context) *report {
	p.mu.Lock()
	if l := p.last; l != nil && p.cacheFor > 0 && p.now().Sub(l.at) < p.cacheFor {
		p.mu.Unlock()
		return l
	}
	rd := p.round
	if rd == nil {
		rd = p.startRound(ctx)
	}
	p.mu.Unlock()
	select {
	case <-rd.done:
		return rd.rep
	case <-ctx.Done():
		return &report{}
	}
}

// startRound starts a round, detached from the probe that started it (the
// probes that join it may outlive that one, and its result is cached), that
// ends r.Timeout after it starts at the latest. Called with p.mu held.
func (p *prober) startRound(ctx context.Context) *round {
	rd := &round{done: make(chan struct{})}
	p.round = rd
	ctx = context.WithoutCancel(ctx)
	flights := make(map[string]*flight, len(p.r.Checks))
	for name, c := range p.r.Checks {
		f := p.inflight[name]
		if f == nil {
			f = p.startCheck(ctx, name, c)
		}
		flights[name] = f
	}
	go func() {
		timer := time.NewTimer(p.r.Timeout)
		defer timer.Stop()
		expired := false
		out := make(map[string]string, len(flights))
		ok, degraded := true, false
		for name, f := range flights {
			if !expired {
				select {
				case <-f.done:
				case <-timer.C:
					expired = true
				}
			}
			select {
			case <-f.done:
				if f.err == nil {
					out[name] = "ok"
					continue
				}
				out[name] = f.err.Error()
			default:
				out[name] = fmt.Sprintf("no answer within %v", p.r.Timeout)
			}
			if p.r.Optional[name] {
				degraded = true
			} else {
				ok = false
			}
		}
		rd.rep = &report{checks: out, ok: ok, degraded: ok && degraded, at: p.now()}
		p.mu.Lock()
		p.last, p.round = rd.rep, nil
		p.mu.Unlock()
		close(rd.done)
	}()
	return rd
}

// startCheck runs check c in the background, bounded by r.Timeout. Called
// with p.mu held.
func (p *prober) startCheck(ctx context.Context, name string, c Check) *flight {
	f := &flight{done: make(chan struct{})}
	p.inflight[name] = f
	go func() {
		cctx, cancel := context.WithTimeout(ctx, p.r.Timeout)
		defer cancel()
		f.err = c(cctx)
		// Out of the in-flight set before done: a round started once a
		// prober saw this result must run the check anew, not join a run
		// that has ended (with the cache period stepped by a test's clock,
		// the next round came in between).
		p.mu.Lock()
		delete(p.inflight, name)
		p.mu.Unlock()
		close(f.done)
	}()
	return f
}

// LivenessHandler answers 200 while the process runs.
func LivenessHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"ok"}`))
	})
}

// ReadinessHandler answers 200 when every required check passes (status
// "ok", or "degraded" when an optional one failed), else 503 "unavailable",
// with the per-dependency results as JSON, within r.Timeout; results are
// cached for r.CacheFor. Build it once per listener: the cache and the
// in-flight checks belong to the handler.
func ReadinessHandler(r Readiness) http.Handler { return newProber(r) }

// ServeHTTP answers one readiness probe (see ReadinessHandler).
func (p *prober) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	rep := p.run(req.Context())
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	status := "ok"
	switch {
	case !rep.ok:
		status = "unavailable"
		w.WriteHeader(http.StatusServiceUnavailable)
	case rep.degraded:
		status = "degraded"
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"status": status, "checks": rep.checks})
}
