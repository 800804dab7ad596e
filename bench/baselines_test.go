package main

import (
	"bytes"
	"flag"
	"io"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flashsale-dev/flashsale/pkg/config"
)

// TestBaselinesFlag parses -baselines as the command does: the default runs
// both, a letter runs one, order and case do not matter, and anything else
// is refused with an error that names the flag and the bad value.
func TestBaselinesFlag(t *testing.T) {
	cases := []struct {
		args    []string
		env     string
		want    []string
		wantErr string
	}{
		{args: nil, want: []string{BaselineA, BaselineB}},
		{args: []string{"-baselines", "a"}, want: []string{BaselineA}},
		{args: []string{"-baselines", "b"}, want: []string{BaselineB}},
		{args: []string{"-baselines", "b,a"}, want: []string{BaselineA, BaselineB}},
		{args: []string{"-baselines", " A , b,a"}, want: []string{BaselineA, BaselineB}},
		{args: []string{"-baselines", "c,a"}, want: []string{BaselineA, BaselineC}},
		{args: []string{"-baselines", "c"}, want: []string{BaselineC}},
		{env: "a", want: []string{BaselineA}},
		{args: []string{"-baselines", "b"}, env: "a", want: []string{BaselineB}},
		{args: []string{"-baselines", "d"}, wantErr: `-baselines (FLASHSALE_BASELINES): "d": unknown baseline "d"`},
		{args: []string{"-baselines", "a,x"}, wantErr: `unknown baseline "x"`},
		{args: []string{"-baselines", "ab"}, wantErr: `unknown baseline "ab"`},
		{args: []string{"-baselines", ""}, wantErr: `-baselines (FLASHSALE_BASELINES): "": no baseline named`},
		{args: []string{"-baselines", ","}, wantErr: "no baseline named"},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " ")+" env="+tc.env, func(t *testing.T) {
			t.Setenv("FLASHSALE_BASELINES", tc.env) // restored after the test
			if tc.env == "" {
				_ = os.Unsetenv("FLASHSALE_BASELINES")
			}
			var s Settings
			fs := flag.NewFlagSet("bench", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			err := config.Parse(fs, append([]string{"-jwt-secret", testSecret}, tc.args...), &s)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, err := parseBaselines(s.Baselines)
			if err != nil || !slices.Equal(got, tc.want) {
				t.Fatalf("-baselines %q: %v, %v; want %v", s.Baselines, got, err, tc.want)
			}
		})
	}
}

// TestCompareBaselineA runs -compare -baselines a end to end at a small N:
// baseline (a) and flashsale run, baseline (b) does not, the one ratio is
// to (a), and the JSON, text and HTML reports all say (b) was skipped.
// Flashsale's run carries the ingress's publish latency, one publish per
// accepted request; the baseline, which publishes nothing, has none.
func TestCompareBaselineA(t *testing.T) {
	p := startPipeline(t, time.Minute)
	s := testSettings(p.URL)
	s.Compare, s.Concurrency, s.ReapWait, s.Baselines, s.IngressMetrics = true, 8, 0, "a", p.MetricsURL
	out, plan := runCompareTest(t, p, s)
	if len(out.Runs) != 2 || out.Runs[0].Scenario != BaselineA || out.Runs[1].Scenario != "flashsale" {
		t.Fatalf("runs %v, want %s then flashsale", scenarios(out.Runs), BaselineA)
	}
	if len(out.Ratios) != 1 || out.Ratios[0].Baseline != BaselineA || out.Ratios[0].Throughput <= 0 {
		t.Errorf("ratios %+v, want one to %s", out.Ratios, BaselineA)
	}
	if !slices.Equal(out.SkippedBaselines, []string{BaselineB, BaselineC}) {
		t.Errorf("skipped %v, want [%s %s]", out.SkippedBaselines, BaselineB, BaselineC)
	}
	for _, r := range out.Runs {
		assertSane(t, r, len(plan.Attempts))
	}
	if base := out.Runs[0]; base.Publish != nil {
		t.Errorf("baseline has a publish figure: %+v", *base.Publish)
	}
	f := out.Runs[1]
	if f.Publish == nil {
		t.Fatalf("flashsale has no publish figure: %s", f.PublishNote)
	}
	// One publish per accepted request; a replay's 202 publishes nothing.
	if pub := *f.Publish; pub.Count != uint64(f.Settle.Tracked) || pub.P50ms <= 0 || pub.P99ms < pub.P50ms || pub.Meanms <= 0 {
		t.Errorf("publish %+v for %d accepted requests", pub, f.Settle.Tracked)
	}
	if !out.Pass {
		t.Errorf("compare did not pass")
	}
	var txt, page bytes.Buffer
	if err := WriteText(&txt, out); err != nil {
		t.Fatal(err)
	}
	if err := WriteHTML(&page, out, time.Now()); err != nil {
		t.Fatal(err)
	}
	skipped := BaselineB + ": not run (-baselines), no ratio"
	for what, body := range map[string]string{"text": txt.String(), "html": page.String()} {
		if !strings.Contains(body, skipped) || !strings.Contains(body, "flashsale / "+BaselineA) {
			t.Errorf("%s report lacks the skipped baseline or the ratio to (a)", what)
		}
		if !strings.Contains(body, publishLine(f.Publish)) {
			t.Errorf("%s report lacks the publish line %q", what, publishLine(f.Publish))
		}
		if strings.Contains(body, "flashsale / "+BaselineB) {
			t.Errorf("%s report has a ratio to the baseline not run", what)
		}
	}
}

func scenarios(runs []Report) []string {
	var out []string
	for _, r := range runs {
		out = append(out, r.Scenario)
	}
	return out
}
