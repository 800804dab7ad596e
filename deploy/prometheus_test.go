package deploy

import (
	"github.com/flashsale-dev/flashsale/internal/testenv"
	"os/exec"
	"testing"
)

// promtool runs Prometheus' own checks; it comes with Debian's prometheus
// package, which `make stack-up` installs.
func promtool(t *testing.T, args ...string) {
	t.Helper()
	testenv.NeedStack(t, "promtool")
	bin, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatalf("promtool not found: run `make stack-up` (it installs Debian's prometheus package)")
	}
	out, err := exec.Command(bin, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool %v: %v\n%s", args, err, out)
	}
}

func TestPrometheusConfigs(t *testing.T) {
	// check config resolves rule_files relative to the config, so it also
	// checks the rules each config loads.
	promtool(t, "check", "config", "--syntax-only", "prometheus/prometheus.yml")
	promtool(t, "check", "config", "local/prometheus.yml")
}

func TestAlertRules(t *testing.T) {
	promtool(t, "check", "rules", "prometheus/alerts.yml")
	promtool(t, "test", "rules", "prometheus/alerts_test.yml")
}
