package deploy

import (
	"bytes"
	"os"
	"reflect"
	"regexp"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"

	"github.com/flashsale-dev/flashsale/deploy/monitoringgen"
)

// grafanaDashboardLabel marks the ConfigMaps Grafana's dashboard sidecar
// loads (the Grafana Helm chart's default label).
const grafanaDashboardLabel = "grafana_dashboard"

// crdDuration is the pattern the PrometheusRule CRD validates a rule's for
// with (monitoringv1.Duration's kubebuilder marker, v0.95.2).
var crdDuration = regexp.MustCompile(`^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$`)

// monitoringBuilds: the builds that carry the monitoring objects. The base
// does not (it must apply where the prometheus-operator's CRDs are absent);
// the example overlay adds k8s/monitoring.
var monitoringBuilds = map[string]bool{"k8s/overlays/example": true}

// TestMonitoringGenerated: the PrometheusRule and the dashboard ConfigMap
// are what monitoringgen makes of today's alerts.yml and dashboard JSON,
// byte for byte, so an edit to either source that was not regenerated
// fails here rather than leaving the cluster's alerts behind compose's.
func TestMonitoringGenerated(t *testing.T) {
	files, err := monitoringgen.Files(".")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 2 {
		t.Fatalf("monitoringgen makes %d files, want the rule and the dashboard", len(files))
	}
	for path, want := range files {
		have, err := os.ReadFile(path)
		if err != nil {
			t.Errorf("%v: run `go generate ./deploy/monitoringgen`", err)
			continue
		}
		if !bytes.Equal(have, want) {
			t.Errorf("%s differs from what its source generates: run `go generate ./deploy/monitoringgen`", path)
		}
	}
}

// checkMonitoring: a build that carries the monitoring objects scrapes each
// deployable's pods on the port their metrics are served on, its rules are
// alerts.yml's and its dashboard is grafana's (checked on the decoded
// objects, after kustomize, not only on the generated files).
func checkMonitoring(t *testing.T, dir string, set *k8sSet) {
	dashboards := map[string]bool{}
	for name, cm := range set.ConfigMaps {
		if v, ok := cm.Labels[grafanaDashboardLabel]; ok {
			dashboards[name] = true
			if v != "1" {
				t.Errorf("ConfigMap %s: label %s=%q, want \"1\"", name, grafanaDashboardLabel, v)
			}
			want := string(must(os.ReadFile(monitoringgen.DashboardFile)))
			if len(cm.Data) != 1 || cm.Data["flashsale.json"] != want {
				t.Errorf("ConfigMap %s: data is not %s", name, monitoringgen.DashboardFile)
			}
		}
	}
	if !monitoringBuilds[dir] {
		if len(set.PodMonitors)+len(set.PrometheusRules)+len(dashboards) > 0 {
			t.Errorf("%s carries monitoring objects; they need the operator's CRDs, so only an overlay adds them", dir)
		}
		return
	}
	if len(set.PodMonitors) != 1 || len(set.PrometheusRules) != 1 || len(dashboards) != 1 {
		t.Fatalf("%d PodMonitors, %d PrometheusRules, %d dashboard ConfigMaps; want one each", len(set.PodMonitors), len(set.PrometheusRules), len(dashboards))
	}
	for name, pm := range set.PodMonitors {
		checkPodMonitor(t, name, pm, set)
	}
	var src monitoringv1.PrometheusRuleSpec
	js, err := yaml.YAMLToJSON(must(os.ReadFile(monitoringgen.AlertsFile)))
	if err != nil {
		t.Fatal(err)
	}
	if err := decodeStrict(js, &src); err != nil {
		t.Fatalf("%s does not decode as a PrometheusRule's spec: %v", monitoringgen.AlertsFile, err)
	}
	for name, pr := range set.PrometheusRules {
		if !reflect.DeepEqual(pr.Spec, src) {
			t.Errorf("PrometheusRule %s: its groups are not %s's", name, monitoringgen.AlertsFile)
		}
		n := 0
		for _, g := range pr.Spec.Groups {
			n += len(g.Rules)
			for _, r := range g.Rules {
				// What the CRD's OpenAPI schema checks and the Go types do not.
				if r.For != nil && !crdDuration.MatchString(string(*r.For)) {
					t.Errorf("PrometheusRule %s: %s: for %q is not a duration the CRD accepts", name, r.Alert, *r.For)
				}
				// alertmanager.yml routes by severity.
				if sev := r.Labels["severity"]; r.Alert != "" && sev != "page" && sev != "ticket" {
					t.Errorf("PrometheusRule %s: %s: severity %q, want page or ticket (alertmanager.yml routes by it)", name, r.Alert, sev)
				}
			}
		}
		if n < 10 {
			t.Errorf("PrometheusRule %s: %d rules", name, n)
		}
	}
}

// checkPodMonitor: the PodMonitor selects the pods of the ingress, consumer
// and reaper Deployments and no other, scrapes the container port their
// metrics listen on (checkPorts ties the "ops" port to
// FLASHSALE_METRICS_ADDR) at /metrics, and names the job from a label every
// one of them has.
func checkPodMonitor(t *testing.T, name string, pm *monitoringv1.PodMonitor, set *k8sSet) {
	sel, err := metav1.LabelSelectorAsSelector(&pm.Spec.Selector)
	if err != nil || sel.Empty() {
		t.Errorf("PodMonitor %s: selector %v: %v", name, pm.Spec.Selector, err)
		return
	}
	if len(pm.Spec.PodMetricsEndpoints) != 1 {
		t.Fatalf("PodMonitor %s: %d endpoints, want one", name, len(pm.Spec.PodMetricsEndpoints))
	}
	ep := pm.Spec.PodMetricsEndpoints[0]
	if ep.Port == nil || *ep.Port != "ops" || ep.Path != "/metrics" {
		port := "(none)"
		if ep.Port != nil {
			port = *ep.Port
		}
		t.Errorf("PodMonitor %s: scrapes port %s path %q, want ops /metrics", name, port, ep.Path)
	}
	selected := map[string]bool{}
	for dname, d := range set.Deployments {
		pod := d.Spec.Template
		if !sel.Matches(labels.Set(pod.Labels)) {
			continue
		}
		selected[pod.Labels["app.kubernetes.io/component"]] = true
		if pod.Labels[pm.Spec.JobLabel] == "" {
			t.Errorf("PodMonitor %s: jobLabel %q is not a label of Deployment %s's pods", name, pm.Spec.JobLabel, dname)
		}
		found := false
		for _, c := range pod.Spec.Containers {
			for _, p := range c.Ports {
				found = found || p.Name == "ops"
			}
		}
		if !found {
			t.Errorf("PodMonitor %s: Deployment %s has no container port named ops", name, dname)
		}
	}
	for _, j := range set.Jobs {
		if sel.Matches(labels.Set(j.Spec.Template.Labels)) {
			t.Errorf("PodMonitor %s selects Job %s's pods, which serve no metrics", name, j.Name)
		}
	}
	if want := map[string]bool{"ingress": true, "consumer": true, "reaper": true}; !reflect.DeepEqual(selected, want) {
		t.Errorf("PodMonitor %s selects the pods of %v, want %v", name, keys(selected), keys(want))
	}
}
