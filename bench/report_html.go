package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"os"
	"path/filepath"
	"time"
)

// WriteHTMLFile writes the HTML report to path through a temporary file in
// the same directory, so a browser never opens half a report.
func WriteHTMLFile(path string, o Output) error {
	var b bytes.Buffer
	if err := WriteHTML(&b, o, time.Now()); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".bench-report-*.html")
	if err != nil {
		return fmt.Errorf("bench: html report: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b.Bytes()); err != nil {
		tmp.Close()
		return fmt.Errorf("bench: html report: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("bench: html report: %w", err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return fmt.Errorf("bench: html report: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("bench: html report: %w", err)
	}
	return nil
}

// WriteHTML writes o as one self-contained page: per run, the text report's
// headline and five charts over the run's timeline. Apache ECharts' script
// is inlined, so the page needs no network: the machine that opens it may
// be offline, and nothing is fetched from a CDN. The page's own script
// marks each chart element with what ECharts drew (data-series,
// data-points per series, data-drawn once rendering finished), which the
// browser test reads back from the rendered DOM.
func WriteHTML(w io.Writer, o Output, written time.Time) error {
	js, err := echartsJS()
	if err != nil {
		return err
	}
	// The script is inlined verbatim: a closing tag inside it would end the
	// <script> element early.
	if bytes.Contains(bytes.ToLower(js), []byte("</script")) {
		return fmt.Errorf("bench: %s contains </script: cannot inline it", echartsAsset)
	}
	page := htmlPage{Written: written.UTC().Format(time.RFC3339), Pass: o.Pass, ECharts: template.JS(js), Compare: compareLines(o)}
	options := map[string]json.RawMessage{}
	for i := range o.Runs {
		r := &o.Runs[i]
		hr := htmlRun{Scenario: r.Scenario, Pass: r.Pass, Lines: headline(r)}
		var txt bytes.Buffer
		writeRun(&txt, r)
		hr.Text = txt.String()
		if r.Timeline != nil && len(r.Timeline.Samples) > 0 {
			cs, err := timelineCharts(fmt.Sprintf("run%d", i), r.Timeline)
			if err != nil {
				return err
			}
			for _, c := range cs {
				options[c.ID] = c.Option
			}
			hr.Charts = cs
		}
		page.Runs = append(page.Runs, hr)
	}
	ob, err := json.Marshal(options) // escapes <, > and &: safe inside <script>
	if err != nil {
		return fmt.Errorf("bench: html report: %w", err)
	}
	page.Options = template.JS(ob)
	if err := reportPage.Execute(w, page); err != nil {
		return fmt.Errorf("bench: html report: %w", err)
	}
	return nil
}

type htmlPage struct {
	Written string
	Pass    bool
	ECharts template.JS
	Options template.JS
	// Compare has the -compare ratios and the baselines not run.
	Compare []string
	Runs    []htmlRun
}

// compareLines are the side-by-side facts of a -compare run for the page:
// a ratio per baseline that ran, and a line per baseline left out, so a
// page with one baseline says why the other is missing.
func compareLines(o Output) []string {
	var lines []string
	for _, r := range o.Ratios {
		lines = append(lines, fmt.Sprintf("flashsale / %s: throughput ×%.1f, p99 %.1f× lower", r.Baseline, r.Throughput, r.P99))
	}
	for _, name := range o.SkippedBaselines {
		lines = append(lines, name+": not run (-baselines), no ratio")
	}
	return append(lines, floorLines(o.Floors)...)
}

type htmlRun struct {
	Scenario string
	Pass     bool
	Lines    []string
	Text     string
	Charts   []reportChart
}

// headline is the few facts a reader looks for before the charts.
func headline(r *Report) []string {
	load := fmt.Sprintf("open loop at %d req/s", r.Rate)
	if r.Mode == "concurrency" {
		load = fmt.Sprintf("closed loop, %d workers", r.Concurrency)
	}
	lines := []string{
		fmt.Sprintf("%d buyers for %d units, %s; %s at %s", r.Buyers, r.Units, load, r.itemsLabel(), r.Target),
		fmt.Sprintf("sent %d of %d attempts in %.1f s: %.0f answers/s, p50 %.1f ms, p99 %.1f ms; %d accepted (202), %d sold out (410)",
			r.Sent, r.Planned, r.AttackSecs, r.All.PerSec, r.All.P50ms, r.All.P99ms, r.Outcome(OutAccepted).Count, r.Outcome(OutSoldOut).Count),
	}
	if r.Publish != nil {
		lines = append(lines, publishLine(r.Publish))
	}
	if r.Retries != nil {
		lines = append(lines, retriesLine(r.Retries))
	}
	if a := r.Audit; a != nil {
		lines = append(lines, fmt.Sprintf("audit %s: total %d, MySQL stock %d, Redis stock %d, pending %d, unpaid %d, paid %d, cancelled %d, rejected %d",
			passFail(a.OK), a.Total, a.DBStock, a.RedisStock, a.Pending, a.Unpaid, a.Paid, a.Cancelled, a.Rejected))
	} else {
		lines = append(lines, "audit unavailable: "+r.AuditErr)
	}
	return lines
}

var reportPage = template.Must(template.New("report").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>flashsale bench report</title>
<style>
body { font: 14px/1.45 "DejaVu Sans", system-ui, sans-serif; margin: 16px 24px; color: #222; background: #fff; }
h1 { font-size: 20px; margin: 0 0 2px; }
h2 { font-size: 17px; margin: 18px 0 2px; }
p { margin: 2px 0; color: #444; }
.PASS { color: #2e7d32; } .FAIL { color: #c62828; }
.grid { display: grid; grid-template-columns: repeat(auto-fill, minmax(560px, 1fr)); gap: 10px; margin-top: 8px; }
.chart { height: 290px; border: 1px solid #e0e0e0; border-radius: 4px; }
.chart.wide { grid-column: 1 / -1; }
pre { font-size: 12px; background: #fafafa; padding: 8px; overflow-x: auto; }
</style>
<script>{{.ECharts}}</script>
</head>
<body>
<h1>flashsale bench report</h1>
<p>written {{.Written}}; result {{if .Pass}}<b class="PASS">PASS</b>{{else}}<b class="FAIL">FAIL</b>{{end}}; x axis: minutes:seconds since the run started, one sample a second</p>
{{range .Compare}}<p>{{.}}</p>
{{end}}{{range .Runs}}<section class="run">
<h2>{{.Scenario}} {{if .Pass}}<span class="PASS">PASS</span>{{else}}<span class="FAIL">FAIL</span>{{end}}</h2>
{{range .Lines}}<p>{{.}}</p>
{{end}}{{if .Charts}}<div class="grid">
{{range .Charts}}<div class="chart{{if .Wide}} wide{{end}}" id="{{.ID}}" data-chart="{{.Key}}"></div>
{{end}}</div>
{{else}}<p>No time line was sampled for this run.</p>
{{end}}<details><summary>text report</summary><pre>{{.Text}}</pre></details>
</section>
{{end}}<script>
"use strict";
(function () {
  const options = {{.Options}};
  // A point counts when its y value is a finite number ("-" is a gap).
  function finite(d) {
    let v = d !== null && typeof d === "object" && !Array.isArray(d) ? d.value : d;
    if (Array.isArray(v)) v = v[v.length - 1];
    return typeof v === "number" && isFinite(v);
  }
  const charts = [];
  document.querySelectorAll("[data-chart]").forEach(function (el) {
    try {
      const chart = echarts.init(el, null, { renderer: "canvas" });
      chart.on("finished", function () { el.dataset.drawn = "true"; });
      chart.setOption(options[el.id]);
      const series = chart.getOption().series || [];
      el.dataset.series = String(series.length);
      el.dataset.points = series.map(function (s) { return (s.data || []).filter(finite).length; }).join(",");
      charts.push(chart);
    } catch (e) {
      el.dataset.error = String(e);
    }
  });
  document.body.dataset.charts = String(charts.length);
  window.addEventListener("resize", function () { charts.forEach(function (c) { c.resize(); }); });
})();
</script>
</body>
</html>
`))
