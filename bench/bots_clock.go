package main

import (
	"context"
	"fmt"
	"net/http"
	"time"
)

// serverClockOffset estimates how far the server's clock is ahead of ours,
// as a bot that synchronises to the server does: the Date header has whole
// seconds only, so it asks every step until the second changes; the server
// was at that whole second somewhere between the two requests, so the
// estimate (the middle between the two) is good to about half a step plus a
// round trip. It gives up after two seconds' worth of requests.
func serverClockOffset(ctx context.Context, c *http.Client, url string, step time.Duration) (time.Duration, error) {
	return clockOffset(ctx, c, url, step, wallClock{})
}

// probeClock is the clock clockOffset reads and waits on: the wall clock
// in a run, a fake one in its test, so the estimate's bound is checked
// without a machine's stalls in it.
type probeClock interface {
	Now() time.Time
	Sleep(ctx context.Context, d time.Duration) error
}

type wallClock struct{}

func (wallClock) Now() time.Time { return time.Now() }

func (wallClock) Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func clockOffset(ctx context.Context, c *http.Client, url string, step time.Duration, clk probeClock) (time.Duration, error) {
	var prev time.Time
	var prevMid time.Time
	for deadline := clk.Now().Add(2*time.Second + step); clk.Now().Before(deadline); {
		sent := clk.Now()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return 0, fmt.Errorf("bench: clock: %w", err)
		}
		resp, err := c.Do(req)
		if err != nil {
			return 0, fmt.Errorf("bench: clock: %w", err)
		}
		resp.Body.Close()
		got := clk.Now()
		d, err := http.ParseTime(resp.Header.Get("Date"))
		if err != nil {
			return 0, fmt.Errorf("bench: clock: Date header %q: %w", resp.Header.Get("Date"), err)
		}
		mid := sent.Add(got.Sub(sent) / 2)
		if !prev.IsZero() && d.After(prev) {
			// The second d began between the previous answer and this one.
			return d.Sub(prevMid.Add(mid.Sub(prevMid) / 2)), nil
		}
		prev, prevMid = d, mid
		if err := clk.Sleep(ctx, step); err != nil {
			return 0, err
		}
	}
	return 0, fmt.Errorf("bench: clock: the server's Date header did not change in 2s")
}
