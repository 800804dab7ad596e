package console_test

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/console"
	"github.com/flashsale-dev/flashsale/pkg/ctl"
)

// liveRead is a /live answer with the parts the arithmetic reads.
func liveRead(at string, answers map[string]int64, count int64, buckets ...int64) string {
	les := []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5}
	var bs []string
	for i, le := range les {
		n := int64(0)
		if i < len(buckets) {
			n = buckets[i]
		} else if len(buckets) > 0 {
			n = buckets[len(buckets)-1]
		}
		bs = append(bs, fmt.Sprintf(`{"le":%v,"count":%d}`, le, n))
	}
	a, _ := json.Marshal(answers)
	return fmt.Sprintf(`{"at":%q,"item":null,"audit":null,"answers":%s,"accepted_latency":{"count":%d,"sum_seconds":1.5,"buckets":[%s]},
		"consumer_lag":null,"dlq_messages":null,"unavailable":["mysql","kafka"]}`, at, a, count, strings.Join(bs, ","))
}

// pageView is what the page's compute returns.
type pageView struct {
	Interval *float64           `json:"interval"`
	Rates    map[string]float64 `json:"rates"`
	P50, P99 *struct {
		Seconds float64 `json:"seconds"`
		Above   bool    `json:"above"`
	}
}

// TestComputeAgreesWithWatch: the console's answers/s and 202 p50/p99 are
// flashsalectl sale watch's (pkg/ctl Compute, histogram_quantile over the
// interval's differenced buckets) for the same two reads of /live: the two
// views of one sale must not disagree. Run in Chromium on the served page.
func TestComputeAgreesWithWatch(t *testing.T) {
	srv := httptest.NewServer(console.Handler())
	defer srv.Close()
	b := newBrowser(t, 2*time.Minute)
	do(t, b.ctx, "open the console", chromedp.Navigate(srv.URL+console.Path))

	t0 := "2026-12-02T08:30:00.000250Z"
	t1 := "2026-12-02T08:30:01.250750Z" // 1.2505 s later: microseconds count
	cases := []struct{ name, prev, cur string }{
		{"steady sale", liveRead(t0, map[string]int64{"accepted": 100, "sold_out": 0}, 100, 0, 10, 90, 100),
			liveRead(t1, map[string]int64{"accepted": 220, "sold_out": 30}, 220, 0, 10, 150, 204, 204, 210, 220)},
		{"new outcome appears", liveRead(t0, map[string]int64{"accepted": 5}, 5, 1, 5),
			liveRead(t1, map[string]int64{"accepted": 9, "sale_ended": 40}, 9, 1, 6, 7, 9)},
		{"no 202 in the interval", liveRead(t0, map[string]int64{"accepted": 7, "sold_out": 3}, 7, 7),
			liveRead(t1, map[string]int64{"accepted": 7, "sold_out": 90}, 7, 7)},
		{"p99 above the highest bound", liveRead(t0, map[string]int64{"accepted": 0}, 0),
			liveRead(t1, map[string]int64{"accepted": 200}, 200, 0, 0, 100, 150, 160, 170, 180, 185, 190, 190, 190, 190)},
		{"counters reset (tally cleared)", liveRead(t0, map[string]int64{"accepted": 500, "sold_out": 20}, 500, 100, 300, 500),
			liveRead(t1, map[string]int64{"accepted": 40, "sold_out": 25}, 40, 10, 30, 40)},
		{"same instant", liveRead(t1, map[string]int64{"accepted": 5}, 5, 5), liveRead(t1, map[string]int64{"accepted": 9}, 9, 9)},
	}
	for _, c := range cases {
		var prev, cur ctl.Live
		if err := json.Unmarshal([]byte(c.prev), &prev); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(c.cur), &cur); err != nil {
			t.Fatal(err)
		}
		want := ctl.Compute(&prev, &cur)
		got := eval[pageView](t, b.ctx, "flashsaleConsole.compute("+c.prev+", "+c.cur+")")

		if (got.Interval == nil) != (want.Interval == 0) || (got.Interval != nil && !near(*got.Interval, want.Interval)) {
			t.Errorf("%s: interval %v, watch's %v", c.name, testenv.Deref(got.Interval), want.Interval)
		}
		if len(got.Rates) != len(want.Rates) {
			t.Errorf("%s: rates %v, watch's %v", c.name, got.Rates, want.Rates)
		}
		for k, w := range want.Rates {
			if g, ok := got.Rates[k]; !ok || !near(g, w) {
				t.Errorf("%s: %s %v/s, watch's %v/s", c.name, k, g, w)
			}
		}
		for _, q := range []struct {
			name string
			got  *struct {
				Seconds float64 `json:"seconds"`
				Above   bool    `json:"above"`
			}
			want *ctl.Quantile
		}{{"p50", got.P50, want.P50}, {"p99", got.P99, want.P99}} {
			switch {
			case (q.got == nil) != (q.want == nil):
				t.Errorf("%s: %s %+v, watch's %+v", c.name, q.name, q.got, q.want)
			case q.got != nil && (!near(q.got.Seconds, q.want.Seconds) || q.got.Above != q.want.Above):
				t.Errorf("%s: %s %v s (above %v), watch's %v s (above %v)", c.name, q.name, q.got.Seconds, q.got.Above, q.want.Seconds, q.want.Above)
			}
		}
		t.Logf("%s: interval %.4f s, rates %v, p50 %+v, p99 %+v", c.name, want.Interval, want.Rates, want.P50, want.P99)
	}
	b.check(t, srv.URL)
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }
