package deploy

import (
	"encoding/json"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// triggerAuthentication mirrors KEDA v2.20's TriggerAuthentication
// (keda.sh/v1alpha1, TriggerAuthenticationSpec in
// apis/keda/v1alpha1/triggerauthentication_types.go) with the same JSON
// names, so the strict decoder refuses a misspelt field. The secret stores
// flashsale does not use are kept opaque.
type triggerAuthentication struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              struct {
		PodIdentity        json.RawMessage `json:"podIdentity,omitempty"`
		SecretTargetRef    []kedaAuthRef   `json:"secretTargetRef,omitempty"`
		Env                []kedaAuthEnv   `json:"env,omitempty"`
		ConfigMapTargetRef []kedaAuthRef   `json:"configMapTargetRef,omitempty"`
		HashiCorpVault     json.RawMessage `json:"hashiCorpVault,omitempty"`
		AzureKeyVault      json.RawMessage `json:"azureKeyVault,omitempty"`
		AwsSecretManager   json.RawMessage `json:"awsSecretManager,omitempty"`
		GCPSecretManager   json.RawMessage `json:"gcpSecretManager,omitempty"`
		BoundServiceToken  json.RawMessage `json:"boundServiceAccountToken,omitempty"`
	} `json:"spec"`
}

type kedaAuthRef struct {
	Parameter string `json:"parameter"`
	Name      string `json:"name"`
	Key       string `json:"key"`
}

type kedaAuthEnv struct {
	Parameter     string `json:"parameter"`
	Name          string `json:"name"`
	ContainerName string `json:"containerName,omitempty"`
}

// kafkaAuthParams are the parameters KEDA v2.20's Kafka scaler reads from
// a TriggerAuthentication (kafkaMetadata's authParams); KEDA ignores others.
var kafkaAuthParams = map[string]bool{
	"sasl": true, "username": true, "password": true, "tls": true, "ca": true, "cert": true,
	"key": true, "keyPassword": true, "unsafeSsl": true, "oauthTokenEndpointUri": true,
	"scopes": true, "oauthExtensions": true, "awsRegion": true, "awsEndpoint": true,
}

// kedaSASL is KEDA's name of each FLASHSALE_KAFKA_SASL_MECHANISM.
var kedaSASL = map[string]string{"": "", "PLAIN": "plaintext", "SCRAM-SHA-256": "scram_sha256", "SCRAM-SHA-512": "scram_sha512"}

// checkKafkaAuth: KEDA's scaler connects as the consumer does. Its SASL
// mechanism and TLS are the consumer's FLASHSALE_KAFKA_* settings, and a
// login comes from a TriggerAuthentication of the build whose parameters
// the scaler reads: the user from the consumer's own variable, the
// password from the Secret key the consumer reads it from.
func checkKafkaAuth(t *testing.T, set *k8sSet, name string, so *scaledObject, byBin map[string][]*workload) {
	where := "ScaledObject " + name
	if len(so.Spec.Triggers) != 1 || so.Spec.ScaleTargetRef == nil {
		return // checkScaledObject said so
	}
	tr := so.Spec.Triggers[0]
	var w *workload
	for _, c := range byBin["consumer"] {
		if c.name == so.Spec.ScaleTargetRef.Name {
			w = c
		}
	}
	if w == nil {
		return
	}
	mech := strings.ToUpper(w.env["FLASHSALE_KAFKA_SASL_MECHANISM"].Value)
	tlsOn := w.env["FLASHSALE_KAFKA_TLS"].Value == "true" || w.env["FLASHSALE_KAFKA_TLS_CA_FILE"].Value != ""
	if got, want := tr.Metadata["sasl"], kedaSASL[mech]; got != want && !(want == "" && got == "none") {
		t.Errorf("%s: sasl %q, but the consumer's FLASHSALE_KAFKA_SASL_MECHANISM %q is KEDA's %q", where, got, mech, want)
	}
	if got := tr.Metadata["tls"] == "enable"; got != tlsOn {
		t.Errorf("%s: tls %q, but the consumer's TLS is %v (FLASHSALE_KAFKA_TLS, FLASHSALE_KAFKA_TLS_CA_FILE)", where, tr.Metadata["tls"], tlsOn)
	}
	if mech == "" {
		if tr.AuthenticationRef != nil {
			t.Errorf("%s: authenticationRef %s, but the consumer logs in to no SASL", where, tr.AuthenticationRef.Name)
		}
		return
	}
	if tr.AuthenticationRef == nil || (tr.AuthenticationRef.Kind != "" && tr.AuthenticationRef.Kind != "TriggerAuthentication") {
		t.Errorf("%s: the consumer logs in with %s, the scaler has no TriggerAuthentication", where, mech)
		return
	}
	ta := set.TriggerAuths[tr.AuthenticationRef.Name]
	if ta == nil {
		t.Errorf("%s: authenticationRef names TriggerAuthentication %s, which the build does not make", where, tr.AuthenticationRef.Name)
		return
	}
	ta_ := "TriggerAuthentication " + ta.Name
	got := map[string]string{}
	for _, r := range ta.Spec.SecretTargetRef {
		got[r.Parameter] = "secret " + r.Name + " " + r.Key
	}
	for _, e := range ta.Spec.Env {
		got[e.Parameter] = "env " + e.ContainerName + " " + e.Name
	}
	for p := range got {
		if !kafkaAuthParams[p] {
			t.Errorf("%s: parameter %s is not one KEDA's Kafka scaler reads", ta_, p)
		}
	}
	user := "env " + w.container.Name + " FLASHSALE_KAFKA_SASL_USERNAME"
	if got["username"] != user {
		t.Errorf("%s: username from %q, want the consumer's FLASHSALE_KAFKA_SASL_USERNAME (%s)", ta_, got["username"], user)
	}
	pw := w.env["FLASHSALE_KAFKA_SASL_PASSWORD"].Secret
	if pw == nil || got["password"] != "secret "+pw.Name+" "+pw.Key {
		t.Errorf("%s: password from %q, want the Secret key the consumer reads FLASHSALE_KAFKA_SASL_PASSWORD from (%v)", ta_, got["password"], pw)
	}
}
