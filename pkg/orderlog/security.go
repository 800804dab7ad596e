package orderlog

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/sasl"
	"github.com/segmentio/kafka-go/sasl/plain"
	"github.com/segmentio/kafka-go/sasl/scram"

	"github.com/flashsale-dev/flashsale/pkg/config"
)

// Security is how every Kafka connection of a process is made: TLS and
// SASL, built once from the FLASHSALE_KAFKA_* settings and handed to every
// dialer, transport, client, reader and writer (Dialer, Transport,
// Client), so no client of the process can connect in plaintext beside
// the others. A nil *Security is plaintext without authentication.
type Security struct {
	// TLS, when not nil, is the clients' TLS configuration; kafka-go sets
	// each connection's ServerName from the broker's host.
	TLS *tls.Config
	// SASL, when not nil, authenticates every connection.
	SASL sasl.Mechanism
	// User is SASL's user, for error messages only.
	User string

	adminOnce sync.Once
	admin     *kafka.Transport
}

// NewSecurity builds the Security of the settings k (validated by
// config.Parse).
func NewSecurity(k config.Kafka) (*Security, error) {
	tc, err := k.TLSConfig()
	if err != nil {
		return nil, err
	}
	s := &Security{TLS: tc, User: k.SASLUsername}
	switch strings.ToUpper(k.SASLMechanism) {
	case "":
	case "PLAIN":
		s.SASL = plain.Mechanism{Username: k.SASLUsername, Password: k.SASLPassword}
	case "SCRAM-SHA-256", "SCRAM-SHA-512":
		algo := scram.SHA512
		if strings.EqualFold(k.SASLMechanism, "SCRAM-SHA-256") {
			algo = scram.SHA256
		}
		if s.SASL, err = scram.Mechanism(algo, k.SASLUsername, k.SASLPassword); err != nil {
			return nil, fmt.Errorf("FLASHSALE_KAFKA_SASL_USERNAME: %v", err) // SASLprep refused the user or password
		}
	default:
		return nil, fmt.Errorf("FLASHSALE_KAFKA_SASL_MECHANISM: %q (expected empty, PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512)", k.SASLMechanism)
	}
	return s, nil
}

// SecurityOf is the Security of a dialer built by Security.Dialer (or
// kafka-go's, nil included: plaintext).
func SecurityOf(d *kafka.Dialer) *Security {
	if d == nil || (d.TLS == nil && d.SASLMechanism == nil) {
		return nil
	}
	return &Security{TLS: d.TLS, SASL: d.SASLMechanism}
}

func (s *Security) tls() *tls.Config {
	if s == nil {
		return nil
	}
	return s.TLS
}

func (s *Security) sasl() sasl.Mechanism {
	if s == nil {
		return nil
	}
	return s.SASL
}

// Dialer is a kafka-go Dialer (for readers, and Ping) with s's TLS and
// SASL and kafka-go DefaultDialer's timeout.
func (s *Security) Dialer() *kafka.Dialer {
	return &kafka.Dialer{Timeout: 10 * time.Second, DualStack: true, TLS: s.tls(), SASLMechanism: s.sasl()}
}

// Transport is a kafka-go Transport (for writers and clients) with s's
// TLS and SASL, and the writers' metadata TTL.
func (s *Security) Transport() *kafka.Transport {
	return &kafka.Transport{MetadataTTL: metadataTTL, TLS: s.tls(), SASL: s.sasl()}
}

// Client is a kafka-go admin client of brokers over s. The clients of one
// Security share one transport (its connections and metadata cache: a
// topic it created is known to the next client at once); without TLS and
// SASL that is kafka-go's DefaultTransport, as before.
func (s *Security) Client(brokers []string) *kafka.Client {
	c := &kafka.Client{Addr: kafka.TCP(brokers...)}
	if s.tls() != nil || s.sasl() != nil {
		s.adminOnce.Do(func() { s.admin = s.Transport() })
		c.Transport = s.admin
	}
	return c
}

// explain names the setting behind a connection failure to broker, so a
// wrong password, an untrusted CA or a plaintext port where TLS is
// expected is one line an operator can act on, marked config.ErrRefused.
// Other errors come back as they are, with the broker.
func (s *Security) explain(broker string, err error) error {
	server := "kafka " + broker
	switch {
	case errors.Is(err, kafka.SASLAuthenticationFailed):
		return config.Refused("FLASHSALE_KAFKA_SASL_PASSWORD", "%s refused the %s login for user %s", server, s.sasl().Name(), s.User)
	case errors.Is(err, kafka.UnsupportedSASLMechanism):
		return config.Refused("FLASHSALE_KAFKA_SASL_MECHANISM", "%s does not offer %s: %v", server, s.sasl().Name(), err)
	case errors.Is(err, kafka.IllegalSASLState):
		return config.Refused("FLASHSALE_KAFKA_SASL_MECHANISM", "%s takes no SASL login on this listener: %v", server, err)
	}
	tlsOn := s.tls() != nil
	// kafka-go says "failed to dial" for the TCP connect and the TLS
	// handshake; an EOF after it is a SASL or request exchange.
	if setting, detail, ok := config.TLSCause("FLASHSALE_KAFKA_TLS", tlsOn, err); ok && (!tlsOn || strings.Contains(err.Error(), "failed to dial") || setting != "FLASHSALE_KAFKA_TLS") {
		if !tlsOn && s.sasl() == nil {
			detail = "closed the connection unanswered (a TLS or SASL listener? FLASHSALE_KAFKA_TLS is off, FLASHSALE_KAFKA_SASL_MECHANISM empty)"
		}
		return config.Refused(setting, "%s: %s", server, detail)
	}
	if s.sasl() == nil && (errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)) {
		return config.Refused("FLASHSALE_KAFKA_SASL_MECHANISM", "%s closed the connection unanswered (a SASL listener? FLASHSALE_KAFKA_SASL_MECHANISM is empty)", server)
	}
	return fmt.Errorf("%s: %w", server, err)
}

// Ping is the package Ping over s.
func (s *Security) Ping(ctx context.Context, brokers []string) error {
	d := s.Dialer()
	var errs []error
	for _, b := range brokers {
		err := s.pingOne(ctx, d, b)
		if err == nil {
			return nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	for _, err := range errs {
		if errors.Is(err, config.ErrRefused) {
			return err // the one line that names the setting
		}
	}
	if len(errs) == 1 {
		return errs[0]
	}
	msgs := make([]string, len(errs))
	for i, err := range errs {
		msgs[i] = err.Error()
	}
	return fmt.Errorf("orderlog: no broker answered: %s (%w)", strings.Join(msgs, "; "), errs[len(errs)-1])
}

// StartupCheck is Ping within timeout as a deployable's start-up runs it:
// only an error the settings caused (config.ErrRefused) is returned, for
// start-up to stop on; brokers that are merely unreachable are left to
// the readiness check and the clients' retries, as before.
func (s *Security) StartupCheck(ctx context.Context, brokers []string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := s.Ping(ctx, brokers); errors.Is(err, config.ErrRefused) {
		return err
	}
	return nil
}
