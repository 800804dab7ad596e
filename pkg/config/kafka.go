package config

import (
	"crypto/tls"
	"flag"
	"fmt"
	"strings"
)

// Kafka holds how every Kafka client of a deployable connects: TLS and SASL,
// as managed Kafka (MSK, Confluent Cloud) requires. The zero value is
// plaintext without authentication, the local stack's port 9092.
type Kafka struct {
	// TLS turns TLS on (the system's root CAs unless TLSCAFile is set).
	TLS bool
	// TLSCAFile is a PEM file of the CAs that sign the brokers'
	// certificates; setting it implies TLS.
	TLSCAFile string
	// TLSCertFile and TLSKeyFile are an optional client certificate (mTLS).
	TLSCertFile string
	TLSKeyFile  string
	// SASLMechanism is empty (no SASL), PLAIN, SCRAM-SHA-256 or
	// SCRAM-SHA-512; Validate upper-cases it.
	SASLMechanism string
	// SASLUsername and SASLPassword are the SASL login. Never logged.
	SASLUsername string
	SASLPassword string
}

// RegisterFlags implements Registerer.
func (k *Kafka) RegisterFlags(fs *flag.FlagSet) {
	fs.BoolVar(&k.TLS, "kafka-tls", false, "connect to the Kafka brokers over TLS: true or false")
	fs.StringVar(&k.TLSCAFile, "kafka-tls-ca-file", "", "PEM file of the CAs of the Kafka brokers' certificates (implies TLS), empty for the system's")
	fs.StringVar(&k.TLSCertFile, "kafka-tls-cert-file", "", "PEM client certificate for Kafka (mTLS), with -kafka-tls-key-file")
	fs.StringVar(&k.TLSKeyFile, "kafka-tls-key-file", "", "PEM key of the Kafka client certificate")
	fs.StringVar(&k.SASLMechanism, "kafka-sasl-mechanism", "", "Kafka SASL mechanism: empty for none, PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512")
	fs.StringVar(&k.SASLUsername, "kafka-sasl-username", "", "Kafka SASL user")
	fs.StringVar(&k.SASLPassword, "kafka-sasl-password", "", "Kafka SASL password (or FLASHSALE_KAFKA_SASL_PASSWORD_FILE)")
}

// Validate implements Registerer. It reads the TLS files, so a missing or
// broken one stops start-up naming its setting.
func (k *Kafka) Validate() error {
	k.SASLMechanism = strings.ToUpper(strings.TrimSpace(k.SASLMechanism))
	switch k.SASLMechanism {
	case "":
		if k.SASLUsername != "" || k.SASLPassword != "" {
			return fmt.Errorf("FLASHSALE_KAFKA_SASL_MECHANISM: empty, but a SASL username or password is set (expected PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512)")
		}
	case "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512":
		if k.SASLUsername == "" {
			return fmt.Errorf("FLASHSALE_KAFKA_SASL_USERNAME: empty (FLASHSALE_KAFKA_SASL_MECHANISM %s needs a user)", k.SASLMechanism)
		}
		if k.SASLPassword == "" {
			return fmt.Errorf("FLASHSALE_KAFKA_SASL_PASSWORD: empty (FLASHSALE_KAFKA_SASL_MECHANISM %s needs a password)", k.SASLMechanism)
		}
	default:
		return fmt.Errorf("FLASHSALE_KAFKA_SASL_MECHANISM: %q (expected empty, PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512)", k.SASLMechanism)
	}
	if !k.TLS && k.TLSCAFile == "" && (k.TLSCertFile != "" || k.TLSKeyFile != "") {
		k.TLS = true // a client certificate is only ever sent over TLS
	}
	_, err := k.TLSConfig()
	return err
}

// TLSEnabled reports whether the clients use TLS.
func (k *Kafka) TLSEnabled() bool { return k.TLS || k.TLSCAFile != "" }

// TLSConfig returns the clients' TLS configuration, nil when TLS is off.
// kafka-go fills ServerName per broker.
func (k *Kafka) TLSConfig() (*tls.Config, error) {
	if !k.TLSEnabled() && k.TLSCertFile == "" && k.TLSKeyFile == "" {
		return nil, nil
	}
	return tlsFiles{prefix: "FLASHSALE_KAFKA_TLS", ca: k.TLSCAFile, cert: k.TLSCertFile, key: k.TLSKeyFile}.load()
}
