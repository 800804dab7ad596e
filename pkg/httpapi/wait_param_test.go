package httpapi

import (
	"os"
	"regexp"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

// waitPatterns are the patterns ingress/openapi.yaml declares for every
// query parameter named wait (the order, its status, a ticket's state).
func waitPatterns(t *testing.T) []*regexp.Regexp {
	t.Helper()
	b, err := os.ReadFile("../../ingress/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Paths map[string]map[string]struct {
			Parameters []struct {
				Name, In string
				Schema   struct{ Pattern string }
			}
		}
	}
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	var out []*regexp.Regexp
	for _, ops := range doc.Paths {
		for _, op := range ops {
			for _, p := range op.Parameters {
				if p.Name == "wait" && p.In == "query" {
					out = append(out, regexp.MustCompile(p.Schema.Pattern))
				}
			}
		}
	}
	if len(out) == 0 {
		t.Fatal("ingress/openapi.yaml declares no wait parameter")
	}
	return out
}

// TestParseWaitIsTheContractsPattern: ?wait= is accepted exactly when it
// matches the pattern ingress/openapi.yaml declares for it (read from the
// file, so the two cannot drift apart), over a list of shapes and every
// string of up to 8 characters from an alphabet around the pattern's; an
// accepted wait is its value cut to the cap; absent is 0.
func TestParseWaitIsTheContractsPattern(t *testing.T) {
	const max = 30 * time.Second
	patterns := waitPatterns(t)
	accepts := func(raw string) bool {
		ok := patterns[0].MatchString(raw)
		for _, p := range patterns[1:] {
			if p.MatchString(raw) != ok {
				t.Fatalf("the contract's wait patterns disagree on %q", raw)
			}
		}
		return ok
	}
	check := func(raw string) {
		got, err := parseWait(raw, true, max)
		if want := accepts(raw); (err == nil) != want {
			t.Fatalf("parseWait(%q): %v %v, the contract accepts it: %v", raw, got, err, want)
		}
	}
	for _, raw := range []string{"", "s", "ms", "0s", "0ms", "10s", "500ms", "999999ms", "999999s", "1000000s", "0000001ms",
		"1.5s", "+1s", "-1s", "1m", "1h", "1S", "1MS", "10 s", " 10s", "10s ", "1e3ms", "0x10s", "١s", "10sms", "10mss",
		"10", "ms10", "1_000ms", "10s\n"} {
		check(raw)
	}
	// Every string of up to 8 characters over these 6: digits, the units'
	// letters and one stranger.
	alphabet := []byte("09msx.")
	var walk func(prefix []byte)
	walk = func(prefix []byte) {
		check(string(prefix))
		if len(prefix) == 8 {
			return
		}
		for _, c := range alphabet {
			walk(append(prefix, c))
		}
	}
	walk(nil)

	for raw, want := range map[string]time.Duration{"0s": 0, "10s": 10 * time.Second, "500ms": 500 * time.Millisecond,
		"000007ms": 7 * time.Millisecond, "29999ms": 29999 * time.Millisecond, "30s": max, "999999s": max} {
		if got, err := parseWait(raw, true, max); err != nil || got != want {
			t.Errorf("parseWait(%q) = %v, %v; want %v", raw, got, err, want)
		}
	}
	if got, err := parseWait("", false, max); err != nil || got != 0 {
		t.Errorf("absent: %v %v, want 0", got, err)
	}
}
