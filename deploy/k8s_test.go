package deploy

import (
	"fmt"
	"net"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/flashsale-dev/flashsale/pkg/config"
)

// k8sBuilds are the kustomizations `kubectl apply -k` is pointed at: the
// base and the example overlay, each checked whole.
var k8sBuilds = []string{"k8s/base", "k8s/overlays/example"}

// workload is one pod template of the build and what its container runs.
type workload struct {
	kind, name string
	pod        *corev1.PodTemplateSpec
	container  corev1.Container
	d          *deployable
	env        map[string]envSource
}

// TestK8sManifestsMatchCode builds deploy/k8s and checks it like compose_test.go reads
// compose.yaml: Kubernetes does not run on our machines, so the manifests
// are kept honest by checking them against the code.
func TestK8sManifestsMatchCode(t *testing.T) {
	uid := imageUID(t)
	for _, dir := range k8sBuilds {
		t.Run(dir, func(t *testing.T) {
			set := buildK8s(t, dir)
			if len(set.Secrets) > 0 {
				t.Errorf("the build makes Secrets %v: a credential must never be in the repository; reference one the operator creates", keys(set.Secrets))
			}
			used := map[string]map[string]bool{}
			byBin := map[string][]*workload{}
			for _, w := range workloads(t, set, used) {
				byBin[w.d.bin] = append(byBin[w.d.bin], w)
				checkSettings(t, w)
				checkPorts(t, w)
				checkPod(t, w, uid)
			}
			for bin, kind := range map[string]string{"ingress": "Deployment", "consumer": "Deployment", "reaper": "Deployment", "setup": "Job"} {
				if ws := byBin[bin]; len(ws) != 1 || ws[0].kind != kind {
					t.Errorf("%s: want one %s running it, have %d workloads", bin, kind, len(ws))
				}
			}
			checkSharedSettings(t, byBin)
			checkConfigMapsUsed(t, set, used)
			checkSelectors(t, set)
			checkServices(t, set, byBin)
			checkAutoscalers(t, set, byBin)
			checkPDBs(t, set)
			checkNamespace(t, set)
			checkMonitoring(t, dir, set)
			if ws := byBin["reaper"]; len(ws) == 1 {
				if r := set.Deployments[ws[0].name].Spec.Replicas; r == nil || *r < 2 {
					t.Errorf("reaper: replicas %v, want at least 2 (the sweeps go on through a node's loss)", r)
				}
			}
		})
	}
}

// workloads lists every container of the build's Deployments and Jobs with
// its command and environment resolved.
func workloads(t *testing.T, set *k8sSet, used map[string]map[string]bool) []*workload {
	var ws []*workload
	add := func(kind, name string, pod *corev1.PodTemplateSpec) {
		if len(pod.Spec.Containers) != 1 || len(pod.Spec.InitContainers) != 0 {
			t.Errorf("%s %s: %d containers, %d init containers; want one flashsale container", kind, name, len(pod.Spec.Containers), len(pod.Spec.InitContainers))
		}
		for _, c := range pod.Spec.Containers {
			where := kind + " " + name + " container " + c.Name
			d, err := deployableOf(c)
			if err != nil {
				t.Errorf("%s: %v", where, err)
				continue
			}
			env, err := containerEnv(set, c, used)
			if err != nil {
				t.Errorf("%s: %v", where, err)
			}
			ws = append(ws, &workload{kind: kind, name: name, pod: pod, container: c, d: d, env: env})
		}
	}
	for name, d := range set.Deployments {
		add("Deployment", name, &d.Spec.Template)
	}
	for name, j := range set.Jobs {
		add("Job", name, &j.Spec.Template)
		if j.Spec.Selector != nil || j.Spec.ManualSelector != nil {
			t.Errorf("Job %s: a selector of its own; let the Job controller make it", name)
		}
		if p := j.Spec.Template.Spec.RestartPolicy; p != corev1.RestartPolicyNever && p != corev1.RestartPolicyOnFailure {
			t.Errorf("Job %s: restartPolicy %q, want Never or OnFailure", name, p)
		}
		if j.Spec.BackoffLimit == nil {
			t.Errorf("Job %s: no backoffLimit", name)
		}
	}
	return ws
}

// checkSettings: every FLASHSALE_* variable is a setting the container's
// command reads, credentials come from a Secret under their own name, and
// the whole environment passes the command's own validation.
func checkSettings(t *testing.T, w *workload) {
	where := w.kind + " " + w.name
	for name, s := range w.env {
		if !strings.HasPrefix(name, config.EnvPrefix) {
			continue
		}
		if !w.d.names[name] {
			t.Errorf("%s: %s (from %s) is not a setting %s reads", where, name, s.From, w.d.bin)
		}
		if secretSetting(name) != (s.Secret != nil) {
			t.Errorf("%s: %s comes from %s; credentials, and only they, come from a Secret", where, name, s.From)
		}
		if s.Secret != nil && (s.Secret.Key != name || (s.Secret.Optional != nil && *s.Secret.Optional)) {
			t.Errorf("%s: %s reads Secret %s key %s; want the key named as the setting, not optional (docs/operating.md, Kubernetes)", where, name, s.Secret.Name, s.Secret.Key)
		}
	}
	if err := w.d.parse(w.env); err != nil {
		t.Errorf("%s: %s would not start: %v", where, w.d.bin, err)
	}
}

// checkPorts: each address the command listens on binds the pod's network,
// is a declared container port, and the probes and scrape annotation point
// at the ports the code serves them on.
func checkPorts(t *testing.T, w *workload) {
	where := w.kind + " " + w.name
	declared := map[int32]bool{}
	for _, p := range w.container.Ports {
		declared[p.ContainerPort] = true
	}
	listen := map[int32]string{}
	for setting, addr := range w.d.listens() {
		host, port, err := net.SplitHostPort(addr)
		n, _ := strconv.Atoi(port)
		switch {
		case err != nil:
			t.Errorf("%s: %s=%q: %v", where, setting, addr, err)
		case host != "" && host != "0.0.0.0" && host != "::":
			t.Errorf("%s: %s=%s binds %s only; the kubelet probes the pod IP (want 0.0.0.0)", where, setting, addr, host)
		case !declared[int32(n)]:
			t.Errorf("%s: %s=%s, but port %d is not a containerPort", where, setting, addr, n)
		}
		listen[int32(n)] = setting
	}
	for p := range declared {
		if listen[p] == "" {
			t.Errorf("%s: containerPort %d is no address %s listens on", where, p, w.d.bin)
		}
	}
	if w.kind != "Deployment" {
		return
	}
	_, opsPort, _ := net.SplitHostPort(w.d.listens()["FLASHSALE_METRICS_ADDR"])
	probes := []struct {
		what  string
		probe *corev1.Probe
		path  string
		ops   bool // served on the ops listener only
	}{
		{"startupProbe", w.container.StartupProbe, "/healthz", false},
		{"livenessProbe", w.container.LivenessProbe, "/healthz", false},
		{"readinessProbe", w.container.ReadinessProbe, "/readyz", true},
	}
	for _, p := range probes {
		if p.probe == nil || p.probe.HTTPGet == nil {
			t.Errorf("%s: no HTTP %s", where, p.what)
			continue
		}
		port, err := containerPort(w.container, p.probe.HTTPGet.Port)
		switch {
		case err != nil:
			t.Errorf("%s: %s: %v", where, p.what, err)
		case p.probe.HTTPGet.Path != p.path:
			t.Errorf("%s: %s GETs %s, want %s", where, p.what, p.probe.HTTPGet.Path, p.path)
		case p.ops && strconv.Itoa(int(port)) != opsPort:
			t.Errorf("%s: %s on port %d, but %s serves it on FLASHSALE_METRICS_ADDR's %s", where, p.what, port, p.path, opsPort)
		}
	}
	// /readyz answers within FLASHSALE_STORE_TIMEOUT; a shorter probe
	// timeout would fail a healthy pod whose store is only slow.
	if r := w.container.ReadinessProbe; r != nil && time.Duration(max(r.TimeoutSeconds, 1))*time.Second <= w.d.common.StoreTimeout {
		t.Errorf("%s: readinessProbe timeoutSeconds %d, want above FLASHSALE_STORE_TIMEOUT %v", where, r.TimeoutSeconds, w.d.common.StoreTimeout)
	}
	if a := w.pod.Annotations; a["prometheus.io/scrape"] != "true" || a["prometheus.io/port"] != opsPort || a["prometheus.io/path"] != "/metrics" {
		t.Errorf("%s: prometheus.io annotations %v, want scrape of :%s/metrics", where, a, opsPort)
	}
}

// containerPort resolves a probe's or Service's port, by name or number,
// to a port the container declares.
func containerPort(c corev1.Container, port intstr.IntOrString) (int32, error) {
	for _, p := range c.Ports {
		if (port.Type == intstr.String && p.Name == port.StrVal) || (port.Type == intstr.Int && p.ContainerPort == port.IntVal) {
			return p.ContainerPort, nil
		}
	}
	return 0, fmt.Errorf("port %s is not a port of container %s", port.String(), c.Name)
}

// checkPod: the pod runs as the image's non-root user with nothing to
// escalate to, asks for what it needs, and is given longer to stop than the
// command takes.
func checkPod(t *testing.T, w *workload, uid int64) {
	where := w.kind + " " + w.name
	ps, cs := w.pod.Spec.SecurityContext, w.container.SecurityContext
	if ps == nil || cs == nil {
		t.Errorf("%s: pod and container securityContexts are required", where)
		return
	}
	if ps.RunAsNonRoot == nil || !*ps.RunAsNonRoot || ps.RunAsUser == nil || *ps.RunAsUser != uid {
		t.Errorf("%s: runAsNonRoot %v runAsUser %v, want true and %d (the Dockerfile's USER)", where, ps.RunAsNonRoot, ps.RunAsUser, uid)
	}
	seccomp := ps.SeccompProfile
	if cs.SeccompProfile != nil {
		seccomp = cs.SeccompProfile
	}
	if seccomp == nil || seccomp.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("%s: seccompProfile %v, want RuntimeDefault", where, seccomp)
	}
	if cs.AllowPrivilegeEscalation == nil || *cs.AllowPrivilegeEscalation || cs.Privileged != nil && *cs.Privileged ||
		cs.ReadOnlyRootFilesystem == nil || !*cs.ReadOnlyRootFilesystem ||
		cs.Capabilities == nil || !reflect.DeepEqual(cs.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(cs.Capabilities.Add) > 0 {
		t.Errorf("%s: container securityContext %+v, want no privilege escalation, a read-only root, all capabilities dropped", where, cs)
	}
	if a := w.pod.Spec.AutomountServiceAccountToken; a == nil || *a {
		t.Errorf("%s: automountServiceAccountToken not false; no flashsale command calls the Kubernetes API", where)
	}
	req, lim := w.container.Resources.Requests, w.container.Resources.Limits
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if q, ok := req[r]; !ok || q.Sign() <= 0 {
			t.Errorf("%s: no %s request", where, r)
		}
	}
	if q, ok := lim[corev1.ResourceMemory]; !ok || q.Cmp(req[corev1.ResourceMemory]) < 0 {
		t.Errorf("%s: memory limit %v below the request or missing", where, lim.Memory())
	}
	image := w.container.Image
	if i := strings.LastIndex(image, "/"); !strings.Contains(image[i+1:], ":") || strings.HasSuffix(image, ":latest") {
		t.Errorf("%s: image %q is not pinned to a tag", where, image)
	}
	if w.kind != "Deployment" {
		return
	}
	bound, err := w.d.exitBound()
	if err != nil {
		t.Error(err)
		return
	}
	if ps := w.container.Lifecycle; ps != nil && ps.PreStop != nil {
		if ps.PreStop.Sleep == nil {
			t.Errorf("%s: a preStop other than sleep (the distroless image has no shell)", where)
		} else {
			bound += time.Duration(ps.PreStop.Sleep.Seconds) * time.Second
		}
	}
	if g := w.pod.Spec.TerminationGracePeriodSeconds; g == nil || time.Duration(*g)*time.Second <= bound {
		t.Errorf("%s: terminationGracePeriodSeconds %v, want above %v (preStop, then FLASHSALE_SHUTDOWN_TIMEOUT %v and the exit %s/main.go allows past it)",
			where, g, bound, w.d.common.ShutdownTimeout, w.d.bin)
	}
}

// checkSharedSettings: every command sees the same shared settings, so
// setup creates the topic the ingress publishes to and the consumer reads.
func checkSharedSettings(t *testing.T, byBin map[string][]*workload) {
	var first *workload
	for _, ws := range byBin {
		for _, w := range ws {
			if first == nil {
				first = w
			} else if !reflect.DeepEqual(*first.d.common, *w.d.common) {
				t.Errorf("shared settings differ between %s %s and %s %s:\n%+v\n%+v", first.kind, first.name, w.kind, w.name, *first.d.common, *w.d.common)
			}
		}
	}
}

// checkConfigMapsUsed: every key of every ConfigMap reaches a container; a
// key nobody reads is a setting someone believes is in force.
func checkConfigMapsUsed(t *testing.T, set *k8sSet, used map[string]map[string]bool) {
	for name, cm := range set.ConfigMaps {
		if cm.Labels[grafanaDashboardLabel] != "" {
			continue // read by Grafana's sidecar (checkMonitoring), not by a pod
		}
		for k := range cm.Data {
			if !used[name][k] {
				t.Errorf("ConfigMap %s: key %s reaches no container", name, k)
			}
		}
		if len(cm.BinaryData) > 0 {
			t.Errorf("ConfigMap %s: binaryData", name)
		}
	}
}

// imageUID is the uid the Dockerfile's final stage runs as. Kubernetes
// cannot check runAsNonRoot against a user name, so the pods name the uid:
// distroless images' "nonroot" is 65532.
func imageUID(t *testing.T) int64 {
	b, err := os.ReadFile("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	var from, user string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) >= 2 && f[0] == "FROM":
			from, user = f[1], ""
		case len(f) >= 2 && f[0] == "USER":
			user = f[1]
		}
	}
	if strings.HasPrefix(from, "gcr.io/distroless/") && strings.HasSuffix(from, ":nonroot") && user == "nonroot:nonroot" {
		return 65532
	}
	t.Fatalf("the Dockerfile's final stage runs as %q on %s: teach imageUID its uid", user, from)
	return 0
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
