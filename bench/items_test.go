package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestCompareOptimisticManyItems runs -compare -baselines a,c -items 4 end
// to end: baseline (a), baseline (c) and flashsale each sell 40 units over
// four items of 10 to the same plan, their audits add up the four items
// and pass, and (c) reports its retries per accepted order.
func TestCompareOptimisticManyItems(t *testing.T) {
	p := startPipeline(t, time.Minute)
	s := testSettings(p.URL)
	s.Compare, s.Concurrency, s.ReapWait, s.Baselines, s.Items, s.IngressMetrics = true, 8, 0, "a,c", 4, ""
	out, plan := runCompareTest(t, p, s)
	if got := strings.Join(scenarios(out.Runs), ","); got != BaselineA+","+BaselineC+",flashsale" {
		t.Fatalf("runs %s", got)
	}
	for _, r := range out.Runs {
		assertSane(t, r, len(plan.Attempts))
		if r.Items != 4 || r.Audit == nil || r.Audit.Total != 40 {
			t.Errorf("%s: items %d audit %+v, want 4 items totalling 40 units", r.Scenario, r.Items, r.Audit)
		}
		if got := r.Settle.OrderedUnits; got != 40 {
			t.Errorf("%s: %d units ordered, want all 40 (400 buyers for 4 × 10)", r.Scenario, got)
		}
		if (r.Retries != nil) != (r.Scenario == BaselineC) {
			t.Errorf("%s: retries %+v, want them for baseline (c) only", r.Scenario, r.Retries)
		}
	}
	c := out.Runs[1]
	if c.Retries.Accepted != int64(c.Settle.Tracked) || c.Retries.GaveUp != 0 {
		t.Errorf("retries %+v for %d accepted requests", *c.Retries, c.Settle.Tracked)
	}
	var txt, page bytes.Buffer
	if err := WriteText(&txt, out); err != nil {
		t.Fatal(err)
	}
	if err := WriteHTML(&page, out, time.Now()); err != nil {
		t.Fatal(err)
	}
	for what, body := range map[string]string{"text": txt.String(), "html": page.String()} {
		for _, want := range []string{"4 items from", retriesLine(c.Retries)} {
			if !strings.Contains(body, want) {
				t.Errorf("%s report lacks %q", what, want)
			}
		}
	}
}
