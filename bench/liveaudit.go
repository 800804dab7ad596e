package main

import (
	"context"
	"fmt"
)

// reportedMetric counts the reaper's live-audit reports of a confirmed
// invariant violation (pkg/auditor): on a healthy sale it does not move.
const reportedMetric = "flashsale_audit_reported_total"

// liveAudit reads the reaper's count of reported violations before a run
// and again after its final audit: a violation the live auditor reported
// while the final audit balances is a false alarm, the kind an SRE learns
// to ignore, and fails the run as a check. url "" (baselines, or
// -reaper-metrics empty) reads nothing.
type liveAudit struct {
	url    string
	before float64
	err    error
}

func startLiveAudit(ctx context.Context, url string) *liveAudit {
	if url == "" {
		return nil
	}
	l := &liveAudit{url: url}
	l.before, l.err = scrapeCounter(ctx, url, reportedMetric)
	return l
}

// finish returns how many violations the live auditor reported during the
// run (nil when not read) and the note saying why there is no figure.
func (l *liveAudit) finish(ctx context.Context) (*int, string) {
	if l == nil {
		return nil, ""
	}
	if l.err != nil {
		return nil, "not read: " + l.err.Error()
	}
	after, err := scrapeCounter(context.WithoutCancel(ctx), l.url, reportedMetric)
	if err != nil {
		return nil, "not read: " + err.Error()
	}
	if after < l.before {
		return nil, fmt.Sprintf("not read: %s went from %v to %v (the reaper restarted)", reportedMetric, l.before, after)
	}
	n := int(after - l.before)
	return &n, ""
}
