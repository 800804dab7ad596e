package main

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/flashsale-dev/flashsale/internal/testenv"
)

// TestOptimisticOrdererRace races 64 goroutines ordering one item of 50
// units for 300 buyers (every buyer twice): exactly 50 orders, one per
// buyer, stock 0 and conserved; and the compare-and-set conflicted (a run
// at this contention that never retried would not have tested the retry).
func TestOptimisticOrdererRace(t *testing.T) {
	name := "flashsale_bench_c" + testenv.Suffix()
	t.Cleanup(func() { dropDB(t, name) })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := testenv.Common(t)
	db, err := OpenBaselineDB(ctx, c.DSN(), name, 70)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	item := newItemID()
	if _, err := db.ExecContext(ctx, "INSERT INTO baseline_items (id, name, price_cents, total_stock, stock) VALUES (?, 'c', 1, 50, 50)", item); err != nil {
		t.Fatal(err)
	}
	o := NewOptimisticOrderer(db, 1000) // enough that no order gives up here
	const buyers = 300
	next := make(chan int64)
	go func() {
		defer close(next)
		for round := 0; round < 2; round++ {
			for b := int64(1); b <= buyers; b++ {
				next <- b
			}
		}
	}()
	var mu sync.Mutex
	answers := map[int]int{}
	var wg sync.WaitGroup
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for user := range next {
				v, err := o.Order(ctx, item, user, 1, "")
				mu.Lock()
				if err != nil {
					answers[-1]++
					t.Errorf("order: %v", err)
				} else {
					answers[v.Code]++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if answers[http.StatusAccepted] != 50 {
		t.Fatalf("answers %v, want 50 accepted", answers)
	}
	a, err := BaselineAudit(ctx, db, item)
	if err != nil {
		t.Fatal(err)
	}
	if !a.OK || a.DBStock != 0 || a.Unpaid != 50 {
		t.Fatalf("audit %+v", a)
	}
	r := o.Retries()
	if r.Accepted != 50 || r.GaveUp != 0 || r.Retries == 0 || r.Max < r.P99 || r.P99 < r.P50 {
		t.Fatalf("retries %+v: want 50 orders, some retried, none given up", r)
	}
	t.Logf("answers %v; retries per order mean %.2f p50 %d p99 %d max %d", answers, r.Mean, r.P50, r.P99, r.Max)
	if again := o.Retries(); again.Accepted != 0 {
		t.Fatalf("Retries did not start afresh: %+v", again)
	}
}

// TestSummarizeRetries: the mean and nearest-rank quantiles of retries per
// accepted order.
func TestSummarizeRetries(t *testing.T) {
	r := summarizeRetries(map[int]int64{0: 90, 1: 8, 5: 2}, 3)
	want := RetryStats{Accepted: 100, Retries: 18, Mean: 0.18, P50: 0, P99: 5, Max: 5, GaveUp: 3}
	if *r != want {
		t.Fatalf("summary %+v, want %+v", *r, want)
	}
	if r := summarizeRetries(nil, 0); r.Accepted != 0 || r.Mean != 0 {
		t.Fatalf("empty summary %+v", *r)
	}
}

func TestSplitUnits(t *testing.T) {
	for _, c := range []struct{ units, n int }{{10, 3}, {1000, 1000}, {7, 1}, {50000, 1000}, {1001, 1000}} {
		parts := splitUnits(c.units, c.n)
		sum, lo, hi := 0, parts[0], parts[0]
		for _, p := range parts {
			sum += p
			lo, hi = min(lo, p), max(hi, p)
		}
		if len(parts) != c.n || sum != c.units || hi-lo > 1 {
			t.Errorf("splitUnits(%d, %d) = %v (sum %d)", c.units, c.n, parts, sum)
		}
	}
}

func TestSumAudits(t *testing.T) {
	a := Audit{ItemID: 1, Total: 5, DBStock: 2, RedisStock: 2, Unpaid: 3, OK: true, Violations: []string{}}
	b := Audit{ItemID: 2, Total: 5, DBStock: 1, RedisStock: 0, Unpaid: 4, OK: false, Violations: []string{"I3 conservation"}}
	s := sumAudits(1, []Audit{a, b})
	if s.Total != 10 || s.DBStock != 3 || s.RedisStock != 2 || s.Unpaid != 7 || s.OK || fmt.Sprint(s.Violations) != "[item 2: I3 conservation]" {
		t.Fatalf("sum %+v", s)
	}
}
