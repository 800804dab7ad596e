package deploy

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/flashsale-dev/flashsale/internal/testenv"
)

// webhookMessage is the part of Alertmanager's webhook payload (version 4)
// the test reads.
type webhookMessage struct {
	Version  string `json:"version"`
	Receiver string `json:"receiver"`
	Status   string `json:"status"`
	Alerts   []struct {
		Status      string            `json:"status"`
		Labels      map[string]string `json:"labels"`
		Annotations map[string]string `json:"annotations"`
	} `json:"alerts"`
}

// lookBin finds the first of names on PATH; the test fails without them
// (skipped only under -short, make test-unit): `make stack-up` installs both Debian packages.
func lookBin(t *testing.T, names ...string) string {
	t.Helper()
	testenv.NeedStack(t, strings.Join(names, " or "))
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	t.Fatalf("none of %v on PATH: run `make stack-up` (it installs Debian's prometheus and prometheus-alertmanager)", names)
	return ""
}

// startProc runs a server for the test's life, its output in a file printed
// when the test fails.
func startProc(t *testing.T, ctx context.Context, dir, name string, args ...string) {
	t.Helper()
	logf, err := os.Create(filepath.Join(dir, filepath.Base(name)+".log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		logf.Close()
		if t.Failed() {
			b, _ := os.ReadFile(logf.Name())
			t.Logf("%s output:\n%s", name, tail(string(b), 4000))
		}
	})
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// TestAlertReachesWebhook sends one real alert the whole way: the rules of
// prometheus/alerts.yml loaded by a real Prometheus, evaluated, sent to a
// real Alertmanager running alertmanager/alertmanager.yml's routes, and
// delivered to a webhook (an httptest server standing in for a pager).
// The alert is FlashsaleDeployableAbsent, made true by its own condition:
// this Prometheus scrapes no flashsale process, so absent() holds for every
// deployable. Only two things differ from the repository's files, so the
// test takes seconds, not minutes: the alert's `for` is 0s, the route's
// group_wait 1s and Prometheus' resend delay 2s; and the receivers get the
// webhook.
func TestAlertReachesWebhook(t *testing.T) {
	promBin := lookBin(t, "prometheus")
	amBin := lookBin(t, "prometheus-alertmanager", "alertmanager")
	dir := t.TempDir()
	start := time.Now()

	got := make(chan webhookMessage, 16)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m webhookMessage
		if err := json.NewDecoder(r.Body).Decode(&m); err != nil {
			t.Errorf("webhook: undecodable payload: %v", err)
		}
		select {
		case got <- m:
		default:
		}
	}))
	defer hook.Close()

	// Alertmanager: the repository's routes, every receiver a webhook.
	var am map[string]any
	if err := yaml.Unmarshal(must(os.ReadFile("alertmanager/alertmanager.yml")), &am); err != nil {
		t.Fatal(err)
	}
	route := am["route"].(map[string]any)
	route["group_wait"] = "1s"
	for _, r := range am["receivers"].([]any) {
		r.(map[string]any)["webhook_configs"] = []any{map[string]any{"url": hook.URL, "send_resolved": false}}
	}
	amConf := filepath.Join(dir, "alertmanager.yml")
	if err := os.WriteFile(amConf, must(yaml.Marshal(am)), 0o644); err != nil {
		t.Fatal(err)
	}

	// The rules: alerts.yml with FlashsaleDeployableAbsent's for at 0s.
	var rules map[string]any
	if err := yaml.Unmarshal(must(os.ReadFile("prometheus/alerts.yml")), &rules); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, g := range rules["groups"].([]any) {
		for _, r := range g.(map[string]any)["rules"].([]any) {
			if r := r.(map[string]any); r["alert"] == "FlashsaleDeployableAbsent" {
				r["for"] = "0s"
				found = true
			}
		}
	}
	if !found {
		t.Fatal("alerts.yml has no FlashsaleDeployableAbsent")
	}
	rulesFile := filepath.Join(dir, "alerts.yml")
	if err := os.WriteFile(rulesFile, must(yaml.Marshal(rules)), 0o644); err != nil {
		t.Fatal(err)
	}

	amAddr, promAddr := testenv.FreeAddr(t), testenv.FreeAddr(t)
	promConf := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(promConf, []byte(fmt.Sprintf(`global:
  evaluation_interval: 1s
rule_files: [%q]
alerting:
  alertmanagers:
    - static_configs:
        - targets: [%q]
`, rulesFile, amAddr)), 0o644); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	startProc(t, ctx, dir, amBin, "--config.file="+amConf, "--storage.path="+filepath.Join(dir, "am"),
		"--web.listen-address="+amAddr, "--cluster.listen-address=")
	startProc(t, ctx, dir, promBin, "--config.file="+promConf, "--storage.tsdb.path="+filepath.Join(dir, "prom"),
		"--web.listen-address="+promAddr,
		// The first evaluation fires before Prometheus has discovered the
		// Alertmanager (its discovery syncs every 5 s), and an alert sent to
		// none is dropped until the resend delay, 1m by default, has passed.
		"--rules.alert.resend-delay=2s")

	deadline := time.After(60 * time.Second)
	want := map[string]bool{"ingress": true, "consumer": true, "reaper": true}
	for len(want) > 0 {
		select {
		case m := <-got:
			if m.Version != "4" || m.Status != "firing" {
				t.Errorf("webhook payload version %q status %q, want 4 firing", m.Version, m.Status)
			}
			for _, a := range m.Alerts {
				if a.Labels["alertname"] != "FlashsaleDeployableAbsent" {
					t.Errorf("unexpected alert %v", a.Labels)
					continue
				}
				// severity page goes to the page receiver, by the repository's route.
				if m.Receiver != "page" || a.Labels["severity"] != "page" {
					t.Errorf("%v reached receiver %q; want page", a.Labels, m.Receiver)
				}
				if !strings.HasPrefix(a.Annotations["runbook_url"], repoBlob) {
					t.Errorf("%v: runbook_url %q", a.Labels, a.Annotations["runbook_url"])
				}
				delete(want, a.Labels["deployable"])
			}
		case <-deadline:
			t.Fatalf("after 60 s the webhook still waits for FlashsaleDeployableAbsent of %v", keys(want))
		}
	}
	t.Logf("rule -> Prometheus -> Alertmanager -> webhook: %.1f s from start", time.Since(start).Seconds())
}

// TestAlertmanagerConfigs: the routing file is valid Alertmanager config,
// and both Prometheus configs send their alerts where that Alertmanager
// listens: compose's alertmanager service, and run.sh's on 127.0.0.1:9193,
// a port none of the native stack's servers takes (9093 is its Kafka
// controller's: there make run started no Alertmanager and Prometheus sent
// its alerts to Kafka).
func TestAlertmanagerConfigs(t *testing.T) {
	bin := lookBin(t, "amtool")
	if out, err := exec.Command(bin, "check-config", "alertmanager/alertmanager.yml").CombinedOutput(); err != nil {
		t.Fatalf("amtool check-config: %v\n%s", err, out)
	}
	runSh := string(must(os.ReadFile("local/run.sh")))
	compose := string(must(os.ReadFile("../compose.yaml")))
	for file, want := range map[string]string{"prometheus/prometheus.yml": "alertmanager:9093", "local/prometheus.yml": "127.0.0.1:9193"} {
		var c struct {
			Alerting struct {
				Alertmanagers []struct {
					StaticConfigs []struct {
						Targets []string `yaml:"targets"`
					} `yaml:"static_configs"`
				} `yaml:"alertmanagers"`
			} `yaml:"alerting"`
		}
		if err := yaml.Unmarshal(must(os.ReadFile(file)), &c); err != nil {
			t.Fatal(err)
		}
		var targets []string
		for _, am := range c.Alerting.Alertmanagers {
			for _, sc := range am.StaticConfigs {
				targets = append(targets, sc.Targets...)
			}
		}
		if len(targets) != 1 || targets[0] != want {
			t.Errorf("%s sends alerts to %v, want [%s]", file, targets, want)
		}
	}
	if !strings.Contains(runSh, "--web.listen-address=127.0.0.1:9193") {
		t.Error("run.sh starts no Alertmanager on 127.0.0.1:9193, where local/prometheus.yml sends")
	}
	stackSh := string(must(os.ReadFile("local/stack.sh")))
	if m := regexp.MustCompile(`\b\w+_PORT=9193\b|\]=9193\b`).FindString(stackSh); m != "" {
		t.Errorf("stack.sh gives Alertmanager's 9193 to one of its servers (%s)", m)
	}
	if !strings.Contains(compose, "./deploy/alertmanager/alertmanager.yml:/etc/alertmanager/alertmanager.yml") {
		t.Error("compose.yaml's alertmanager does not run deploy/alertmanager/alertmanager.yml")
	}
}
