package main

import (
	"context"
	"fmt"
	"slices"
	"strconv"
)

// reportedMetric counts the reaper's live-audit reports of a confirmed
// invariant violation (pkg/auditor): on a healthy sale it does not move.
const reportedMetric = "flashsale_audit_reported_total"

// liveAudit reads the reaper's count of reported violations of the run's
// items before the run and again after its final audit: a violation the
// live auditor reported while the final audit balances is a false alarm,
// the kind an SRE learns to ignore, and fails the run as a check. Other
// items' reports (an earlier sale's, left broken by a test) are not the
// run's. url "" (baselines, or -reaper-metrics empty) reads nothing.
type liveAudit struct {
	url    string
	items  []string
	before float64
	err    error
}

func startLiveAudit(ctx context.Context, url string, ids []int64) *liveAudit {
	if url == "" {
		return nil
	}
	l := &liveAudit{url: url}
	for _, id := range ids {
		l.items = append(l.items, strconv.FormatInt(id, 10))
	}
	l.before, l.err = l.read(ctx)
	return l
}

// read sums the counter's series of the run's items (none yet is 0).
func (l *liveAudit) read(ctx context.Context) (float64, error) {
	fams, err := scrape(ctx, l.url)
	if err != nil {
		return 0, err
	}
	var sum float64
	for _, m := range fams[reportedMetric].GetMetric() {
		for _, lp := range m.GetLabel() {
			if lp.GetName() == "item" && slices.Contains(l.items, lp.GetValue()) {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum, nil
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
	after, err := l.read(context.WithoutCancel(ctx))
	if err != nil {
		return nil, "not read: " + err.Error()
	}
	if after < l.before {
		return nil, fmt.Sprintf("not read: %s of the run's items went from %v to %v (the reaper restarted)", reportedMetric, l.before, after)
	}
	n := int(after - l.before)
	return &n, ""
}
