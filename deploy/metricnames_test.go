package deploy

import (
	"encoding/json"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"gopkg.in/yaml.v3"

	"github.com/flashsale-dev/flashsale/pkg/admission"
	"github.com/flashsale-dev/flashsale/pkg/auditor"
	"github.com/flashsale-dev/flashsale/pkg/httpapi"
	"github.com/flashsale-dev/flashsale/pkg/ops"
	"github.com/flashsale-dev/flashsale/pkg/orderstatus"
	"github.com/flashsale-dev/flashsale/pkg/orderwriter"
	"github.com/flashsale-dev/flashsale/pkg/reap"
	"github.com/flashsale-dev/flashsale/pkg/rebalance"
	"github.com/flashsale-dev/flashsale/pkg/waitroom"
)

// descRecorder is a Registerer that only remembers the metric names of what
// is registered on it: a vector with no children yet exports nothing, so a
// scrape could not tell which names exist, but its descriptor can.
type descRecorder struct {
	names  map[string]bool
	labels map[string]map[string]bool // metric name -> its variable labels
}

var (
	fqName    = regexp.MustCompile(`fqName: "([^"]+)"`)
	varLabels = regexp.MustCompile(`variableLabels: \{([^}]*)\}`)
)

func (r *descRecorder) Register(c prometheus.Collector) error {
	ch := make(chan *prometheus.Desc, 64)
	go func() { c.Describe(ch); close(ch) }()
	for d := range ch {
		if m := fqName.FindStringSubmatch(d.String()); m != nil {
			r.names[m[1]] = true
			if r.labels == nil {
				r.labels = map[string]map[string]bool{}
			}
			if r.labels[m[1]] == nil {
				r.labels[m[1]] = map[string]bool{}
			}
			if v := varLabels.FindStringSubmatch(d.String()); v != nil && v[1] != "" {
				for _, l := range strings.Split(v[1], ",") {
					r.labels[m[1]][strings.TrimSuffix(strings.TrimPrefix(l, "c("), ")")] = true
				}
			}
		}
	}
	return nil
}
func (r *descRecorder) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		_ = r.Register(c)
	}
}
func (r *descRecorder) Unregister(prometheus.Collector) bool { return true }

// exported returns every metric name some deployable exports, with the
// series names histograms and summaries add.
func exported(t *testing.T) map[string]bool {
	out := map[string]bool{}
	for n := range exportedLabels(t) {
		out[n] = true
	}
	return out
}

// exportedLabels is exported with each name's variable labels.
func exportedLabels(t *testing.T) map[string]map[string]bool {
	r := &descRecorder{names: map[string]bool{}}
	httpapi.NewMetrics(r)
	orderstatus.RegisterWaitMetrics(r, func() (int, int) { return 0, 0 })
	orderstatus.RegisterReadMetrics(r)
	httpapi.RedisBatchSizes(r)
	admission.NewMetrics(r)
	orderwriter.NewMetrics(r)
	reap.NewMetrics(r)
	auditor.NewMetrics(r)
	rebalance.NewMetrics(r)
	waitroom.NewGateMetrics(r)
	waitroom.NewRoomMetrics(r)
	ops.NewDependencyGauge(r)
	// Go runtime and process collectors, as every main registers them.
	for _, mf := range must(ops.NewRegistry("ingress").Gather()) {
		r.names[mf.GetName()] = true
	}
	r.names["up"] = true // Prometheus' own
	out := map[string]map[string]bool{}
	for n := range r.names {
		out[n] = r.labels[n]
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			out[n+suffix] = r.labels[n]
		}
	}
	return out
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

var (
	metricRef = regexp.MustCompile(`\b(flashsale_[a-z0-9_]+|up)\b`)
	quoted    = regexp.MustCompile(`"[^"]*"`)
)

func namesIn(expr string) []string {
	// Label values ("5..", "ingress") are not metric names.
	return metricRef.FindAllString(quoted.ReplaceAllString(expr, `""`), -1)
}

// TestDashboardAndRulesUseExportedMetrics fails on a panel, an alert or a
// metric docs/operating.md's "Operating it" names that could never show data because no
// deployable exports its metric.
func TestDashboardAndRulesUseExportedMetrics(t *testing.T) {
	have := exported(t)
	var exprs []string

	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	b := must(os.ReadFile("grafana/dashboards/flashsale.json"))
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatal(err)
	}
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			exprs = append(exprs, tg.Expr)
		}
	}
	var rules struct {
		Groups []struct {
			Rules []struct {
				Expr string `yaml:"expr"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal(must(os.ReadFile("prometheus/alerts.yml")), &rules); err != nil {
		t.Fatal(err)
	}
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			exprs = append(exprs, r.Expr)
		}
	}
	if len(exprs) < 10 {
		t.Fatalf("found only %d expressions: the parsers are broken", len(exprs))
	}
	// What docs/operating.md's "Operating it" tells operators to watch must exist too.
	readme := string(must(os.ReadFile("../docs/operating.md")))
	start := strings.Index(readme, "## Operating it")
	if start < 0 {
		t.Fatal(`docs/operating.md has no "## Operating it" section`)
	}
	section := readme[start+len("## Operating it"):]
	if end := strings.Index(section, "\n## "); end >= 0 {
		section = section[:end]
	}
	if names := metricRef.FindAllString(section, -1); len(names) < 10 {
		t.Fatalf("found only %d metric names in docs/operating.md's Operating it: the parser is broken", len(names))
	}
	exprs = append(exprs, section)
	missing := map[string]bool{}
	for _, e := range exprs {
		for _, n := range namesIn(e) {
			if !have[n] {
				missing[n] = true
			}
		}
	}
	var list []string
	for n := range missing {
		list = append(list, n)
	}
	sort.Strings(list)
	if len(list) > 0 {
		t.Fatalf("used but exported by no deployable: %s", strings.Join(list, ", "))
	}
}
