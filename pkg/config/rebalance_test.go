package config

import (
	"flag"
	"strings"
	"testing"
	"time"
)

func TestRebalanceSettings(t *testing.T) {
	var r Rebalance
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	r.RegisterFlags(fs)
	if err := r.Validate(); err != nil {
		t.Fatalf("defaults refused: %v", err)
	}
	if r.Interval != 100*time.Millisecond || r.PassTimeout != 5*time.Second || r.Lease != time.Second {
		t.Fatalf("defaults = %+v", r)
	}
	for _, tc := range []struct {
		r    Rebalance
		want string
	}{
		{Rebalance{}, ""}, // off: nothing else is checked
		{Rebalance{Interval: -time.Millisecond}, "FLASHSALE_REBALANCE_INTERVAL"},
		{Rebalance{Interval: 11 * time.Second, PassTimeout: time.Second}, "FLASHSALE_REBALANCE_INTERVAL"},
		{Rebalance{Interval: time.Second, PassTimeout: time.Millisecond}, "FLASHSALE_REBALANCE_PASS_TIMEOUT"},
		{Rebalance{Interval: time.Second, PassTimeout: time.Second, Lease: -1}, "FLASHSALE_REBALANCE_LEASE"},
		{Rebalance{Interval: time.Second, PassTimeout: time.Second, Lease: time.Second}, "FLASHSALE_REBALANCE_LEASE"},
		{Rebalance{Interval: time.Second, PassTimeout: time.Second}, ""},
		{Rebalance{Interval: time.Second, PassTimeout: time.Second, Lease: 2 * time.Second}, ""},
	} {
		err := tc.r.Validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%+v refused: %v", tc.r, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%+v: err = %v; want it to name %s", tc.r, err, tc.want)
		}
	}
	// The reaper registers and validates them.
	var rc Reaper
	fs = flag.NewFlagSet("reaper", flag.ContinueOnError)
	rc.RegisterFlags(fs)
	if err := fs.Parse([]string{"-rebalance-interval=0"}); err != nil {
		t.Fatal(err)
	}
	if rc.Rebalance.Interval != 0 || rc.Rebalance.Lease != time.Second {
		t.Fatalf("reaper's rebalance settings = %+v", rc.Rebalance)
	}
	rc.Rebalance.Interval = -1
	if err := rc.Validate(); err == nil || !strings.Contains(err.Error(), "FLASHSALE_REBALANCE_INTERVAL") {
		t.Fatalf("reaper with a negative rebalance interval: err = %v", err)
	}
}
