package main

import (
	"encoding/json"
	"fmt"
	"math"

	"github.com/go-echarts/go-echarts/v2/charts"
	"github.com/go-echarts/go-echarts/v2/opts"
)

// reportChart is one chart of the HTML report: the id of its element and
// its ECharts option, built with go-echarts' typed options.
type reportChart struct {
	ID     string
	Key    string
	Wide   bool // spans the page's width
	Option json.RawMessage
}

// timelineSeries is one line of a chart and how to read it from a sample;
// ok false leaves a gap at that tick (nothing measured), never a zero.
type timelineSeries struct {
	name  string
	color string
	value func(Sample) (v float64, ok bool)
}

// chartSpec is one chart of a run: what it shows and its lines.
type chartSpec struct {
	key, title, unit string
	// stacked draws the lines as stacked areas (the parts of a whole).
	stacked bool
	wide    bool
	series  []timelineSeries
}

// outcomeColors keep an outcome's colour the same in every report.
var outcomeColors = map[string]string{
	OutAccepted: "#2e7d32", OutAlready: "#f9a825", OutSoldOut: "#78909c",
	OutLimited: "#8e24aa", OutUnavail: "#c62828", OutOther: "#212121",
}

// chartSpecs are the report's charts, in the order a sale unfolds: the
// answers, how fast they came, the stock on both sides, what is still in
// flight, and the orders it all became.
func chartSpecs() []chartSpec {
	answers := make([]timelineSeries, 0, len(Outcomes))
	for _, o := range Outcomes {
		answers = append(answers, timelineSeries{o, outcomeColors[o], func(s Sample) (float64, bool) {
			v, ok := s.Answers[o]
			return v, ok
		}})
	}
	store := func(f func(*StoreSample) int64) func(Sample) (float64, bool) {
		return func(s Sample) (float64, bool) {
			if s.Store == nil {
				return 0, false
			}
			return float64(f(s.Store)), true
		}
	}
	latency := func(f func(Sample) *float64) func(Sample) (float64, bool) {
		return func(s Sample) (float64, bool) {
			if p := f(s); p != nil {
				return *p, true
			}
			return 0, false
		}
	}
	return []chartSpec{
		{key: "answers", title: "Answers per second by outcome", unit: "answers/s", stacked: true, wide: true, series: answers},
		{key: "latency", title: "Latency of each second's answers", unit: "ms", series: []timelineSeries{
			{"p50", "#1e88e5", latency(func(s Sample) *float64 { return s.P50ms })},
			{"p90", "#fb8c00", latency(func(s Sample) *float64 { return s.P90ms })},
			{"p99", "#e53935", latency(func(s Sample) *float64 { return s.P99ms })},
		}},
		{key: "stock", title: "Stock", unit: "units", series: []timelineSeries{
			{"Redis", "#d32f2f", store(func(s *StoreSample) int64 { return s.RedisStock })},
			{"MySQL", "#1565c0", store(func(s *StoreSample) int64 { return s.DBStock })},
		}},
		{key: "inflight", title: "In flight: reservations, unsettled 202s, consumer lag", unit: "count", series: []timelineSeries{
			{"pending reservations (Redis)", "#6d4c41", store(func(s *StoreSample) int64 { return s.Pending })},
			{"202s not yet terminal (bench)", "#00897b", func(s Sample) (float64, bool) { return float64(s.Unsettled), true }},
			{"consumer lag (messages)", "#5e35b1", func(s Sample) (float64, bool) {
				if s.Lag == nil {
					return 0, false
				}
				return float64(*s.Lag), true
			}},
		}},
		{key: "orders", title: "Orders by status (MySQL)", unit: "units", series: []timelineSeries{
			{"UNPAID", "#fbc02d", store(func(s *StoreSample) int64 { return s.Unpaid })},
			{"PAID", "#2e7d32", store(func(s *StoreSample) int64 { return s.Paid })},
			{"CANCELLED", "#757575", store(func(s *StoreSample) int64 { return s.Cancelled })},
			{"REJECTED (requests)", "#c62828", store(func(s *StoreSample) int64 { return s.Rejected })},
		}},
	}
}

// timelineCharts builds run i's charts over its timeline.
func timelineCharts(prefix string, tl *Timeline) ([]reportChart, error) {
	specs := chartSpecs()
	out := make([]reportChart, 0, len(specs))
	for _, sp := range specs {
		line := buildLine(sp, tl)
		line.Validate()
		opt := line.JSON()
		// The x axis is a time axis of elapsed time (milliseconds from 0,
		// shown in UTC as mm:ss): on a value axis ECharts would stack the
		// answers on x, and a category axis would hide a skipped tick.
		opt["useUTC"] = true
		b, err := json.Marshal(opt)
		if err != nil {
			return nil, fmt.Errorf("bench: chart %s: %w", sp.key, err)
		}
		out = append(out, reportChart{ID: prefix + "-" + sp.key, Key: sp.key, Wide: sp.wide, Option: b})
	}
	return out, nil
}

// buildLine is one chart: x is the time since the run started, one line per
// series, a dashed mark where the attack ended.
func buildLine(sp chartSpec, tl *Timeline) *charts.Line {
	line := charts.NewLine()
	var last float64
	if n := len(tl.Samples); n > 0 {
		last = math.Ceil(tl.Samples[n-1].T)
	}
	line.SetGlobalOptions(
		charts.WithAnimation(false),
		charts.WithTitleOpts(opts.Title{Title: sp.title, Left: "8", Top: "4",
			TitleStyle: &opts.TextStyle{FontSize: 14, FontWeight: "bold", Color: "#333"}}),
		charts.WithLegendOpts(opts.Legend{Show: opts.Bool(true), Top: "28", Left: "8", ItemWidth: 14, ItemHeight: 8,
			TextStyle: &opts.TextStyle{FontSize: 11}}),
		charts.WithTooltipOpts(opts.Tooltip{Show: opts.Bool(true), Trigger: "axis"}),
		charts.WithGridOpts(opts.Grid{Top: "64", Left: "12", Right: "24", Bottom: "8", ContainLabel: opts.Bool(true)}),
		charts.WithXAxisOpts(opts.XAxis{Type: "time", Min: 0, Max: last * 1000,
			AxisLabel: &opts.AxisLabel{Formatter: "{mm}:{ss}", HideOverlap: opts.Bool(true)}}),
		charts.WithYAxisOpts(opts.YAxis{Type: "value", Name: sp.unit, NameGap: 8}),
	)
	for i, se := range sp.series {
		data := make([]opts.LineData, len(tl.Samples))
		for j, s := range tl.Samples {
			var y any = "-" // ECharts' empty value: the line breaks there
			if v, ok := se.value(s); ok {
				y = round1(v)
			}
			data[j] = opts.LineData{Value: []any{msOf(s.T), y}}
		}
		so := []charts.SeriesOpts{
			charts.WithLineChartOpts(opts.LineChart{ShowSymbol: opts.Bool(false)}),
			charts.WithItemStyleOpts(opts.ItemStyle{Color: se.color}),
			charts.WithLineStyleOpts(opts.LineStyle{Color: se.color, Width: 2}),
		}
		if sp.stacked {
			so = append(so, charts.WithLineChartOpts(opts.LineChart{ShowSymbol: opts.Bool(false), Stack: sp.key}),
				charts.WithAreaStyleOpts(opts.AreaStyle{Opacity: opts.Float(0.55)}),
				charts.WithLineStyleOpts(opts.LineStyle{Color: se.color, Width: 1}))
		}
		if i == 0 && tl.AttackEndSecs > 0 {
			so = append(so,
				charts.WithMarkLineNameXAxisItemOpts(opts.MarkLineNameXAxisItem{Name: "attack ends", XAxis: msOf(tl.AttackEndSecs)}),
				charts.WithMarkLineStyleOpts(opts.MarkLineStyle{Symbol: []string{"none", "none"},
					LineStyle: &opts.LineStyle{Color: "#9e9e9e", Type: "dashed", Width: 1},
					Label:     &opts.Label{Show: opts.Bool(true), Formatter: "attack ends", Color: "#757575"}}))
		}
		line.AddSeries(se.name, data, so...)
	}
	return line
}

func round1(v float64) float64 { return math.Round(v*10) / 10 }

// msOf is a time on the chart's x axis: milliseconds since the run started.
func msOf(secs float64) int64 { return int64(math.Round(secs * 1000)) }
