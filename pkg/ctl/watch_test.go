package ctl

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
)

// Two reads of /live one second apart, as the contract
// (/api/v1/admin/items/{id}/live) shapes them: 120 202s and 30 sold_out in
// the second, the 202s' latencies 60 under 5 ms, 54 more under 10 ms, 6 more
// under 50 ms.
const liveA = `{"at":"2026-12-02T08:30:00.000Z",
 "item":{"id":42,"name":"socks","price_cents":999,"total_stock":1000,"stock":900,"per_user_limit":1,
  "starts_at":"2026-12-02T08:00:00Z","ends_at":"2026-12-02T09:00:00Z","buckets":2,"state":"open","redis_warmed":true,"redis_stock":880},
 "audit":{"item_id":42,"total":1000,"redis_stock":880,"db_stock":900,"pending":20,"pending_qty":20,"unpaid":80,"paid":0,"cancelled":0,
  "rejected":3,"buckets":2,"per_bucket":[{"bucket":0,"total":500,"db_stock":450,"redis_stock":440,"pending":10},
  {"bucket":1,"total":500,"db_stock":450,"redis_stock":440,"pending":10}],"ok":true,"violations":[]},
 "answers":{"accepted":100,"sold_out":0},
 "accepted_latency":{"count":100,"sum_seconds":0.4,"buckets":[{"le":0.001,"count":0},{"le":0.0025,"count":10},
  {"le":0.005,"count":90},{"le":0.01,"count":100},{"le":0.025,"count":100},{"le":0.05,"count":100},{"le":5,"count":100}]},
 "consumer_lag":20,"dlq_messages":0,"unavailable":[]}`

const liveB = `{"at":"2026-12-02T08:30:01.000Z",
 "item":{"id":42,"name":"socks","price_cents":999,"total_stock":1000,"stock":780,"per_user_limit":1,
  "starts_at":"2026-12-02T08:00:00Z","ends_at":"2026-12-02T09:00:00Z","buckets":2,"state":"open","redis_warmed":true,"redis_stock":760},
 "audit":null,
 "answers":{"accepted":220,"sold_out":30},
 "accepted_latency":{"count":220,"sum_seconds":1.0,"buckets":[{"le":0.001,"count":0},{"le":0.0025,"count":10},
  {"le":0.005,"count":150},{"le":0.01,"count":204},{"le":0.025,"count":204},{"le":0.05,"count":210},{"le":5,"count":220}]},
 "consumer_lag":null,"dlq_messages":2,"unavailable":["mysql","kafka"]}`

func read(t *testing.T, s string) *Live {
	t.Helper()
	var l Live
	if err := json.Unmarshal([]byte(s), &l); err != nil {
		t.Fatal(err)
	}
	return &l
}

func near(p *Quantile, want float64) bool {
	return p != nil && !p.Above && math.Abs(p.Seconds-want) < 1e-9
}

// TestComputeRatesAndQuantiles: rates are the counts' differences over the
// reads' "at" difference; p50/p99 are histogram_quantile over the
// interval's buckets (differenced), not the whole sale's.
func TestComputeRatesAndQuantiles(t *testing.T) {
	a, b := read(t, liveA), read(t, liveB)
	first := Compute(nil, a)
	if first.Rates != nil || first.P50 != nil {
		t.Fatalf("first frame: %+v, want no rates", first)
	}
	v := Compute(a, b)
	if v.Interval != 1 || v.Rates["accepted"] != 120 || v.Rates["sold_out"] != 30 {
		t.Fatalf("rates %v over %v s, want accepted 120 sold_out 30 over 1 s", v.Rates, v.Interval)
	}
	// The interval's 120: 60 in (2.5, 5] ms, 54 in (5, 10] ms, 6 in (25, 50] ms
	// (bucket (10, 25] empty), and 10 above 50 ms up to 5 s.
	// p50: rank 60 is the top of the first: 5 ms.
	if !near(v.P50, 0.005) {
		t.Errorf("p50 = %+v, want 0.005", v.P50)
	}
	// p99: rank 118.8 of 120, in (50 ms, 5 s] holding 10 (from 110):
	// 0.05 + 4.95 * 8.8/10.
	if !near(v.P99, 0.05+4.95*8.8/10) {
		t.Errorf("p99 = %+v, want %v", v.P99, 0.05+4.95*8.8/10)
	}
	// A reset (the tally cleared) counts from zero, never negative.
	reset := read(t, liveA)
	reset.At = b.At.Add(2e9)
	reset.Answers = map[string]int64{"accepted": 4}
	if r := Compute(b, reset); r.Rates["accepted"] != 2 || r.Rates["sold_out"] != 0 {
		t.Errorf("after a reset: %v, want accepted 2/s", r.Rates)
	}
	// No 202 in the interval: no quantile.
	if r := Compute(b, b); r.P50 != nil || r.Rates != nil {
		t.Errorf("same read twice: %+v", r)
	}
}

// TestRender: one frame names every number the view promises.
func TestRender(t *testing.T) {
	a, b := read(t, liveA), read(t, liveB)
	var out bytes.Buffer
	if err := Render(&out, Compute(nil, a)); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	for _, want := range []string{`item 42 "socks"  open`, "stock      redis 880  mysql 900  of 1000", "pending    20 reservations (20 units)",
		"bucket 0   redis 440  mysql 450  pending 10", "bucket 1", "audit      ok", "consumer lag 20  dlq 0", "p50 -  p99 -", "accepted           100        -"} {
		if !strings.Contains(s, want) {
			t.Errorf("first frame lacks %q:\n%s", want, s)
		}
	}
	out.Reset()
	if err := Render(&out, Compute(a, b)); err != nil {
		t.Fatal(err)
	}
	s = out.String()
	for _, want := range []string{"stock      redis 760  mysql 780", "audit      unavailable", "consumer lag ?  dlq 2", "p50 5.0 ms  p99 4.41 s",
		"accepted           220        120.0", "sold_out           30         30.0", "unavailable: mysql, kafka"} {
		if !strings.Contains(s, want) {
			t.Errorf("second frame lacks %q:\n%s", want, s)
		}
	}
}

// TestAboveTheHighestBound: a p99 past the last bucket (5 s) is shown as
// "> 5 s", and the frame still prints as JSON (-o json).
func TestAboveTheHighestBound(t *testing.T) {
	a, b := read(t, liveA), read(t, liveB)
	for i := range b.AcceptedLatency.Buckets {
		b.AcceptedLatency.Buckets[i].Count = a.AcceptedLatency.Buckets[i].Count // no 202 under 5 s in the interval
	}
	b.AcceptedLatency.Count = a.AcceptedLatency.Count + 10
	v := Compute(a, b)
	if _, err := json.Marshal(v); err != nil {
		t.Fatalf("a frame with every 202 above the highest bound does not print as JSON: %v", err)
	}
	var out bytes.Buffer
	if err := Render(&out, v); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "p50 > 5.00 s  p99 > 5.00 s") {
		t.Errorf("frame:\n%s\nwant p50 and p99 shown above 5 s", out.String())
	}
}
