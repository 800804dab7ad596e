package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"
)

// TestServerClockOffset: a server whose clock runs 3 s ahead is found to be
// 3 s ahead, to within half of a step and a round trip, on a fake clock: each
// request takes 7 ms of it (the answer's Date stamped half way), each step
// 5 ms, and the probe starts at a whole second plus every offset of a step.
func TestServerClockOffset(t *testing.T) {
	const ahead, step, trip = 3 * time.Second, 5 * time.Millisecond, 7 * time.Millisecond
	for _, into := range []time.Duration{0, time.Millisecond, 250 * time.Millisecond, 999 * time.Millisecond} {
		clk := fakeClock{testingclock.NewFakeClock(time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC).Add(into))}
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			clk.Step(trip / 2)
			w.Header().Set("Date", clk.Now().Add(ahead).UTC().Format(http.TimeFormat))
			clk.Step(trip / 2)
		}))
		got, err := clockOffset(context.Background(), srv.Client(), srv.URL, step, clk)
		srv.Close()
		if err != nil {
			t.Fatal(err)
		}
		if d := got - ahead; d < -(step+trip)/2 || d > (step+trip)/2 {
			t.Errorf("%v into a second: offset %v, want %v ± %v", into, got, ahead, (step+trip)/2)
		}
	}
}

// fakeClock is a probeClock that moves only when told to (Step) or slept
// on: a sleep steps it by the whole duration at once.
type fakeClock struct{ *testingclock.FakeClock }

func (c fakeClock) Sleep(_ context.Context, d time.Duration) error {
	c.Step(d)
	return nil
}

// TestHumanArrivals: reproducible, inside the spread, on both sides of the
// start.
func TestHumanArrivals(t *testing.T) {
	start := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	a := humanArrivals(1000, start, 2*time.Second, 8*time.Second, 7)
	b := humanArrivals(1000, start, 2*time.Second, 8*time.Second, 7)
	before := 0
	for i := range a {
		if !a[i].Equal(b[i]) {
			t.Fatalf("arrival %d differs between two plans of one seed", i)
		}
		if a[i].Before(start.Add(-2*time.Second)) || a[i].After(start.Add(8*time.Second)) {
			t.Fatalf("arrival %v outside the spread", a[i].Sub(start))
		}
		if a[i].Before(start) {
			before++
		}
	}
	if before < 150 || before > 250 { // 20% expected
		t.Errorf("%d of 1000 arrived before the start, want about 200", before)
	}
}

// TestSummarizeBots: shares, advantage and the humans who had a chance.
func TestSummarizeBots(t *testing.T) {
	start := time.Now()
	won := func(at time.Duration) buyerRun {
		return buyerRun{Won: true, Attempts: 1, Arrived: start.Add(at - time.Millisecond), WonAt: start.Add(at), Outcomes: map[string]int{OutAccepted: 1}}
	}
	lost := func(arrived time.Duration) buyerRun {
		return buyerRun{Attempts: 1, Arrived: start.Add(arrived), Outcomes: map[string]int{OutSoldOut: 1}}
	}
	// 6 humans (one wins at 300 ms, two arrive before the last win and
	// lose, three after it), 2 bots (both win, at 10 and 20 ms).
	runs := []buyerRun{won(300 * time.Millisecond), lost(0), lost(100 * time.Millisecond), lost(time.Second), lost(2 * time.Second), lost(3 * time.Second),
		won(10 * time.Millisecond), won(20 * time.Millisecond)}
	rep := summarizeBots(runs, 6, start, 3)
	if rep.Humans.Won != 1 || rep.Bots.Won != 2 || rep.Humans.Accounts != 6 || rep.Bots.Accounts != 2 {
		t.Fatalf("groups %+v %+v", rep.Humans, rep.Bots)
	}
	if rep.BotsShareOfAccounts != 0.25 || rep.BotsShareOfUnits != 2.0/3 || rep.BotsAdvantage != (2.0/3)/0.25 {
		t.Errorf("shares %v %v %v", rep.BotsShareOfAccounts, rep.BotsShareOfUnits, rep.BotsAdvantage)
	}
	if rep.FirstWinMS != 10 || rep.LastWinMS != 300 || rep.HumansBeforeSellOut != 3 || rep.HumansBeforeSellOutWon != 1.0/3 {
		t.Errorf("timing %v %v %d %v", rep.FirstWinMS, rep.LastWinMS, rep.HumansBeforeSellOut, rep.HumansBeforeSellOutWon)
	}
	if c := botsChecks(rep, 3); len(c) != 0 {
		t.Errorf("checks %v", c)
	}
	if c := botsChecks(rep, 2); len(c) != 1 || !strings.HasPrefix(c[0], "I1") {
		t.Errorf("3 won of 2: checks %v", c)
	}
}

// TestBotsWinFirstComeFirstServed runs the adversary model against the
// whole pipeline: bots that fire at the start minus half a second and retry
// at the rate limit win far more than their share of the accounts from
// humans who arrive spread around the start, and the sale still sells
// exactly its units with the audit exact.
func TestBotsWinFirstComeFirstServed(t *testing.T) {
	p := startPipeline(t, time.Minute)
	s := testSettings(p.URL)
	s.Buyers, s.Units, s.PollTimeout = 200, 40, 30*time.Second
	bs := BotSettings{Bots: 50, StartIn: 2 * time.Second, Lead: 500 * time.Millisecond, Retry: 200 * time.Millisecond,
		HumansBefore: time.Second, HumansAfter: 3 * time.Second, HumanRetry: time.Second}
	if err := bs.Validate(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rep, err := RunBots(ctx, s, bs)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := WriteBots(&out, rep, false); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + out.String())
	if !rep.Pass || rep.Audit == nil || !rep.Audit.OK {
		t.Fatalf("run did not pass: checks %v audit %+v", rep.Checks, rep.Audit)
	}
	if got := rep.Humans.Won + rep.Bots.Won; got != s.Units {
		t.Errorf("%d units won, want all %d", got, s.Units)
	}
	if rep.Audit.Unpaid+rep.Audit.Paid != int64(s.Units) {
		t.Errorf("audit: %d orders for %d units", rep.Audit.Unpaid+rep.Audit.Paid, s.Units)
	}
	if rep.Bots.Outcomes["409 sale_not_active"] == 0 {
		t.Errorf("no bot fired before the start: %v", rep.Bots.Outcomes)
	}
	if rep.BotsShareOfUnits < 2*rep.BotsShareOfAccounts {
		t.Errorf("bots won %.0f%% of the units with %.0f%% of the accounts; the adversary model has no teeth", 100*rep.BotsShareOfUnits, 100*rep.BotsShareOfAccounts)
	}
	// The run ended its sale, so the live auditor stops watching it.
	var ended bool
	if err := p.DB.QueryRowContext(ctx, "SELECT ends_at <= NOW(3) FROM items WHERE id = ?", rep.ItemID).Scan(&ended); err != nil || !ended {
		t.Errorf("the sale of item %d did not end with its run (ended %v, %v)", rep.ItemID, ended, err)
	}
}

// TestBotSettings: the mode is off by default, and its spread must make
// sense.
func TestBotSettings(t *testing.T) {
	if err := (&BotSettings{}).Validate(); err != nil {
		t.Errorf("off: %v", err)
	}
	ok := BotSettings{Bots: 10, StartIn: 5 * time.Second, Lead: 500 * time.Millisecond, Retry: 200 * time.Millisecond, HumansBefore: 2 * time.Second, HumansAfter: 8 * time.Second, HumanRetry: time.Second}
	if err := ok.Validate(); err != nil {
		t.Errorf("defaults: %v", err)
	}
	for _, bad := range []func(*BotSettings){
		func(b *BotSettings) { b.Bots = -1 },
		func(b *BotSettings) { b.Lead = 6 * time.Second },
		func(b *BotSettings) { b.HumansBefore = 6 * time.Second },
		func(b *BotSettings) { b.Retry = 0 },
	} {
		b := ok
		bad(&b)
		if err := b.Validate(); err == nil {
			t.Errorf("%+v accepted", b)
		}
	}
}
