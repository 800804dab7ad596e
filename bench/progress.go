package main

import (
	"context"
	"fmt"
	"os"
	"time"
)

// progress prints one line to stderr every two seconds so a long run shows
// it is alive and where it stands.
func progress(ctx context.Context, name string, planned int, rec *Recorder, st *Settler, lag *LagSampler) {
	start := time.Now()
	t := time.NewTicker(2 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		c, total := rec.Counts()
		el := time.Since(start)
		line := fmt.Sprintf("[%s] %4.0fs sent %d/%d (%.0f/s) 202=%d 409=%d 410=%d 429=%d 503=%d other=%d pending=%d",
			name, el.Seconds(), total, planned, float64(total)/el.Seconds(),
			c[OutAccepted], c[OutAlready], c[OutSoldOut], c[OutLimited], c[OutUnavail], c[OutOther], st.Pending())
		if p := lag.Current(); p >= 0 {
			line += fmt.Sprintf(" lag-peak=%d", p)
		}
		fmt.Fprintln(os.Stderr, line)
	}
}
