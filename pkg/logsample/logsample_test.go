package logsample

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/flashsale-dev/flashsale/internal/testenv"
)

// lines is a concurrency-safe sink of JSON log lines.
type lines struct{ testenv.LogBuffer }

func (l *lines) records(t *testing.T) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, s := range strings.Split(strings.TrimSpace(l.String()), "\n") {
		if s == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(s), &m); err != nil {
			t.Fatalf("line %q: %v", s, err)
		}
		out = append(out, m)
	}
	return out
}

func newLogger(t *testing.T, sink *lines, o Options, clock *testingclock.FakeClock) *slog.Logger {
	t.Helper()
	h := New(slog.NewJSONHandler(sink, nil), o).(*Handler)
	if clock != nil {
		h.s.now = clock.Now
	}
	return slog.New(h).With("service", "ingress")
}

// An outage: 64 goroutines each log the same warning 2,000 times within one
// window. Exactly Burst lines get out, and the window's summary accounts
// for every other one; info lines are never sampled.
func TestARepeatedWarningCostsBurstLinesAndOneSummary(t *testing.T) {
	const goroutines, each, burst = 64, 2000, 10
	sink := &lines{}
	clock := testingclock.NewFakeClock(time.Unix(1_800_000_000, 0))
	log := newLogger(t, sink, Options{Burst: burst, Window: time.Hour}, clock)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				log.Warn("request failed", "status", 503, "i", i, "g", g)
			}
		}()
	}
	wg.Wait()
	for range 50 {
		log.Info("item saved")
	}
	// The next window begins: its first line flushes the last window's count.
	clock.Step(time.Hour)
	log.Warn("request failed", "status", 503)

	var passed, info, suppressed, summaries int
	for _, r := range sink.records(t) {
		if r["service"] != "ingress" {
			t.Errorf("line without the logger's attributes: %v", r)
		}
		switch {
		case r["msg"] == "item saved":
			info++
		case r["suppressed"] != nil:
			summaries++
			suppressed += int(r["suppressed"].(float64))
		default:
			passed++
		}
	}
	total := goroutines*each + 1
	if passed != burst+1 || summaries != 1 || passed+suppressed != total || info != 50 {
		t.Fatalf("passed %d (want %d), summaries %d (want 1), passed+suppressed %d (want %d), info %d (want 50)",
			passed, burst+1, summaries, passed+suppressed, total, info)
	}
}

// Each message has its own budget: a storm of one warning does not hide
// the first line of another.
func TestMessagesHaveTheirOwnBudget(t *testing.T) {
	sink := &lines{}
	log := newLogger(t, sink, Options{Burst: 3, Window: time.Hour}, testingclock.NewFakeClock(time.Unix(1_800_000_000, 0)))
	for range 100 {
		log.Warn("request failed")
	}
	log.Error("redis unavailable")
	var got []string
	for _, r := range sink.records(t) {
		got = append(got, r["msg"].(string))
	}
	want := "request failed,request failed,request failed,redis unavailable"
	if strings.Join(got, ",") != want {
		t.Fatalf("lines %q, want %q", got, want)
	}
}

// The summary is written when the window ends even if nothing is logged
// after the storm: an outage that stops logging still says what it dropped.
func TestSummaryComesWithoutAFurtherLine(t *testing.T) {
	sink := &lines{}
	log := newLogger(t, sink, Options{Burst: 5, Window: 50 * time.Millisecond}, nil)
	for range 200 {
		log.Warn("kafka publish failed")
	}
	suppressed := -1.0
	testenv.Eventually(t, 10*time.Second, 10*time.Millisecond, func() bool {
		for _, r := range sink.records(t) {
			if n, ok := r["suppressed"].(float64); ok {
				suppressed = n
				return true
			}
		}
		return false
	}, "no summary line after the 50 ms window ended; lines: %v", lazyRecords{t, sink})
	if suppressed != 195 {
		t.Fatalf("summary says %v suppressed, want 195", suppressed)
	}
}

// lazyRecords prints the sink's lines when a failure is reported.
type lazyRecords struct {
	t    *testing.T
	sink *lines
}

func (l lazyRecords) String() string { return fmt.Sprint(l.sink.records(l.t)) }

// Burst 0 switches sampling off: the next handler itself.
func TestBurstZeroIsOff(t *testing.T) {
	next := slog.NewJSONHandler(&lines{}, nil)
	if h := New(next, Options{}); h != slog.Handler(next) {
		t.Fatalf("New with Burst 0 = %T, want the handler it was given", h)
	}
}
