package deploy

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// repoBlob is where a runbook_url points: the repository's files on its main
// branch, as GitHub renders them.
const repoBlob = "https://github.com/flashsale-dev/flashsale/blob/main/"

type alertRule struct {
	Alert       string            `yaml:"alert"`
	Record      string            `yaml:"record"`
	Expr        string            `yaml:"expr"`
	For         string            `yaml:"for"`
	Labels      map[string]string `yaml:"labels"`
	Annotations map[string]string `yaml:"annotations"`
}

type ruleFile struct {
	Groups []struct {
		Name  string      `yaml:"name"`
		Rules []alertRule `yaml:"rules"`
	} `yaml:"groups"`
}

func readAlerts(t *testing.T) []alertRule {
	t.Helper()
	var f ruleFile
	if err := yaml.Unmarshal(must(os.ReadFile("prometheus/alerts.yml")), &f); err != nil {
		t.Fatal(err)
	}
	var rs []alertRule
	for _, g := range f.Groups {
		rs = append(rs, g.Rules...)
	}
	if len(rs) < 10 {
		t.Fatalf("found only %d rules in alerts.yml: the parser is broken", len(rs))
	}
	return rs
}

// githubAnchors returns the anchors GitHub gives the headings of a Markdown
// file: lower case, punctuation but - and _ dropped, spaces made -, a
// repeated heading suffixed -1, -2.
func githubAnchors(md string) map[string]bool {
	heading := regexp.MustCompile(`(?m)^#{1,6}\s+(.+?)\s*#*\s*$`)
	drop := regexp.MustCompile(`[^\p{L}\p{N}_\- ]`)
	seen := map[string]int{}
	out := map[string]bool{}
	inFence := false
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(line, "```") {
			inFence = !inFence
		}
		m := heading.FindStringSubmatch(line)
		if inFence || m == nil {
			continue
		}
		a := strings.ReplaceAll(drop.ReplaceAllString(strings.ToLower(m[1]), ""), " ", "-")
		if n := seen[a]; n > 0 {
			out[a+"-"+strconv.Itoa(n)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out
}

// TestEveryAlertHasARunbookURLThatResolves: Alertmanager templates and
// Grafana link the runbook_url annotation (the prometheus-operator and
// kube-prometheus convention); a link to a section that does not exist is
// found by the on-call at the worst moment, so each one is followed here to
// a heading of a file in the repository.
func TestEveryAlertHasARunbookURLThatResolves(t *testing.T) {
	for _, r := range readAlerts(t) {
		if r.Alert == "" {
			continue
		}
		if _, old := r.Annotations["runbook"]; old {
			t.Errorf("%s: annotation runbook; the convention is runbook_url (a link), the prose goes in docs/runbook.md", r.Alert)
		}
		u := r.Annotations["runbook_url"]
		if !strings.HasPrefix(u, repoBlob) {
			t.Errorf("%s: runbook_url %q is not a file of this repository (%s...)", r.Alert, u, repoBlob)
			continue
		}
		path, anchor, ok := strings.Cut(strings.TrimPrefix(u, repoBlob), "#")
		if !ok || anchor == "" {
			t.Errorf("%s: runbook_url %q names no section", r.Alert, u)
			continue
		}
		b, err := os.ReadFile("../" + path)
		if err != nil {
			t.Errorf("%s: runbook_url %q: %v", r.Alert, u, err)
			continue
		}
		if !githubAnchors(string(b))[anchor] {
			t.Errorf("%s: runbook_url %q: %s has no heading with anchor #%s", r.Alert, u, path, anchor)
		}
	}
}

func TestGithubAnchors(t *testing.T) {
	got := githubAnchors("# Runbooks: what to do\n## FlashsaleStockDrift\n```\n# not a heading\n```\n## A, b & c\n## A, b & c\n")
	for _, want := range []string{"runbooks-what-to-do", "flashsalestockdrift", "a-b--c", "a-b--c-1"} {
		if !got[want] {
			t.Errorf("no anchor %q in %v", want, got)
		}
	}
	if got["not-a-heading"] {
		t.Errorf("a line in a code block made an anchor: %v", got)
	}
}
