package main

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"testing"
	"time"
)

// syntheticTimeline is a sale of 1,000 units as the sampler would see it:
// a 12 s burst that sells out in 3 s, MySQL catching up on Redis while the
// lag drains, unpaid orders cancelled by the reaper after 20 s. noKafka
// drops the lag (a baseline) and the audit of every fifth tick (a failed
// read), which the charts must show as gaps.
func syntheticTimeline(noKafka bool) *Timeline {
	tl := &Timeline{IntervalSecs: 1, AttackEndSecs: 12.4}
	for i := 1; i <= 40; i++ {
		t := float64(i)
		s := Sample{T: t, Answers: map[string]float64{}}
		for _, o := range Outcomes {
			s.Answers[o] = 0
		}
		if i <= 12 {
			s.Answers[OutAccepted] = float64(max(0, 400-120*(i-1)))
			s.Answers[OutSoldOut] = float64(min(3800, 1000*(i-1)))
			s.Answers[OutAlready] = 40
			s.Answers[OutLimited] = 15
			s.Answers[OutUnavail] = float64(i % 3)
			p50, p90, p99 := 1.5+float64(i%4)/4, 4.0+float64(i%3), 12.0+float64(i%5)*2
			s.P50ms, s.P90ms, s.P99ms = &p50, &p90, &p99
		}
		sold := min(1000, 330*i)
		written := min(1000, 180*i)
		cancelled := 0
		if i > 20 {
			cancelled = min(500, 60*(i-20))
		}
		paid := min(500, written/2)
		s.Store = &StoreSample{RedisStock: int64(1000 - sold + cancelled), DBStock: int64(1000 - written + cancelled),
			Pending: int64(sold - written), Unpaid: int64(written - paid - cancelled), Paid: int64(paid),
			Cancelled: int64(cancelled), Rejected: int64(i / 4)}
		s.Unsettled = max(0, sold-written-10)
		if !noKafka {
			lag := int64(max(0, sold-written))
			s.Lag = &lag
		} else if i%5 == 0 {
			s.Store = nil
		}
		tl.Samples = append(tl.Samples, s)
	}
	return tl
}

func syntheticOutput() Output {
	audit := Audit{ItemID: 42, Total: 1000, DBStock: 500, RedisStock: 500, Paid: 500, Cancelled: 500, OK: true, Violations: []string{}}
	flash := Report{Scenario: "flashsale", Target: "http://127.0.0.1:8080", ItemID: 42, Mode: "rate", Rate: 4000,
		Buyers: 50000, Units: 1000, Planned: 52000, Sent: 52000, AttackSecs: 12.4, Checks: []string{},
		Audit: &audit, Pass: true, Timeline: syntheticTimeline(false)}
	base := flash
	base.Scenario, base.Baseline, base.Mode, base.Concurrency, base.Rate = BaselineA, true, "concurrency", 64, 0
	base.Timeline = syntheticTimeline(true)
	return Output{Runs: []Report{base, flash}, Pass: true}
}

// TestHTMLReportDrawsInBrowser renders a report of a synthetic timeline and
// opens it in headless Chromium with every host name unresolvable: the page
// must carry ECharts itself, and its own script must report that each of
// the ten charts rendered (ECharts' "finished") with points in every series
// (read back from getOption()), except the consumer lag of the baseline,
// which has no Kafka.
func TestHTMLReportDrawsInBrowser(t *testing.T) {
	out := syntheticOutput()
	file := filepath.Join(t.TempDir(), "report.html")
	if err := WriteHTMLFile(file, out); err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	assertSelfContained(t, page)
	dom := dumpDOM(t, file)
	assertDrew(t, dom, 2*len(chartSpecs()), map[string][]int{"inflight": {2}})
	// The baseline's lag really is empty (the exception above is needed).
	charts, _ := renderedCharts(t, dom)
	for _, c := range charts {
		if c.ID == "run0-inflight" && (len(c.Points) != 3 || c.Points[2] != 0 || c.Points[0] != 32) {
			t.Errorf("baseline in-flight chart: points %v, want [32 40 0] (8 audit gaps, no lag)", c.Points)
		}
	}
}

// assertSelfContained fails when the page refers to anything outside it:
// no script, style sheet, image or frame with a src or href. The inlined
// ECharts source is cut out first (its strings are not markup).
func assertSelfContained(t *testing.T, page []byte) {
	t.Helper()
	js, err := echartsJS()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(page, js) {
		t.Fatal("the page does not inline echarts.min.js")
	}
	markup := bytes.Replace(page, js, nil, 1)
	ext := regexp.MustCompile(`(?i)<(script|link|img|iframe|object|embed|source)\b[^>]*\b(src|href|data)\s*=`)
	if m := ext.Find(markup); m != nil {
		t.Errorf("the page loads something from outside: %s", m)
	}
	if bytes.Contains(markup, []byte("go-echarts.github.io")) {
		t.Error("the page names go-echarts' asset host")
	}
}

// TestTimelineRoundTripsJSON keeps -json readers and the strict parser in
// step with the timeline fields.
func TestTimelineRoundTripsJSON(t *testing.T) {
	out := syntheticOutput()
	var b bytes.Buffer
	if err := WriteJSON(&b, out); err != nil {
		t.Fatal(err)
	}
	got, err := ParseOutput(&b)
	if err != nil {
		t.Fatal(err)
	}
	for i := range out.Runs {
		if !reflect.DeepEqual(got.Runs[i].Timeline, out.Runs[i].Timeline) {
			t.Errorf("run %d: timeline changed in the round trip", i)
		}
	}
}

// TestHTMLWithoutTimeline: a run without samples (no -html while it ran,
// or interrupted at once) still renders, with a note instead of charts.
func TestHTMLWithoutTimeline(t *testing.T) {
	out := syntheticOutput()
	out.Runs[0].Timeline, out.Runs[1].Timeline = nil, &Timeline{}
	var b bytes.Buffer
	if err := WriteHTML(&b, out, time.Unix(0, 0)); err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(b.Bytes(), []byte("No time line was sampled")); n != 2 {
		t.Errorf("%d notes for 2 runs without samples", n)
	}
	if bytes.Contains(b.Bytes(), []byte(`class="chart`)) {
		t.Error("charts without samples")
	}
}
