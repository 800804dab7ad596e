package deploy

import (
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// scaledObject mirrors KEDA v2.20's ScaledObject (keda.sh/v1alpha1, the Go
// types in github.com/kedacore/keda/v2/apis/keda/v1alpha1), every field of
// its spec with the same JSON names, so the strict decoder refuses a
// misspelt field as the API server would with KEDA's CRD installed. KEDA's
// module is not imported: that package pulls in controller-runtime,
// client-go and KEDA's metrics webhook, whose versions would then drive this
// module's. Status is left out: a manifest has none.
type scaledObject struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              scaledObjectSpec `json:"spec"`
}

type scaledObjectSpec struct {
	ScaleTargetRef        *kedaScaleTarget `json:"scaleTargetRef"`
	PollingInterval       *int32           `json:"pollingInterval,omitempty"`
	InitialCooldownPeriod *int32           `json:"initialCooldownPeriod,omitempty"`
	CooldownPeriod        *int32           `json:"cooldownPeriod,omitempty"`
	IdleReplicaCount      *int32           `json:"idleReplicaCount,omitempty"`
	MinReplicaCount       *int32           `json:"minReplicaCount,omitempty"`
	MaxReplicaCount       *int32           `json:"maxReplicaCount,omitempty"`
	Advanced              *kedaAdvanced    `json:"advanced,omitempty"`
	Triggers              []kedaTrigger    `json:"triggers"`
	Fallback              *kedaFallback    `json:"fallback,omitempty"`
}

type kedaScaleTarget struct {
	Name                   string `json:"name"`
	APIVersion             string `json:"apiVersion,omitempty"`
	Kind                   string `json:"kind,omitempty"`
	EnvSourceContainerName string `json:"envSourceContainerName,omitempty"`
}

type kedaAdvanced struct {
	HorizontalPodAutoscalerConfig *struct {
		Behavior *autoscalingv2.HorizontalPodAutoscalerBehavior `json:"behavior,omitempty"`
		Name     string                                         `json:"name,omitempty"`
	} `json:"horizontalPodAutoscalerConfig,omitempty"`
	RestoreToOriginalReplicaCount bool `json:"restoreToOriginalReplicaCount,omitempty"`
	ScalingModifiers              struct {
		Formula          string                         `json:"formula,omitempty"`
		Target           string                         `json:"target,omitempty"`
		ActivationTarget string                         `json:"activationTarget,omitempty"`
		MetricType       autoscalingv2.MetricTargetType `json:"metricType,omitempty"`
	} `json:"scalingModifiers,omitempty"`
}

type kedaFallback struct {
	FailureThreshold int32  `json:"failureThreshold"`
	Replicas         int32  `json:"replicas"`
	Behavior         string `json:"behavior,omitempty"`
}

type kedaTrigger struct {
	Type              string            `json:"type"`
	Name              string            `json:"name,omitempty"`
	UseCachedMetrics  bool              `json:"useCachedMetrics,omitempty"`
	Metadata          map[string]string `json:"metadata"`
	AuthenticationRef *struct {
		Name string `json:"name"`
		Kind string `json:"kind,omitempty"`
	} `json:"authenticationRef,omitempty"`
	MetricType autoscalingv2.MetricTargetType `json:"metricType,omitempty"`
}

// kafkaTriggerKeys are the trigger metadata keys of KEDA v2.20's Kafka
// scaler (kafkaMetadata in pkg/scalers/kafka_scaler.go, the fields read from
// triggerMetadata). The CRD types metadata as a free map and KEDA ignores a
// key it does not know, so a misspelt "lagTreshold" would silently scale on
// the default of 10: this list is the only thing that catches it.
var kafkaTriggerKeys = map[string]bool{
	"bootstrapServers": true, "consumerGroup": true, "topic": true,
	"partitionLimitation": true, "lagThreshold": true, "activationLagThreshold": true,
	"offsetResetPolicy": true, "allowIdleConsumers": true, "excludePersistentLag": true,
	"scaleToZeroOnInvalidOffset": true, "limitToPartitionsWithLag": true,
	"ensureEvenDistributionOfPartitions": true, "version": true, "tls": true,
	"unsafeSsl": true, "sasl": true, "saslTokenProvider": true, "awsRegion": true,
}

// kafkaFromEnv maps the Kafka scaler keys that may instead name a variable
// of the target container (<key>FromEnv) to the setting they must name: the
// scaler must watch the brokers, group and topic the consumer uses.
var kafkaFromEnv = map[string]string{
	"bootstrapServers": "FLASHSALE_KAFKA_BROKERS",
	"consumerGroup":    "FLASHSALE_CONSUMER_GROUP",
	"topic":            "FLASHSALE_ORDERS_TOPIC",
}
