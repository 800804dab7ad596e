package main

import (
	"bytes"
	"context"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/flashsale-dev/flashsale/internal/testenv"
)

// chromiumArgs are the flags of every headless run here. Every host name
// resolves to nothing, so a page that needed the network (a CDN script)
// would fail to draw instead of quietly fetching it. --no-sandbox because
// CI runs as root.
func chromiumArgs(t *testing.T) []string {
	return []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
		"--hide-scrollbars", "--user-data-dir=" + t.TempDir(), "--host-resolver-rules=MAP * ~NOTFOUND",
		"--virtual-time-budget=10000"}
}

// dumpDOM opens file in headless chromium and returns the DOM as the page's
// own scripts left it.
func dumpDOM(t *testing.T, file string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	args := append(chromiumArgs(t), "--window-size=1280,2000", "--dump-dom", "file://"+file)
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, testenv.Chromium(t), args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium --dump-dom %s: %v\n%s", file, err, tail(stderr.String(), 2000))
	}
	t.Logf("chromium rendered %s in %v", file, time.Since(start).Round(time.Millisecond))
	if stdout.Len() == 0 {
		t.Fatalf("chromium dumped no DOM\n%s", tail(stderr.String(), 2000))
	}
	return stdout.String()
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// drawnChart is what the report's own script wrote on one chart element.
type drawnChart struct {
	ID, Key string
	Series  int
	Points  []int // finite points per series
	Drawn   bool  // ECharts fired "finished": it rendered
	Err     string
	Has     bool // the script wrote data-series at all
}

var (
	chartTag  = regexp.MustCompile(`<div class="chart[" ][^>]*>`)
	attribute = regexp.MustCompile(`([a-z][a-z-]*)="([^"]*)"`)
	// The page's body, not the "<body" strings inside the inlined script.
	bodyCharts = regexp.MustCompile(`<body[^>]*\bdata-charts="(\d+)"`)
)

// renderedCharts reads the chart elements back from a dumped DOM, and the
// number of charts the page says it initialised.
func renderedCharts(t *testing.T, dom string) ([]drawnChart, int) {
	t.Helper()
	var out []drawnChart
	for _, tag := range chartTag.FindAllString(dom, -1) {
		c := drawnChart{}
		for _, m := range attribute.FindAllStringSubmatch(tag, -1) {
			switch m[1] {
			case "id":
				c.ID = m[2]
			case "data-chart":
				c.Key = m[2]
			case "data-series":
				c.Has = true
				c.Series, _ = strconv.Atoi(m[2])
			case "data-points":
				for _, p := range strings.Split(m[2], ",") {
					n, err := strconv.Atoi(p)
					if err != nil {
						t.Fatalf("chart %s: data-points %q", c.ID, m[2])
					}
					c.Points = append(c.Points, n)
				}
			case "data-drawn":
				c.Drawn = m[2] == "true"
			case "data-error":
				c.Err = m[2]
			}
		}
		out = append(out, c)
	}
	n := -1
	if m := bodyCharts.FindStringSubmatch(dom); m != nil {
		n, _ = strconv.Atoi(m[1])
	}
	return out, n
}

// assertDrew fails unless every chart was initialised, rendered and has at
// least one point; empty lists series (by chart key and index) allowed to
// be empty, e.g. consumer lag on a baseline.
func assertDrew(t *testing.T, dom string, wantCharts int, empty map[string][]int) {
	t.Helper()
	got, inited := renderedCharts(t, dom)
	if len(got) != wantCharts {
		t.Fatalf("page has %d chart elements, want %d", len(got), wantCharts)
	}
	if inited != wantCharts {
		t.Errorf("page initialised %d charts, want %d (data-charts on body)", inited, wantCharts)
	}
	for _, c := range got {
		if c.Err != "" || !c.Has || !c.Drawn || c.Series == 0 || len(c.Points) != c.Series {
			t.Errorf("chart %s: error %q, checked %v, drawn %v, %d series, points %v", c.ID, c.Err, c.Has, c.Drawn, c.Series, c.Points)
			continue
		}
		total := 0
		for i, p := range c.Points {
			total += p
			if p == 0 && !slices.Contains(empty[c.Key], i) {
				t.Errorf("chart %s: series %d drew no point (points %v)", c.ID, i, c.Points)
			}
		}
		if total == 0 {
			t.Errorf("chart %s drew no data", c.ID)
		}
	}
}
