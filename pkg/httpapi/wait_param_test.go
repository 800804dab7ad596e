package httpapi

import (
	"testing"
	"time"
)

// TestParseWaitIsTheContractsPattern: ?wait= is accepted exactly when it
// matches ingress/openapi.yaml's pattern ^[0-9]{1,6}(ms|s)$, and is cut to
// the cap; absent is 0.
func TestParseWaitIsTheContractsPattern(t *testing.T) {
	const max = 30 * time.Second
	ok := map[string]time.Duration{
		"0s": 0, "0ms": 0, "10s": 10 * time.Second, "500ms": 500 * time.Millisecond,
		"1s": time.Second, "999999ms": max, "999999s": max, "30s": max, "29999ms": 29999 * time.Millisecond,
		"000007ms": 7 * time.Millisecond,
	}
	for raw, want := range ok {
		if got, err := parseWait(raw, true, max); err != nil || got != want {
			t.Errorf("parseWait(%q) = %v, %v; want %v", raw, got, err, want)
		}
	}
	for _, raw := range []string{"", "s", "ms", "1000000s", "0000001ms", "1.5s", "+1s", "-1s", "1m", "1h", "1S", "1MS",
		"10 s", " 10s", "10s ", "1e3ms", "0x10s", "١s", "10sms", "10mss", "10", "ms10", "1_000ms"} {
		if got, err := parseWait(raw, true, max); err == nil {
			t.Errorf("parseWait(%q) = %v, want invalid_wait", raw, got)
		}
	}
	if got, err := parseWait("", false, max); err != nil || got != 0 {
		t.Errorf("absent: %v %v, want 0", got, err)
	}
}
