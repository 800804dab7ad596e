package deploy

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

type dashTarget struct {
	Expr       string          `json:"expr"`
	Datasource json.RawMessage `json:"datasource"`
}

type dashPanel struct {
	Title      string          `json:"title"`
	Type       string          `json:"type"`
	Datasource json.RawMessage `json:"datasource"`
	Targets    []dashTarget    `json:"targets"`
}

type dashboard struct {
	Panels     []dashPanel `json:"panels"`
	Templating struct {
		List []struct {
			Name       string          `json:"name"`
			Type       string          `json:"type"`
			Query      json.RawMessage `json:"query"`
			Datasource json.RawMessage `json:"datasource"`
			Multi      bool            `json:"multi"`
			IncludeAll bool            `json:"includeAll"`
			AllValue   string          `json:"allValue"`
		} `json:"list"`
	} `json:"templating"`
}

func readDashboard(t *testing.T) dashboard {
	t.Helper()
	var d dashboard
	if err := json.Unmarshal(must(os.ReadFile("grafana/dashboards/flashsale.json")), &d); err != nil {
		t.Fatal(err)
	}
	if len(d.Panels) < 10 {
		t.Fatalf("%d panels: the parser is broken", len(d.Panels))
	}
	return d
}

func dashExprs(d dashboard) []string {
	var out []string
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			out = append(out, tg.Expr)
		}
	}
	return out
}

// TestDashboardTemplating: one dashboard serves compose and any cluster:
// the data source is chosen (kube-prometheus names its own), and so are the
// namespace and the items, and every panel follows them.
func TestDashboardTemplating(t *testing.T) {
	d := readDashboard(t)
	vars := map[string]string{}
	for _, v := range d.Templating.List {
		vars[v.Name] = v.Type
		if v.Name == "item" && (!v.Multi || !v.IncludeAll || v.AllValue != ".*") {
			t.Errorf("variable item: multi %v includeAll %v allValue %q; want several items or all (.*)", v.Multi, v.IncludeAll, v.AllValue)
		}
		if v.Name == "namespace" && v.IncludeAll {
			// Two namespaces' sales are two pipelines: max by item across
			// them would mix them. compose has no namespace label: the
			// variable is empty and namespace=~"" matches every series.
			t.Errorf("variable namespace: includeAll; one namespace at a time")
		}
		if v.Type == "query" && !strings.Contains(string(v.Datasource), "${datasource}") {
			t.Errorf("variable %s queries %s, not the chosen ${datasource}", v.Name, v.Datasource)
		}
	}
	for name, typ := range map[string]string{"datasource": "datasource", "namespace": "query", "item": "query"} {
		if vars[name] != typ {
			t.Errorf("template variable %s: type %q, want %q", name, vars[name], typ)
		}
	}
	for _, p := range d.Panels {
		if p.Type == "row" {
			continue
		}
		if !strings.Contains(string(p.Datasource), `"${datasource}"`) {
			t.Errorf("panel %q: datasource %s, want ${datasource}", p.Title, p.Datasource)
		}
		for _, tg := range p.Targets {
			if len(tg.Datasource) > 0 && !strings.Contains(string(tg.Datasource), `"${datasource}"`) {
				t.Errorf("panel %q: a target's datasource %s, want ${datasource}", p.Title, tg.Datasource)
			}
		}
	}
}

var selector = regexp.MustCompile(`\b(flashsale_[a-z0-9_]+)(\{[^}]*\})?`)

// TestDashboardSelectorsFollowVariables: every series a panel reads is
// narrowed to the chosen namespace, and to the chosen items when it has an
// item label.
func TestDashboardSelectorsFollowVariables(t *testing.T) {
	labels := exportedLabels(t)
	for _, e := range dashExprs(readDashboard(t)) {
		for _, m := range selector.FindAllStringSubmatch(e, -1) {
			if !strings.Contains(m[2], `namespace=~"$namespace"`) {
				t.Errorf("%s in %q: no namespace=~\"$namespace\"", m[1], e)
			}
			if labels[m[1]]["item"] && !strings.Contains(m[2], `item=~"$item"`) {
				t.Errorf("%s in %q: no item=~\"$item\"", m[1], e)
			}
		}
	}
}

// TestDashboardHasAPanelForWhatToWatch: every metric docs/operating.md's "What to
// watch" list tells SREs to watch is drawn by some panel (names written in
// full; the list's "_restores_total" shorthand for the metric named before
// it is not checked).
func TestDashboardHasAPanelForWhatToWatch(t *testing.T) {
	readme := string(must(os.ReadFile("../docs/operating.md")))
	start := strings.Index(readme, "**What to watch**")
	if start < 0 {
		t.Fatal(`docs/operating.md has no "**What to watch**" list`)
	}
	list := readme[start+len("**What to watch**"):]
	if end := regexp.MustCompile(`\n\*\*|\n## `).FindStringIndex(list); end != nil {
		list = list[:end[0]]
	}
	names := map[string]bool{}
	for _, n := range regexp.MustCompile(`\bflashsale_[a-z0-9_]+`).FindAllString(list, -1) {
		names[n] = true
	}
	if len(names) < 20 {
		t.Fatalf("found %d metric names in What to watch: the parser is broken", len(names))
	}
	drawn := map[string]bool{}
	for _, e := range dashExprs(readDashboard(t)) {
		for _, m := range selector.FindAllStringSubmatch(e, -1) {
			n := m[1]
			drawn[n] = true
			for _, suffix := range []string{"_bucket", "_count", "_sum"} {
				drawn[strings.TrimSuffix(n, suffix)] = true
			}
		}
	}
	var missing []string
	for n := range names {
		if !drawn[n] {
			missing = append(missing, n)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("docs/operating.md's What to watch names %d series no panel draws: %s", len(missing), strings.Join(missing, ", "))
	}
}

var (
	aggregation = regexp.MustCompile(`\b(sum|max|min|avg|count|group|stddev|stdvar|topk|bottomk|quantile|count_values)\s*(by\s*\(([^)]*)\))?\s*$`)
	byClause    = regexp.MustCompile(`\bby\s*$`)
)

// innermostAggregation returns the aggregation operator whose argument
// holds the text at pos, and its by labels; functions (rate, changes)
// between are looked through. ok is false for a series no aggregation
// takes.
func innermostAggregation(expr string, pos int) (op string, by []string, ok bool) {
	depth := 0
	for i := pos - 1; i >= 0; i-- {
		switch expr[i] {
		case ')':
			depth++
		case '(':
			if depth > 0 {
				depth--
				continue
			}
			before := expr[:i]
			if byClause.MatchString(before) {
				continue
			}
			if m := aggregation.FindStringSubmatch(before); m != nil {
				for _, l := range strings.Split(m[3], ",") {
					if l = strings.TrimSpace(l); l != "" {
						by = append(by, l)
					}
				}
				return m[1], by, true
			}
		}
	}
	return "", nil, false
}

// TestDashboardDoesNotDoubleAcrossReapers: every reaper's auditor exports
// the same per-item gauges (every series with an item label), so a panel
// that sums them, or draws them bare, shows each item once per reaper: the
// base runs two. Each must be taken by max or min by item first.
func TestDashboardDoesNotDoubleAcrossReapers(t *testing.T) {
	labels := exportedLabels(t)
	n := 0
	for _, e := range dashExprs(readDashboard(t)) {
		for _, loc := range selector.FindAllStringSubmatchIndex(e, -1) {
			name := e[loc[2]:loc[3]]
			if !labels[name]["item"] {
				continue
			}
			n++
			op, by, ok := innermostAggregation(e, loc[0])
			hasItem := false
			for _, l := range by {
				hasItem = hasItem || l == "item"
			}
			if !ok || (op != "max" && op != "min") || !hasItem {
				t.Errorf("%s in %q: taken by %q by %v; want max or min by (item, ...) so two reapers count once", name, e, op, by)
			}
		}
	}
	if n < 5 {
		t.Fatalf("only %d per-item series in the dashboard: the parser is broken", n)
	}
}

func TestInnermostAggregation(t *testing.T) {
	for expr, want := range map[string]string{
		`sum by (status) (max by (item, status) (flashsale_orders_units))`: "max [item status]",
		`sum by (status) (flashsale_orders_units)`:                         "sum [status]",
		`max by (item) (changes(flashsale_stock_transfers_done[5m]))`:      "max [item]",
		`flashsale_stock_units`:                                            "",
	} {
		pos := strings.Index(expr, "flashsale_")
		op, by, _ := innermostAggregation(expr, pos)
		got := ""
		if op != "" {
			got = op + " [" + strings.Join(by, " ") + "]"
		}
		if got != want {
			t.Errorf("%s: got %q, want %q", expr, got, want)
		}
	}
}

// TestDashboardExpressionsParse: promtool parses every panel's query, the
// variables replaced as Grafana does (one namespace, every item).
func TestDashboardExpressionsParse(t *testing.T) {
	var rules strings.Builder
	rules.WriteString("groups:\n  - name: dashboard\n    rules:\n")
	for i, e := range dashExprs(readDashboard(t)) {
		e = strings.NewReplacer(`"$namespace"`, `"flashsale"`, `"$item"`, `".*"`).Replace(e)
		if strings.Contains(e, "$") {
			t.Errorf("%q: a variable the test does not replace", e)
		}
		b, _ := json.Marshal(e) // a JSON string is a YAML string
		fmt.Fprintf(&rules, "      - record: dashboard:expr_%d\n        expr: %s\n", i, b)
	}
	f := filepath.Join(t.TempDir(), "dashboard-rules.yml")
	if err := os.WriteFile(f, []byte(rules.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	promtool(t, "check", "rules", f)
}

// TestRulesDoNotDoubleAcrossReapers: the dashboard's check, on the alerts.
func TestRulesDoNotDoubleAcrossReapers(t *testing.T) {
	labels := exportedLabels(t)
	n := 0
	for _, r := range readAlerts(t) {
		for _, loc := range selector.FindAllStringSubmatchIndex(r.Expr, -1) {
			name := r.Expr[loc[2]:loc[3]]
			if !labels[name]["item"] {
				continue
			}
			n++
			op, by, ok := innermostAggregation(r.Expr, loc[0])
			if !ok || (op != "max" && op != "min") || !slices.Contains(by, "item") {
				t.Errorf("%s: %s taken by %q by %v; want max or min by (item, ...)", r.Alert, name, op, by)
			}
		}
	}
	if n < 5 {
		t.Fatalf("only %d per-item series in the rules: the parser is broken", n)
	}
}
