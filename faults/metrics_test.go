//go:build faults

package faults

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// TestMetricsAgreeWithDatabase runs a sale with no fault, then scrapes every
// deployable's /metrics as Prometheus would: each exposition must pass
// Prometheus' own linter (promtool check metrics), and the counters must
// agree with what MySQL recorded: every admitted request has exactly one
// arbiter row (accepted + aborted = ORDERED + REJECTED + ABORTED + VOIDED),
// the consumers' decisions are the ORDERED and REJECTED rows, and the
// reaper's cancellations and restores are the CANCELLED orders.
func TestMetricsAgreeWithDatabase(t *testing.T) {
	start := time.Now()
	p := newPipeline(t, defaultSettings())
	p.startAll()
	w := p.start(burst(pick(300, 1000), 80))
	w.wait()
	r := p.settle("no fault: metrics against the database", start, w)

	ingress := scrape(t, strings.TrimSuffix(p.ingress.health, "/healthz")+"/metrics")
	var consumers, reapers []map[string]float64
	for _, c := range p.consumers {
		consumers = append(consumers, scrape(t, strings.TrimSuffix(c.health, "/healthz")+"/metrics"))
	}
	ctx := context.Background()
	rows := map[string]float64{}
	for o, n := range p.outcomeCounts(ctx) {
		rows[o] = float64(n)
	}
	var cancelled float64
	if err := p.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM orders WHERE item_id = ? AND status = 'CANCELLED'", p.itemID).Scan(&cancelled); err != nil {
		t.Fatal(err)
	}

	// settle has seen every restore confirmed in MySQL; the reaper counts
	// it right after, so poll its counters briefly instead of guessing.
	scrapeReapers := func() {
		reapers = reapers[:0]
		for _, rp := range p.reapers {
			reapers = append(reapers, scrape(t, strings.TrimSuffix(rp.health, "/healthz")+"/metrics"))
		}
	}
	sum := func(ms []map[string]float64, prefix string) float64 {
		var s float64
		for _, m := range ms {
			for k, v := range m {
				if strings.HasPrefix(k, prefix) {
					s += v
				}
			}
		}
		return s
	}
	deadline := time.Now().Add(10 * time.Second)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for scrapeReapers(); sum(reapers, `flashsale_reaper_restores_total{store="redis"}`) < cancelled && time.Now().Before(deadline); scrapeReapers() {
		<-tick.C
	}
	admitted := ingress[`flashsale_admissions_total{outcome="accepted"}`] + ingress[`flashsale_admissions_total{outcome="publish_failed"}`]
	decided := rows["ORDERED"] + rows["REJECTED"] + rows["ABORTED"] + rows["VOIDED"]
	t.Logf("metrics: admitted %v, consumer decisions %v, reaper cancellations %v, restores mysql %v redis %v; database: %v, cancelled %v",
		admitted, sum(consumers, "flashsale_consumer_outcomes_total"), sum(reapers, "flashsale_reaper_cancellations_total"),
		sum(reapers, `flashsale_reaper_restores_total{store="mysql"}`), sum(reapers, `flashsale_reaper_restores_total{store="redis"}`), rows, cancelled)
	if admitted == 0 || admitted != decided {
		t.Errorf("ingress admitted %v requests, the arbiter decided %v (%v)", admitted, decided, rows)
	}
	if got, want := sum(consumers, "flashsale_consumer_outcomes_total"), rows["ORDERED"]+rows["REJECTED"]; got != want {
		t.Errorf("consumers counted %v decisions, the arbiter holds %v ORDERED+REJECTED", got, want)
	}
	if got := sum(reapers, "flashsale_reaper_cancellations_total"); got != cancelled {
		t.Errorf("reaper counted %v cancellations, orders has %v CANCELLED", got, cancelled)
	}
	for _, store := range []string{"mysql", "redis"} {
		if got := sum(reapers, `flashsale_reaper_restores_total{store="`+store+`"}`); got != cancelled {
			t.Errorf("reaper counted %v %s restores for %v cancelled orders", got, store, cancelled)
		}
	}
	if r.direct.Cancelled == 0 {
		t.Logf("note: no order expired in this run, so the reaper counters were compared at 0")
	}
}

// scrape GETs a /metrics page, lints it with promtool and returns its
// samples keyed by name{labels} (labels sorted as exposed).
func scrape(t *testing.T, url string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("scrape %s: %v", url, err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape %s: %d %v", url, resp.StatusCode, err)
	}
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatalf("promtool not found: run `make stack-up` (it installs Debian's prometheus package)")
	}
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = bytes.NewReader(body)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("promtool check metrics %s: %v\n%s", url, err, out)
	}
	parser := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("parse %s: %v", url, err)
	}
	out := map[string]float64{}
	for name, mf := range fams {
		for _, m := range mf.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+`="`+l.GetValue()+`"`)
			}
			key := name
			if len(labels) > 0 {
				key += "{" + strings.Join(labels, ",") + "}"
			}
			switch {
			case m.Counter != nil:
				out[key] = m.Counter.GetValue()
			case m.Gauge != nil:
				out[key] = m.Gauge.GetValue()
			}
		}
	}
	return out
}
