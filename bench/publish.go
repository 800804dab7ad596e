package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/flashsale-dev/flashsale/pkg/histquantile"
)

// publishMetric is the ingress's histogram of synchronous Kafka publishes
// (WriteMessages until every in-sync replica acknowledged).
const publishMetric = "flashsale_kafka_publish_duration_seconds"

// PublishStats is the Kafka publish latency of the admissions of one run,
// from the ingress's own histogram scraped before and after the attack: the
// part of a 202's latency spent waiting for the batch and its acks.
// Percentiles are interpolated within the histogram's buckets, as
// Prometheus' histogram_quantile does.
type PublishStats struct {
	Count  uint64  `json:"count"`
	P50ms  float64 `json:"p50_ms"`
	P99ms  float64 `json:"p99_ms"`
	Meanms float64 `json:"mean_ms"`
}

// histogram is one scrape of a cumulative Prometheus histogram.
type histogram struct {
	count  uint64
	sum    float64
	bounds []float64 // upper bounds, ascending, +Inf excluded
	cum    []uint64  // cumulative counts per bound
}

// scrapePublish reads the publish histogram from an ingress's /metrics.
func scrapePublish(ctx context.Context, url string) (histogram, error) {
	fams, err := scrape(ctx, url)
	if err != nil {
		return histogram{}, err
	}
	mf, ok := fams[publishMetric]
	if !ok || len(mf.GetMetric()) != 1 || mf.GetMetric()[0].GetHistogram() == nil {
		return histogram{}, fmt.Errorf("bench: scrape %s: no histogram %s", url, publishMetric)
	}
	h := mf.GetMetric()[0].GetHistogram()
	out := histogram{count: h.GetSampleCount(), sum: h.GetSampleSum()}
	for _, b := range h.GetBucket() {
		if math.IsInf(b.GetUpperBound(), 1) {
			continue
		}
		out.bounds = append(out.bounds, b.GetUpperBound())
		out.cum = append(out.cum, b.GetCumulativeCount())
	}
	return out, nil
}

// scrape reads the metric families a Prometheus /metrics URL serves.
func scrape(ctx context.Context, url string) (map[string]*dto.MetricFamily, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("bench: scrape %s: %w", url, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("bench: scrape %s: %w", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil || resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("bench: scrape %s: status %d: %v", url, resp.StatusCode, err)
	}
	parser := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("bench: scrape %s: %w", url, err)
	}
	return fams, nil
}

// at is the q-quantile of the buckets (pkg/histquantile): past the last
// finite bound it answers that bound, as histogram_quantile does.
func at(q float64, bounds []float64, cum []uint64, total uint64) float64 {
	v, _, _ := histquantile.FromBuckets(q, bounds, cum, total)
	return v
}

// since is what was observed between before and h.
func (h histogram) since(before histogram) (PublishStats, error) {
	if len(before.bounds) != len(h.bounds) || h.count < before.count {
		return PublishStats{}, fmt.Errorf("bench: publish histogram changed between scrapes (ingress restarted?)")
	}
	n := h.count - before.count
	if n == 0 {
		return PublishStats{}, fmt.Errorf("bench: no publishes during the run")
	}
	cum := make([]uint64, len(h.cum))
	for i := range cum {
		cum[i] = h.cum[i] - before.cum[i]
	}
	return PublishStats{Count: n, Meanms: 1000 * (h.sum - before.sum) / float64(n),
		P50ms: 1000 * at(0.5, h.bounds, cum, n), P99ms: 1000 * at(0.99, h.bounds, cum, n)}, nil
}

// publishScrape is the before half of a run's publish figure.
type publishScrape struct {
	url    string
	before histogram
	err    error
}

// startPublishScrape scrapes the histogram before the attack; url "" means
// no figure (baselines, or -ingress-metrics empty).
func startPublishScrape(ctx context.Context, url string) *publishScrape {
	if url == "" {
		return nil
	}
	p := &publishScrape{url: url}
	p.before, p.err = scrapePublish(ctx, url)
	return p
}

// finish scrapes again after the attack and returns the run's figure, or
// the note saying why there is none. A failed scrape never fails the run.
func (p *publishScrape) finish(ctx context.Context) (*PublishStats, string) {
	if p == nil {
		return nil, ""
	}
	if p.err != nil {
		return nil, "not measured: " + p.err.Error()
	}
	after, err := scrapePublish(context.WithoutCancel(ctx), p.url)
	if err != nil {
		return nil, "not measured: " + err.Error()
	}
	st, err := after.since(p.before)
	if err != nil {
		return nil, "not measured: " + err.Error()
	}
	return &st, ""
}

// publishLine is the publish figure as the text and HTML reports print it.
func publishLine(p *PublishStats) string {
	return fmt.Sprintf("kafka publish (ingress histogram, %d publishes, acks from all in-sync replicas): p50 %.2f ms, p99 %.2f ms, mean %.2f ms",
		p.Count, p.P50ms, p.P99ms, p.Meanms)
}
