package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"math"
	"os"

	"github.com/flashsale-dev/flashsale/pkg/config"
)

// FloorFigure is one floor measured in the same invocation as the sale: the
// rate this machine gives a stripped-down path at the sale's concurrency.
type FloorFigure struct {
	// Path is "http" (floor_http.go) or "pipeline" (floor_pipeline.go).
	Path        string `json:"path"`
	Concurrency int    `json:"concurrency"`
	// Rate is the open-loop rate when the sale ran open loop (HTTP only).
	Rate int `json:"rate,omitempty"`
	// Count answers (410s; orders admitted and acknowledged) in Seconds.
	Count   int     `json:"count"`
	Seconds float64 `json:"seconds"`
	PerSec  float64 `json:"per_sec"`
	// Failed counts the rest: other answers, errors.
	Failed int `json:"failed,omitempty"`
}

// Floors compares flashsale's sale, phase by phase, with the floors under
// it: its sold-out answers with the HTTP floor, its order-bearing answers
// with the pipeline floor (issue 24). A ratio is 0 when a side is missing;
// Notes say why.
type Floors struct {
	HTTP     *FloorFigure `json:"http,omitempty"`
	Pipeline *FloorFigure `json:"pipeline,omitempty"`
	// Flashsale is the sale's per-phase rates the ratios use.
	Flashsale Phases `json:"flashsale"`
	// SoldOutVsHTTP is flashsale's sold-out phase 410/s over the HTTP
	// floor's; OrdersVsPipeline its order phase 202/s over the pipeline
	// floor's.
	SoldOutVsHTTP    float64  `json:"sold_out_vs_http"`
	OrdersVsPipeline float64  `json:"orders_vs_pipeline"`
	Notes            []string `json:"notes,omitempty"`
}

// ingressSettings are the ingress's settings as this process's environment
// gives them (FLASHSALE_*), defaults otherwise: the floors use its token
// cache, publish batching, Redis coalescing and timeouts, not the bench's
// guesses. They are not validated: the bench signs with its own secret.
func ingressSettings() (config.Ingress, error) {
	var in config.Ingress
	fs := flag.NewFlagSet("ingress", flag.ContinueOnError)
	in.RegisterFlags(fs)
	if err := fs.Parse(nil); err != nil {
		return in, fmt.Errorf("bench: ingress settings: %w", err)
	}
	if err := config.ApplyEnv(fs, os.LookupEnv); err != nil {
		return in, fmt.Errorf("bench: ingress settings: %w", err)
	}
	return in, nil
}

// MeasureFloors measures both floors after flashsale's run sale (same
// workload, concurrency and attempt count; the pipeline floor for as many
// orders as the sale accepted, at least its units) and computes the
// ratios. A floor that cannot be measured is a note, not a failure: the
// sale's own report stands.
func MeasureFloors(ctx context.Context, c config.Common, w Workload, sale Report) *Floors {
	f := &Floors{Flashsale: sale.Phases}
	in, err := ingressSettings()
	if err != nil {
		f.Notes = append(f.Notes, err.Error())
		return f
	}
	if h, err := MeasureHTTPFloor(ctx, w, in, sale.Planned); err != nil {
		slog.Warn("http floor", "err", err)
		f.Notes = append(f.Notes, "http floor: "+err.Error())
	} else {
		f.HTTP = &h
	}
	conc := w.Concurrency
	if conc == 0 {
		conc = defaultCompareConcurrency
		f.Notes = append(f.Notes, fmt.Sprintf("pipeline floor at concurrency %d: the sale ran open loop", conc))
	}
	if ctx.Err() == nil {
		orders := max(sale.Phases.Accepted, w.Settings.Units)
		if p, err := MeasurePipelineFloor(ctx, c, in, conc, orders, w.Settings.Buckets, w.Settings.Items); err != nil {
			slog.Warn("pipeline floor", "err", err)
			f.Notes = append(f.Notes, "pipeline floor: "+err.Error())
		} else {
			f.Pipeline = &p
		}
	}
	if f.HTTP != nil {
		f.SoldOutVsHTTP = finiteRatio(sale.Phases.SoldOutPerSec, f.HTTP.PerSec)
	}
	if f.Pipeline != nil {
		f.OrdersVsPipeline = finiteRatio(sale.Phases.AcceptedPerSec, f.Pipeline.PerSec)
	}
	return f
}

// finiteRatio is a / b, or 0 when it is not a finite number.
func finiteRatio(a, b float64) float64 {
	r := a / b
	if b <= 0 || math.IsNaN(r) || math.IsInf(r, 0) {
		return 0
	}
	return r
}

// floorLines are the floors' lines of the text and HTML reports.
func floorLines(f *Floors) []string {
	if f == nil {
		return nil
	}
	p := f.Flashsale
	lines := []string{fmt.Sprintf("flashsale per phase: %d 202s in %.2fs to the last 202 = %.0f/s; %d 410s in the %.2fs after it = %.0f/s",
		p.Accepted, p.OrderSecs, p.AcceptedPerSec, p.SoldOut, p.SoldOutSecs, p.SoldOutPerSec)}
	if h := f.HTTP; h != nil {
		lines = append(lines, fmt.Sprintf("HTTP floor (net/http + cached JWT check, 410 only, %d workers): %d 410s in %.2fs = %.0f/s; flashsale sold-out answers/s are %.2f of it",
			h.Concurrency, h.Count, h.Seconds, h.PerSec, f.SoldOutVsHTTP))
	}
	if q := f.Pipeline; q != nil {
		lines = append(lines, fmt.Sprintf("pipeline floor (admission script + Kafka produce acks=all, no HTTP, %d workers): %d orders in %.2fs = %.0f/s; flashsale 202s/s are %.2f of it",
			q.Concurrency, q.Count, q.Seconds, q.PerSec, f.OrdersVsPipeline))
	}
	for _, n := range f.Notes {
		lines = append(lines, "floors: "+n)
	}
	return lines
}
