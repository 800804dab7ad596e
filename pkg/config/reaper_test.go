package config

import (
	"flag"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"
)

// parseReaper parses the reaper's settings as its main does (Parse, with
// the environment set by t.Setenv).
func parseReaper(t *testing.T, env map[string]string) (Common, Reaper, error) {
	t.Helper()
	for k, v := range env {
		t.Setenv(k, v)
	}
	var c Common
	var r Reaper
	err := Parse(flag.NewFlagSet("reaper", flag.ContinueOnError), nil, &c, &r)
	return c, r, err
}

// The orphan grace must leave an ingress time to finish a reservation
// (admit, publish, ack) before the sweep may void it, with a margin: a
// grace below that voids requests that are about to be answered 202.
func TestOrphanGraceMustExceedTheAdmissionWindow(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want string // "" = accepted
	}{
		{map[string]string{}, ""}, // defaults: 10m against 2 × (3s + 2 × 2s)
		{map[string]string{"FLASHSALE_ORPHAN_GRACE": "14s"}, ""},
		{map[string]string{"FLASHSALE_ORPHAN_GRACE": "13s"}, "FLASHSALE_ORPHAN_GRACE"},
		{map[string]string{"FLASHSALE_ORPHAN_GRACE": "30s", "FLASHSALE_STORE_TIMEOUT": "10s"}, "FLASHSALE_STORE_TIMEOUT"},
		{map[string]string{"FLASHSALE_ORPHAN_GRACE": "30s", "FLASHSALE_PUBLISH_TIMEOUT": "20s"}, "FLASHSALE_PUBLISH_TIMEOUT"},
		{map[string]string{"FLASHSALE_ORPHAN_GRACE": "10s", "FLASHSALE_PUBLISH_TIMEOUT": "3s", "FLASHSALE_STORE_TIMEOUT": "1s"}, ""}, // the fault suite's
		{map[string]string{"FLASHSALE_PUBLISH_TIMEOUT": "0s"}, "FLASHSALE_PUBLISH_TIMEOUT"},
	} {
		t.Run(strings.ReplaceAll(strings.TrimSpace(strings.Join(envList(tc.env), " ")), "FLASHSALE_", ""), func(t *testing.T) {
			_, r, err := parseReaper(t, tc.env)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && err == nil:
				t.Fatalf("accepted grace %v with publish timeout %v; want it refused naming %s", r.OrphanGrace, r.PublishTimeout, tc.want)
			case tc.want != "" && !strings.Contains(err.Error(), tc.want):
				t.Fatalf("err = %v, want it to name %s", err, tc.want)
			}
		})
	}
}

// The rule needs the store timeout (Common) and the grace (Reaper): it holds
// only where one process parses both, and a component alone still validates.
func TestOrphanGraceRuleNeedsBothComponents(t *testing.T) {
	r := Reaper{MetricsAddr: "127.0.0.1:1", Interval: time.Second, BatchSize: 1, OrphanGrace: 2 * time.Second,
		AuditInterval: time.Second, PublishTimeout: time.Second}
	if err := r.Validate(); err != nil {
		t.Fatalf("reaper alone: %v", err)
	}
	if err := r.ValidateWith(Common{StoreTimeout: time.Second}); err == nil {
		t.Fatal("2s grace with 1s publish and 1s store timeouts accepted")
	}
}

func envList(m map[string]string) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, k+"="+m[k])
	}
	return out
}
