package main

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/segmentio/kafka-go"
)

// TestFloors runs a tiny sale and then both floors on the local stack (what
// -floor does) and checks that the ratios come from real counts: every
// HTTP floor answer a 410, every pipeline floor order admitted and
// acknowledged, the ratios the sale's per-phase rates over the floors',
// finite and above 0, and the floor's throwaway topic gone afterwards.
func TestFloors(t *testing.T) {
	p := startPipeline(t, time.Minute)
	s := testSettings(p.URL)
	s.Floor, s.Concurrency, s.ReapWait = true, 8, 0
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	plan, tokens := testPlan(t, s)
	before := floorTopics(t, p.Brokers)
	// A failed run leaves no topic behind either.
	t.Cleanup(func() {
		var left []string
		for name := range floorTopics(t, p.Brokers) {
			if !before[name] {
				left = append(left, name)
			}
		}
		if len(left) > 0 {
			deleteTopics(p.Brokers, left...)
		}
	})
	w := Workload{Settings: s, Plan: plan, Tokens: tokens, Concurrency: s.Concurrency, LagGroup: p.Group, LagTopic: p.Topic}
	rep, err := RunScenario(ctx, w, Scenario{Name: "flashsale", Base: p.URL, Brokers: p.Brokers, Group: p.Group, Topic: p.Topic})
	if err != nil {
		t.Fatal(err)
	}
	f := MeasureFloors(ctx, p.Common, w, rep)
	out := roundTrip(t, Output{Runs: []Report{rep}, Floors: f, Pass: rep.Pass})
	f, rep = out.Floors, out.Runs[0]
	if f == nil {
		t.Fatal("no floors in the report")
	}
	if len(f.Notes) > 0 {
		t.Errorf("floor notes: %v", f.Notes)
	}
	ph := rep.Phases
	if ph.Accepted != rep.Outcome(OutAccepted).Count || ph.Accepted == 0 || ph.SoldOut == 0 || ph.SoldOut > rep.Outcome(OutSoldOut).Count {
		t.Errorf("sale phases %+v against 202s %d, 410s %d", ph, rep.Outcome(OutAccepted).Count, rep.Outcome(OutSoldOut).Count)
	}
	if f.Flashsale != ph {
		t.Errorf("floors compare phases %+v, the sale's are %+v", f.Flashsale, ph)
	}
	if h := f.HTTP; h == nil || h.Count != rep.Planned || h.Failed != 0 || h.Concurrency != s.Concurrency || h.PerSec <= 0 {
		t.Errorf("http floor %+v, want %d 410s at concurrency %d", h, rep.Planned, s.Concurrency)
	}
	if q := f.Pipeline; q == nil || q.Count != max(ph.Accepted, s.Units) || q.Failed != 0 || q.Concurrency != s.Concurrency || q.PerSec <= 0 {
		t.Errorf("pipeline floor %+v, want %d orders at concurrency %d", q, max(ph.Accepted, s.Units), s.Concurrency)
	}
	for name, r := range map[string][2]float64{"sold out / http": {f.SoldOutVsHTTP, ph.SoldOutPerSec / perSec(f.HTTP)},
		"orders / pipeline": {f.OrdersVsPipeline, ph.AcceptedPerSec / perSec(f.Pipeline)}} {
		if !(r[0] > 0) || math.IsInf(r[0], 0) || math.Abs(r[0]-r[1]) > 1e-9*r[1] {
			t.Errorf("%s: ratio %v, the counts give %v", name, r[0], r[1])
		}
	}
	// A many-item sale (-items) gets a floor over as many items.
	in, err := ingressSettings()
	if err != nil {
		t.Fatal(err)
	}
	if q, err := MeasurePipelineFloor(ctx, p.Common, in, s.Concurrency, 40, 1, 4); err != nil || q.Count != 40 || q.Failed != 0 {
		t.Errorf("pipeline floor over 4 items: %+v, %v", q, err)
	}
	var txt strings.Builder
	if err := WriteText(&txt, out); err != nil || !strings.Contains(txt.String(), "HTTP floor") || !strings.Contains(txt.String(), "pipeline floor") {
		t.Errorf("text report lacks the floors (err %v)", err)
	}
	// The throwaway topic is deleted; the broker may take a moment to say so.
	var left []string
	testenv.Eventually(t, 15*time.Second, 500*time.Millisecond, func() bool {
		left = left[:0]
		for name := range floorTopics(t, p.Brokers) {
			if !before[name] {
				left = append(left, name)
			}
		}
		return len(left) == 0
	}, "floor topics left on the broker: %v", &left) // a pointer: the last poll's, printed at the failure
}

func perSec(f *FloorFigure) float64 {
	if f == nil {
		return math.NaN()
	}
	return f.PerSec
}

// floorTopics lists the broker's flashsale.floor.* topics.
func floorTopics(t *testing.T, brokers []string) map[string]bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	meta, err := kafkaSec.Client(brokers).Metadata(ctx, &kafka.MetadataRequest{})
	if err != nil {
		t.Fatalf("metadata: %v", err)
	}
	names := map[string]bool{}
	for _, tp := range meta.Topics {
		if strings.HasPrefix(tp.Name, "flashsale.floor.") {
			names[tp.Name] = true
		}
	}
	return names
}
