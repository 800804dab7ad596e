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
	var prev time.Time
	var prevMid time.Time
	for deadline := time.Now().Add(2*time.Second + step); time.Now().Before(deadline); {
		sent := time.Now()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return 0, fmt.Errorf("bench: clock: %w", err)
		}
		resp, err := c.Do(req)
		if err != nil {
			return 0, fmt.Errorf("bench: clock: %w", err)
		}
		resp.Body.Close()
		got := time.Now()
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
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(step):
		}
	}
	return 0, fmt.Errorf("bench: clock: the server's Date header did not change in 2s")
}
