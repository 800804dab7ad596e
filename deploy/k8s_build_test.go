package deploy

import (
	"errors"
	"fmt"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/resource"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// k8sSet is one kustomize build of deploy/k8s, every object decoded
// strictly into its typed API struct, by name.
type k8sSet struct {
	Deployments   map[string]*appsv1.Deployment
	Services      map[string]*corev1.Service
	ConfigMaps    map[string]*corev1.ConfigMap
	Namespaces    map[string]*corev1.Namespace
	Secrets       map[string]*corev1.Secret
	HPAs          map[string]*autoscalingv2.HorizontalPodAutoscaler
	PDBs          map[string]*policyv1.PodDisruptionBudget
	Jobs          map[string]*batchv1.Job
	ScaledObjects map[string]*scaledObject
	TriggerAuths  map[string]*triggerAuthentication
	// The prometheus-operator's own Go types (its pkg/apis/monitoring
	// module, as the operator decodes them).
	PodMonitors     map[string]*monitoringv1.PodMonitor
	PrometheusRules map[string]*monitoringv1.PrometheusRule
}

// buildK8s runs kustomize on dir as `kubectl apply -k dir` would, from the
// files on disk, and decodes what it renders.
func buildK8s(t *testing.T, dir string) *k8sSet {
	t.Helper()
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	set, err := decodeK8s(m.Resources())
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	return set
}

// decodeK8s sorts the rendered objects by kind into their typed structs. An
// object of a kind it does not know is an error, not something to skip: it
// would go unchecked.
func decodeK8s(resources []*resource.Resource) (*k8sSet, error) {
	set := &k8sSet{
		Deployments: map[string]*appsv1.Deployment{}, Services: map[string]*corev1.Service{},
		ConfigMaps: map[string]*corev1.ConfigMap{}, Namespaces: map[string]*corev1.Namespace{},
		Secrets: map[string]*corev1.Secret{}, HPAs: map[string]*autoscalingv2.HorizontalPodAutoscaler{},
		PDBs: map[string]*policyv1.PodDisruptionBudget{}, Jobs: map[string]*batchv1.Job{},
		ScaledObjects: map[string]*scaledObject{}, TriggerAuths: map[string]*triggerAuthentication{},
		PodMonitors: map[string]*monitoringv1.PodMonitor{}, PrometheusRules: map[string]*monitoringv1.PrometheusRule{},
	}
	var errs []error
	for _, r := range resources {
		b, err := r.MarshalJSON()
		if err != nil {
			errs = append(errs, fmt.Errorf("%s %s: %w", r.GetKind(), r.GetName(), err))
			continue
		}
		name := r.GetName()
		switch gvk := r.GetApiVersion() + " " + r.GetKind(); gvk {
		case "apps/v1 Deployment":
			err = addStrict(set.Deployments, name, b)
		case "v1 Service":
			err = addStrict(set.Services, name, b)
		case "v1 ConfigMap":
			err = addStrict(set.ConfigMaps, name, b)
		case "v1 Namespace":
			err = addStrict(set.Namespaces, name, b)
		case "v1 Secret":
			err = addStrict(set.Secrets, name, b)
		case "autoscaling/v2 HorizontalPodAutoscaler":
			err = addStrict(set.HPAs, name, b)
		case "policy/v1 PodDisruptionBudget":
			err = addStrict(set.PDBs, name, b)
		case "batch/v1 Job":
			err = addStrict(set.Jobs, name, b)
		case "keda.sh/v1alpha1 ScaledObject":
			err = addStrict(set.ScaledObjects, name, b)
		case "keda.sh/v1alpha1 TriggerAuthentication":
			err = addStrict(set.TriggerAuths, name, b)
		case "monitoring.coreos.com/v1 PodMonitor":
			err = addStrict(set.PodMonitors, name, b)
		case "monitoring.coreos.com/v1 PrometheusRule":
			err = addStrict(set.PrometheusRules, name, b)
		default:
			err = fmt.Errorf("no typed check for %s: add its Go type to decodeK8s", gvk)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s %s: %w", r.GetKind(), name, err))
		}
	}
	return set, errors.Join(errs...)
}

func addStrict[T any](into map[string]*T, name string, b []byte) error {
	if _, dup := into[name]; dup {
		return errors.New("rendered twice")
	}
	v := new(T)
	if err := decodeStrict(b, v); err != nil {
		return err
	}
	into[name] = v
	return nil
}

// decodeStrict decodes JSON as the API server does in strict field
// validation (sigs.k8s.io/json, what apimachinery uses): field names match
// case-sensitively, and an unknown or duplicate field is an error, where
// encoding/json would drop the first and fold the case of the second.
func decodeStrict(b []byte, v any) error {
	strict, err := kjson.UnmarshalStrict(b, v, kjson.DisallowDuplicateFields, kjson.DisallowUnknownFields)
	if err != nil {
		return err
	}
	return errors.Join(strict...)
}

// TestDecodeStrictRefuses: the strictness the manifest checks rely on.
func TestDecodeStrictRefuses(t *testing.T) {
	for name, doc := range map[string]string{
		"unknown field":    `{"spec":{"replicas":1,"replica":2}}`,
		"folded case":      `{"spec":{"Replicas":1}}`,
		"duplicate field":  `{"spec":{"replicas":1,"replicas":2}}`,
		"wrong type":       `{"spec":{"replicas":"1"}}`,
		"nested unknown":   `{"spec":{"template":{"spec":{"containers":[{"name":"a","prot":1}]}}}}`,
		"unknown in probe": `{"spec":{"template":{"spec":{"containers":[{"name":"a","readinessProbe":{"httpGet":{"path":"/readyz","prot":"ops"}}}]}}}}`,
	} {
		var d appsv1.Deployment
		if err := decodeStrict([]byte(doc), &d); err == nil {
			t.Errorf("%s: %s decoded without an error", name, doc)
		}
	}
	var d appsv1.Deployment
	if err := decodeStrict([]byte(`{"spec":{"replicas":3}}`), &d); err != nil || *d.Spec.Replicas != 3 {
		t.Errorf("a valid document: err %v, replicas %v", err, d.Spec.Replicas)
	}
}
