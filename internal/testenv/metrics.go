package testenv

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Metric reads one series' value from reg (a counter, a gauge, or a
// histogram's sample count); labels are name, value pairs. A missing series
// fails the test.
func Metric(t testing.TB, reg prometheus.Gatherer, name string, labels ...string) float64 {
	t.Helper()
	vs := series(t, reg, name, labels)
	if len(vs) == 0 {
		t.Fatalf("testenv: metric %s%v not found", name, labels)
	}
	return vs[0]
}

// MetricSum is the sum of the values of every series of name in reg whose
// labels include labels (name, value pairs), as Metric reads each: 0 when
// there is none. For a metric several registrants of one test add series to
// (a label of their own each).
func MetricSum(t testing.TB, reg prometheus.Gatherer, name string, labels ...string) float64 {
	t.Helper()
	var sum float64
	for _, v := range series(t, reg, name, labels) {
		sum += v
	}
	return sum
}

// series is the values of name's series in reg that carry labels, in the
// order reg gathers them.
func series(t testing.TB, reg prometheus.Gatherer, name string, labels []string) []float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var out []float64
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			for i := 0; i+1 < len(labels); i += 2 {
				if !hasLabel(m, labels[i], labels[i+1]) {
					continue next
				}
			}
			switch {
			case m.Counter != nil:
				out = append(out, m.Counter.GetValue())
			case m.Gauge != nil:
				out = append(out, m.Gauge.GetValue())
			case m.Histogram != nil:
				out = append(out, float64(m.Histogram.GetSampleCount()))
			}
		}
	}
	return out
}

func hasLabel(m *dto.Metric, k, v string) bool {
	for _, l := range m.GetLabel() {
		if l.GetName() == k && l.GetValue() == v {
			return true
		}
	}
	return false
}
