package deploy

import (
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/flashsale-dev/flashsale/pkg/config"
)

type composeFile struct {
	Services map[string]struct {
		Image       string            `yaml:"image"`
		Build       any               `yaml:"build"`
		Entrypoint  []string          `yaml:"entrypoint"`
		Environment map[string]string `yaml:"environment"`
		Ports       []string          `yaml:"ports"`
		Expose      []string          `yaml:"expose"`
		Volumes     []string          `yaml:"volumes"`
		Healthcheck *struct {
			Test []string `yaml:"test"`
		} `yaml:"healthcheck"`
		DependsOn any `yaml:"depends_on"`
	} `yaml:"services"`
}

func loadCompose(t *testing.T) composeFile {
	t.Helper()
	b, err := os.ReadFile("../compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var c composeFile
	if err := yaml.Unmarshal(b, &c); err != nil {
		t.Fatalf("compose.yaml: %v", err)
	}
	return c
}

func TestComposeMatchesCode(t *testing.T) {
	c := loadCompose(t)
	settings := map[string]bool{}
	for _, n := range config.Names(&config.Common{}, &config.Ingress{}, &config.Consumer{}, &config.Reaper{}, &config.Setup{}) {
		settings[n] = true
	}
	for _, want := range []string{"kafka", "mysql", "redis", "setup", "ingress", "consumer", "reaper", "prometheus", "alertmanager", "grafana"} {
		if _, ok := c.Services[want]; !ok {
			t.Errorf("service %s missing", want)
		}
	}
	pinned := regexp.MustCompile(`^[a-z0-9./_-]+:v?[0-9][A-Za-z0-9._-]*$`)
	for name, s := range c.Services {
		// flashsale:local is this repo's own image, built by the setup service.
		if !strings.HasPrefix(s.Image, "flashsale:") && !pinned.MatchString(s.Image) {
			t.Errorf("service %s: image %q is not pinned to a version tag", name, s.Image)
		}
		for k := range s.Environment {
			if strings.HasPrefix(k, config.EnvPrefix) && !settings[k] {
				t.Errorf("service %s sets %s, which no deployable reads", name, k)
			}
		}
		for _, e := range s.Entrypoint {
			if bin, ok := strings.CutPrefix(e, "/usr/local/bin/"); ok {
				if _, err := os.Stat(filepath.Join("..", bin, "main.go")); err != nil {
					t.Errorf("service %s runs %s, which is not a command of this repo", name, bin)
				}
			}
		}
		if s.Healthcheck != nil {
			for _, e := range s.Healthcheck.Test {
				if bin, ok := strings.CutPrefix(e, "/usr/local/bin/"); ok {
					if _, err := os.Stat(filepath.Join("..", bin, "main.go")); err != nil {
						t.Errorf("service %s healthcheck runs %s, which is not a command of this repo", name, bin)
					}
				}
			}
		}
		for _, v := range s.Volumes {
			if src, _, ok := strings.Cut(v, ":"); ok && strings.HasPrefix(src, "./") {
				if _, err := os.Stat(filepath.Join("..", src)); err != nil {
					t.Errorf("service %s mounts %s, which does not exist", name, src)
				}
			}
		}
	}
	// The addresses the deployables listen on are the ports compose publishes
	// and, for the ops addresses, the ones the healthchecks probe.
	checkPort := func(svc, setting string, where []string, probed bool) {
		s := c.Services[svc]
		_, port, err := net.SplitHostPort(s.Environment[setting])
		if err != nil {
			t.Errorf("%s %s: %v", svc, setting, err)
			return
		}
		found := false
		for _, p := range where {
			if p == port || strings.HasSuffix(p, ":"+port) {
				found = true
			}
		}
		if !found {
			t.Errorf("%s listens on %s but compose exposes %v", svc, port, where)
		}
		if probed && (s.Healthcheck == nil || !strings.Contains(strings.Join(s.Healthcheck.Test, " "), ":"+port+"/readyz")) {
			t.Errorf("%s healthcheck does not probe :%s/readyz", svc, port)
		}
	}
	checkPort("ingress", "FLASHSALE_HTTP_ADDR", c.Services["ingress"].Ports, false)
	checkPort("ingress", "FLASHSALE_METRICS_ADDR", c.Services["ingress"].Expose, true)
	checkPort("consumer", "FLASHSALE_METRICS_ADDR", c.Services["consumer"].Expose, true)
	checkPort("reaper", "FLASHSALE_METRICS_ADDR", c.Services["reaper"].Expose, true)
}

func TestPrometheusScrapesWhatComposeRuns(t *testing.T) {
	c := loadCompose(t)
	b, err := os.ReadFile("prometheus/prometheus.yml")
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	for svc, setting := range map[string]string{"ingress": "FLASHSALE_METRICS_ADDR", "consumer": "FLASHSALE_METRICS_ADDR", "reaper": "FLASHSALE_METRICS_ADDR"} {
		_, port, _ := net.SplitHostPort(c.Services[svc].Environment[setting])
		if !strings.Contains(text, svc+":"+port) && !strings.Contains(text, "port: "+port) {
			t.Errorf("prometheus.yml does not scrape %s on port %s", svc, port)
		}
	}
}

// TestComposeRequiresJWTSecret: compose must refuse to start without a JWT
// secret of the operator's (the ${VAR:?message} form), never fall back to a
// default: a default in a public repository lets anyone mint admin tokens.
func TestComposeRequiresJWTSecret(t *testing.T) {
	c := loadCompose(t)
	required := regexp.MustCompile(`^\$\{FLASHSALE_JWT_SECRET:\?[^}$]+\}$`) // no $ in the message: compose would parse it
	v, ok := c.Services["ingress"].Environment["FLASHSALE_JWT_SECRET"]
	if !ok || !required.MatchString(v) {
		t.Errorf("ingress FLASHSALE_JWT_SECRET = %q, want ${FLASHSALE_JWT_SECRET:?<why it is needed>}", v)
	}
	for name, s := range c.Services {
		if v, ok := s.Environment["FLASHSALE_JWT_SECRET"]; ok && !required.MatchString(v) {
			t.Errorf("service %s: FLASHSALE_JWT_SECRET = %q has a default or a literal", name, v)
		}
	}
}
