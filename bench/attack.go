package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// attemptHeader carries the plan index of a request through vegeta, whose
// results only know the response: the tagging transport copies it back.
const attemptHeader = "X-Bench-Attempt"

// Attack is one scenario's load: the plan, the tokens and where to send.
type Attack struct {
	Base string
	// ItemIDs are the sale's items; attempt i orders ItemIDs[itemOf(its
	// buyer, len(ItemIDs))].
	ItemIDs     []int64
	Plan        Plan
	Tokens      Tokens
	N           int // attempts to send (a prefix of the plan)
	Rate        int
	Concurrency int
	Duration    time.Duration
	Timeout     time.Duration
	// OrderWait > 0 sends each order with ?wait= (Settings.OrderWait).
	OrderWait time.Duration
}

// ordersURL is where the attack's orders go, with ?wait= when it waits.
func (a *Attack) ordersURL() string {
	u := a.Base + "/api/v1/orders"
	if a.OrderWait > 0 {
		u += "?wait=" + strconv.FormatInt(a.OrderWait.Milliseconds(), 10) + "ms"
	}
	return u
}

// header builds attempt i's request headers.
func (a *Attack) header(i int) http.Header {
	at := a.Plan.Attempts[i]
	h := http.Header{}
	h.Set("Authorization", a.Tokens.Buyers[at.Buyer])
	h.Set("Content-Type", "application/json")
	if at.IdemKey != "" {
		h.Set("Idempotency-Key", at.IdemKey)
	}
	h.Set(attemptHeader, strconv.Itoa(i))
	return h
}

// bodies are the order bodies of the sale's items, built once.
func (a *Attack) bodies() [][]byte {
	out := make([][]byte, len(a.ItemIDs))
	for i, id := range a.ItemIDs {
		out[i] = orderBody(id)
	}
	return out
}

// body is attempt i's order body: its buyer's item.
func (a *Attack) body(bodies [][]byte, i int) []byte {
	return bodies[itemOf(a.Plan.Attempts[i].Buyer, len(bodies))]
}

// Run sends the attack in the selected mode and records every answer. It
// returns when every attempt was answered, the duration cap passed or ctx
// was cancelled (the partial recording stays valid).
func (a *Attack) Run(ctx context.Context, rec *Recorder) error {
	rec.Start(time.Now())
	if a.Concurrency > 0 {
		return a.closedLoop(ctx, rec)
	}
	return a.openLoop(ctx, rec)
}

// openLoop is the rate mode: vegeta sends at a constant rate whatever the
// server's latency, spawning workers as needed, so slow answers show up as
// latency instead of silently lowering the load.
func (a *Attack) openLoop(ctx context.Context, rec *Recorder) error {
	var next atomic.Int64
	bodies := a.bodies()
	url := a.ordersURL()
	targeter := func(t *vegeta.Target) error {
		i := int(next.Add(1) - 1)
		if i >= a.N {
			return vegeta.ErrNoTargets
		}
		t.Method, t.URL, t.Body, t.Header = http.MethodPost, url, a.body(bodies, i), a.header(i)
		return nil
	}
	client := NewHTTPClient(1024, a.Timeout)
	client.Transport = tagger{client.Transport}
	atk := vegeta.NewAttacker(vegeta.Client(client), vegeta.Workers(64), vegeta.MaxWorkers(8192))
	stop := context.AfterFunc(ctx, func() { atk.Stop() })
	defer stop()
	for res := range atk.Attack(targeter, vegeta.Rate{Freq: a.Rate, Per: time.Second}, a.Duration, "bench") {
		if res.Method == "" { // the targeter ran dry: not a request
			continue
		}
		i := -1
		if v := res.Headers.Get(attemptHeader); v != "" {
			i, _ = strconv.Atoi(v)
		}
		out, st, detail := classifyOrder(int(res.Code), res.Body, res.Error)
		rec.Add(Result{Attempt: i, Outcome: out, RequestID: st.RequestID, Status: st, Detail: detail, Latency: res.Latency, End: res.End()})
	}
	return ctx.Err()
}

// tagger copies the attempt header of each request onto its response.
type tagger struct{ next http.RoundTripper }

func (t tagger) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err == nil {
		resp.Header.Set(attemptHeader, req.Header.Get(attemptHeader))
	}
	return resp, err
}

// closedLoop is the concurrency mode: a fixed number of workers, each
// sending its next attempt when the last was answered. It measures the
// throughput a system sustains at that concurrency, the figure -compare
// puts side by side.
func (a *Attack) closedLoop(ctx context.Context, rec *Recorder) error {
	if a.Duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, a.Duration)
		defer cancel()
	}
	client := NewHTTPClient(a.Concurrency, a.Timeout)
	bodies := a.bodies()
	url := a.ordersURL()
	var next atomic.Int64
	var wg sync.WaitGroup
	for range a.Concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= a.N {
					return
				}
				rec.Add(a.send(ctx, client, url, a.body(bodies, i), i))
			}
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}

func (a *Attack) send(ctx context.Context, c *http.Client, url string, body []byte, i int) Result {
	start := time.Now()
	res := Result{Attempt: i}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		res.Outcome, res.Detail = OutOther, "request: "+err.Error()
		return res
	}
	req.Header = a.header(i)
	code, b, errText := 0, []byte(nil), ""
	resp, err := c.Do(req)
	if err != nil {
		errText = err.Error()
	} else {
		b, err = io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		code = resp.StatusCode
		if err != nil {
			code, errText = 0, err.Error()
		}
	}
	res.End = time.Now()
	res.Latency = res.End.Sub(start)
	res.Outcome, res.Status, res.Detail = classifyOrder(code, b, errText)
	res.RequestID = res.Status.RequestID
	return res
}
