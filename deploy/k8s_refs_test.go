package deploy

import (
	"net"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/flashsale-dev/flashsale/pkg/config"
)

// selected names the Deployments whose pods sel matches.
func selected(set *k8sSet, sel labels.Selector) []string {
	var out []string
	for name, d := range set.Deployments {
		if !sel.Empty() && sel.Matches(labels.Set(d.Spec.Template.Labels)) {
			out = append(out, name)
		}
	}
	return out
}

// selectsOnly checks that sel picks the pods of Deployment want and no
// other's.
func selectsOnly(t *testing.T, where string, set *k8sSet, sel *metav1.LabelSelector, want string) {
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		t.Errorf("%s: selector: %v", where, err)
		return
	}
	if got := selected(set, s); len(got) != 1 || got[0] != want {
		t.Errorf("%s: selector %v matches the pods of %v, want those of %s alone", where, s, got, want)
	}
}

// checkSelectors: each Deployment's selector and spread constraints pick
// its own pods, and only them.
func checkSelectors(t *testing.T, set *k8sSet) {
	for name, d := range set.Deployments {
		selectsOnly(t, "Deployment "+name, set, d.Spec.Selector, name)
		for _, c := range d.Spec.Template.Spec.TopologySpreadConstraints {
			selectsOnly(t, "Deployment "+name+" topologySpreadConstraint", set, c.LabelSelector, name)
		}
	}
}

// checkServices: the ingress has a Service, each Service selects one
// Deployment's pods, and its target ports are that container's public
// ports: the ops listener stays off the Service.
func checkServices(t *testing.T, set *k8sSet, byBin map[string][]*workload) {
	byName := map[string]*workload{}
	for _, ws := range byBin {
		for _, w := range ws {
			byName[w.kind+"/"+w.name] = w
		}
	}
	ingressServed := false
	for name, s := range set.Services {
		where := "Service " + name
		targets := selected(set, labels.SelectorFromSet(s.Spec.Selector))
		if len(targets) != 1 {
			t.Errorf("%s: selector %v matches Deployments %v, want one", where, s.Spec.Selector, targets)
			continue
		}
		w := byName["Deployment/"+targets[0]]
		if w == nil {
			continue // reported with the workload
		}
		ingressServed = ingressServed || w.d.bin == "ingress"
		_, opsPort, _ := net.SplitHostPort(w.d.listens()["FLASHSALE_METRICS_ADDR"])
		for _, p := range s.Spec.Ports {
			tp := p.TargetPort
			if tp.Type == intstr.Int && tp.IntVal == 0 {
				tp = intstr.FromInt32(p.Port)
			}
			port, err := containerPort(w.container, tp)
			switch {
			case err != nil:
				t.Errorf("%s port %s: %v", where, p.Name, err)
			case strconv.Itoa(int(port)) == opsPort:
				t.Errorf("%s port %s: targets the ops listener (FLASHSALE_METRICS_ADDR), which must stay off the network", where, p.Name)
			}
		}
	}
	if !ingressServed {
		t.Error("no Service selects the ingress")
	}
}

// minReplicas is the fewest pods Deployment name runs: its autoscaler's
// minimum, or its replicas.
func minReplicas(set *k8sSet, name string) int32 {
	for _, h := range set.HPAs {
		if h.Spec.ScaleTargetRef.Name == name && h.Spec.MinReplicas != nil {
			return *h.Spec.MinReplicas
		}
	}
	for _, so := range set.ScaledObjects {
		if so.Spec.ScaleTargetRef != nil && so.Spec.ScaleTargetRef.Name == name && so.Spec.MinReplicaCount != nil {
			return *so.Spec.MinReplicaCount
		}
	}
	if r := set.Deployments[name].Spec.Replicas; r != nil {
		return *r
	}
	return 1
}

// checkAutoscalers: the ingress scales on CPU through an HPA, the consumer
// on its lag through KEDA; each autoscaler targets a Deployment that leaves
// its replica count to it.
func checkAutoscalers(t *testing.T, set *k8sSet, byBin map[string][]*workload) {
	owners := map[string][]string{}
	for name, h := range set.HPAs {
		ref := h.Spec.ScaleTargetRef
		if ref.APIVersion != "apps/v1" || ref.Kind != "Deployment" || set.Deployments[ref.Name] == nil {
			t.Errorf("HorizontalPodAutoscaler %s: scaleTargetRef %+v is no Deployment of the build", name, ref)
			continue
		}
		owners[ref.Name] = append(owners[ref.Name], "HorizontalPodAutoscaler "+name)
		if h.Spec.MinReplicas == nil || *h.Spec.MinReplicas < 2 || h.Spec.MaxReplicas < *h.Spec.MinReplicas {
			t.Errorf("HorizontalPodAutoscaler %s: replicas %v..%d, want a minimum of at least 2, below the maximum", name, h.Spec.MinReplicas, h.Spec.MaxReplicas)
		}
		cpu := false
		for _, m := range h.Spec.Metrics {
			cpu = cpu || m.Resource != nil && m.Resource.Name == "cpu" && m.Resource.Target.AverageUtilization != nil
		}
		if !cpu {
			t.Errorf("HorizontalPodAutoscaler %s: no CPU utilization metric", name)
		}
	}
	for name, so := range set.ScaledObjects {
		if ref := so.Spec.ScaleTargetRef; ref != nil && set.Deployments[ref.Name] != nil {
			owners[ref.Name] = append(owners[ref.Name], "ScaledObject "+name)
		}
		checkScaledObject(t, name, so, byBin)
		checkKafkaAuth(t, set, name, so, byBin)
	}
	for name, d := range set.Deployments {
		switch n := len(owners[name]); {
		case n > 1:
			t.Errorf("Deployment %s: scaled by %v at once", name, owners[name])
		case n == 1 && d.Spec.Replicas != nil:
			t.Errorf("Deployment %s: sets replicas, which every apply would reset under %s", name, owners[name][0])
		case n == 0 && d.Spec.Replicas == nil:
			t.Errorf("Deployment %s: neither replicas nor an autoscaler", name)
		}
	}
	for bin, want := range map[string]string{"ingress": "HorizontalPodAutoscaler ", "consumer": "ScaledObject "} {
		for _, w := range byBin[bin] {
			if o := owners[w.name]; len(o) != 1 || !strings.HasPrefix(o[0], want) {
				t.Errorf("%s: scaled by %v, want a %s", bin, o, strings.TrimSpace(want))
			}
		}
	}
}

// startOffset is how the consumer starts a group without committed offsets.
var startOffset = regexp.MustCompile(`StartOffset:\s+kafka\.(First|Last)Offset`)

// checkScaledObject: KEDA's Kafka trigger watches the consumer's own
// brokers, group and topic, with keys the scaler knows, and never scales
// past the partitions setup creates.
func checkScaledObject(t *testing.T, name string, so *scaledObject, byBin map[string][]*workload) {
	where := "ScaledObject " + name
	ref := so.Spec.ScaleTargetRef
	var w *workload
	for _, c := range byBin["consumer"] {
		if ref != nil && c.name == ref.Name {
			w = c
		}
	}
	if ref == nil || w == nil || ref.APIVersion != "apps/v1" || ref.Kind != "Deployment" {
		t.Errorf("%s: scaleTargetRef %+v is not the consumer's Deployment", where, ref)
		return
	}
	if ref.EnvSourceContainerName != w.container.Name {
		t.Errorf("%s: envSourceContainerName %q, want the consumer's container %q", where, ref.EnvSourceContainerName, w.container.Name)
	}
	partitions := 0
	for _, s := range byBin["setup"] {
		partitions = s.d.comp.(*config.Setup).TopicPartitions
	}
	if lo, hi := so.Spec.MinReplicaCount, so.Spec.MaxReplicaCount; lo == nil || hi == nil || *lo < 2 || *hi < *lo || int(*hi) > partitions {
		t.Errorf("%s: replicas %v..%v, want from at least 2 up to FLASHSALE_TOPIC_PARTITIONS %d: a member past the partitions idles", where, lo, hi, partitions)
	}
	if len(so.Spec.Triggers) != 1 || so.Spec.Triggers[0].Type != "kafka" {
		t.Errorf("%s: triggers %+v, want one of type kafka", where, so.Spec.Triggers)
		return
	}
	md := so.Spec.Triggers[0].Metadata
	for k := range md {
		if base, ok := strings.CutSuffix(k, "FromEnv"); ok && kafkaFromEnv[base] == "" || !ok && !kafkaTriggerKeys[k] {
			t.Errorf("%s: metadata key %s is not one KEDA's Kafka scaler reads (KEDA ignores it)", where, k)
		}
	}
	c := w.d.common
	for key, setting := range kafkaFromEnv {
		want := map[string]string{"FLASHSALE_KAFKA_BROKERS": c.KafkaBrokers, "FLASHSALE_CONSUMER_GROUP": c.ConsumerGroup, "FLASHSALE_ORDERS_TOPIC": c.OrdersTopic}[setting]
		got, ok := md[key]
		if v, fromEnv := md[key+"FromEnv"]; fromEnv {
			if ok {
				t.Errorf("%s: both %s and %sFromEnv", where, key, key)
			}
			if v != setting || w.env[v].Secret != nil {
				t.Errorf("%s: %sFromEnv names %q, want %s (from a ConfigMap)", where, key, v, setting)
			}
			got, ok = w.env[v].Value, w.env[v].Value != ""
		}
		if !ok || got != want {
			t.Errorf("%s: %s is %q, but the consumer's %s is %q", where, key, got, setting, want)
		}
	}
	if n, err := strconv.ParseInt(md["lagThreshold"], 10, 64); err != nil || n <= 0 {
		t.Errorf("%s: lagThreshold %q, want a positive integer (KEDA's default is 10)", where, md["lagThreshold"])
	}
	if md["allowIdleConsumers"] == "true" {
		t.Errorf("%s: allowIdleConsumers lets KEDA scale past the partitions", where)
	}
	// KEDA talks Kafka protocol 1.0.0 unless told otherwise; Kafka 4 serves
	// 2.1 and later only (KIP-896), and docs/operating.md asks for Kafka >= 4.0.1.
	if v := strings.Split(md["version"], "."); len(v) < 2 || atoi(v[0])*100+atoi(v[1]) < 201 {
		t.Errorf("%s: version %q, want 2.1.0 or later: Kafka 4 refuses older protocol versions", where, md["version"])
	}
	b, err := os.ReadFile("../pkg/orderwriter/consumer.go")
	if err != nil {
		t.Fatal(err)
	}
	m := startOffset.FindSubmatch(b)
	if m == nil {
		t.Fatalf("pkg/orderwriter/consumer.go: no StartOffset: kafka.FirstOffset or LastOffset; update startOffset")
	}
	if want := map[string]string{"First": "earliest", "Last": "latest"}[string(m[1])]; md["offsetResetPolicy"] != want {
		t.Errorf("%s: offsetResetPolicy %q, but a new group starts at the %s offset (pkg/orderwriter), so want %q", where, md["offsetResetPolicy"], m[1], want)
	}
}

func atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		return -1
	}
	return n
}

// checkPDBs: each Deployment has one PodDisruptionBudget, over its own pods,
// that still lets a node drain at the Deployment's minimum scale.
func checkPDBs(t *testing.T, set *k8sSet) {
	covered := map[string]int{}
	for name, p := range set.PDBs {
		where := "PodDisruptionBudget " + name
		s, err := metav1.LabelSelectorAsSelector(p.Spec.Selector)
		targets := selected(set, s)
		if err != nil || len(targets) != 1 {
			t.Errorf("%s: selector matches Deployments %v (%v), want one", where, targets, err)
			continue
		}
		covered[targets[0]]++
		n := int(minReplicas(set, targets[0]))
		switch lo, hi := p.Spec.MinAvailable, p.Spec.MaxUnavailable; {
		case (lo == nil) == (hi == nil):
			t.Errorf("%s: want exactly one of minAvailable and maxUnavailable", where)
		case lo != nil:
			if v, err := intstr.GetScaledValueFromIntOrPercent(lo, n, true); err != nil || v >= n {
				t.Errorf("%s: minAvailable %s of %d pods blocks every eviction", where, lo.String(), n)
			}
		default:
			if v, err := intstr.GetScaledValueFromIntOrPercent(hi, n, true); err != nil || v < 1 {
				t.Errorf("%s: maxUnavailable %s of %d pods blocks every eviction", where, hi.String(), n)
			}
		}
	}
	for name := range set.Deployments {
		if covered[name] != 1 {
			t.Errorf("Deployment %s: %d PodDisruptionBudgets, want one", name, covered[name])
		}
	}
}

// checkNamespace: the base leaves the namespace to the overlay; an overlay
// that makes one puts everything in it and enforces the restricted Pod
// Security Standard that checkPod holds the pods to.
func checkNamespace(t *testing.T, set *k8sSet) {
	metas := slices.Concat(
		objects(set.Deployments), objects(set.Services), objects(set.ConfigMaps),
		objects(set.HPAs), objects(set.PDBs), objects(set.Jobs), objects(set.ScaledObjects),
		objects(set.PodMonitors), objects(set.PrometheusRules))
	want := ""
	if len(set.Namespaces) > 1 {
		t.Errorf("Namespaces %v, want at most one", keys(set.Namespaces))
	}
	for name, ns := range set.Namespaces {
		want = name
		if ns.Labels["pod-security.kubernetes.io/enforce"] != "restricted" {
			t.Errorf("Namespace %s: does not enforce the restricted Pod Security Standard", name)
		}
	}
	for _, m := range metas {
		if m.GetNamespace() != want {
			t.Errorf("%s: namespace %q, want %q", m.GetName(), m.GetNamespace(), want)
		}
	}
}

// objects lists the objects of one kind in a rendered set, each by its
// metadata.
func objects[T metav1.Object](m map[string]T) []metav1.Object {
	out := make([]metav1.Object, 0, len(m))
	for _, o := range m {
		out = append(out, o)
	}
	return out
}

// TestReadmeShowsK8sDeploy: docs/operating.md's Kubernetes section deploys the
// example overlay and creates the Secret under the name and keys the pods
// read.
func TestReadmeShowsK8sDeploy(t *testing.T) {
	b, err := os.ReadFile("../docs/operating.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	if !strings.Contains(readme, "kubectl apply -k deploy/k8s/overlays/example") {
		t.Error("docs/operating.md does not show kubectl apply -k deploy/k8s/overlays/example")
	}
	set := buildK8s(t, "k8s/base")
	refs := map[corev1.SecretKeySelector]bool{}
	for _, w := range workloads(t, set, map[string]map[string]bool{}) {
		for _, s := range w.env {
			if s.Secret == nil || refs[*s.Secret] {
				continue
			}
			refs[*s.Secret] = true
			if !strings.Contains(readme, "kubectl create secret generic "+s.Secret.Name) || !strings.Contains(readme, "--from-literal="+s.Secret.Key+"=") {
				t.Errorf("docs/operating.md does not create Secret %s with key %s (kubectl create secret generic %s --from-literal=%s=...)", s.Secret.Name, s.Secret.Key, s.Secret.Name, s.Secret.Key)
			}
		}
	}
	if len(refs) == 0 {
		t.Error("no container reads a Secret: the JWT secret and the MySQL DSN must come from one")
	}
}
