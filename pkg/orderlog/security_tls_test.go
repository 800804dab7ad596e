//go:build tls

package orderlog_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/config"
	"github.com/flashsale-dev/flashsale/pkg/orderlog"
)

// tlsKafka returns the settings of `deploy/local/stack.sh env --tls` (the
// SASL_SSL listener), failing when they are not set: a tls run without
// them would test nothing.
func tlsKafka(t *testing.T) config.Common {
	t.Helper()
	c := testenv.Common(t)
	if !c.Kafka.TLSEnabled() || c.Kafka.SASLMechanism == "" || c.Kafka.SASLPassword == "" {
		t.Fatal(`the tls tests need the stack's TLS settings: eval "$(deploy/local/stack.sh env --tls)"`)
	}
	return c
}

// TestTLSRoundTrip: over SASL_SSL, setup's topic creation, the ingress's
// writer and the consumer's reader work with one Security.
func TestTLSRoundTrip(t *testing.T) {
	c := tlsKafka(t)
	sec, err := orderlog.NewSecurity(c.Kafka)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := sec.Ping(ctx, c.Brokers()); err != nil {
		t.Fatal(err)
	}
	topic := "tls.orders." + testenv.Suffix()
	if _, err := sec.EnsureTopics(ctx, c.Brokers(), orderlog.Topics(topic, topic+".dlq", 1), orderlog.Durability{}); err != nil {
		t.Fatal(err)
	}
	w := sec.NewBatchedWriter(c.Brokers(), topic, 10*time.Second, orderlog.DefaultBatching())
	defer w.Close()
	if err := orderlog.Warm(ctx, w); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteMessages(ctx, kafka.Message{Key: []byte("1"), Value: []byte("over tls")}); err != nil {
		t.Fatal(err)
	}
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: c.Brokers(), Topic: topic, GroupID: "tls-" + testenv.Suffix(),
		Dialer: sec.Dialer(), StartOffset: kafka.FirstOffset})
	defer r.Close()
	m, err := r.FetchMessage(ctx)
	if err != nil || string(m.Value) != "over tls" {
		t.Fatalf("read %q, %v", m.Value, err)
	}
	if err := r.CommitMessages(ctx, m); err != nil {
		t.Fatal(err)
	}
	if _, err := sec.Lag(ctx, c.Brokers(), r.Config().GroupID, topic); err != nil {
		t.Fatal(err)
	}
}

// TestTLSWrongSCRAMPassword: a wrong password is one line naming
// FLASHSALE_KAFKA_SASL_PASSWORD, the broker, the mechanism and the user.
func TestTLSWrongSCRAMPassword(t *testing.T) {
	c := tlsKafka(t)
	k := c.Kafka
	k.SASLPassword += "-wrong"
	sec, err := orderlog.NewSecurity(k)
	if err != nil {
		t.Fatal(err)
	}
	msg := pingFails(t, sec, c.Brokers()[0])
	want := "FLASHSALE_KAFKA_SASL_PASSWORD: kafka " + c.Brokers()[0] + " refused the " + k.SASLMechanism + " login for user " + k.SASLUsername
	if msg != want {
		t.Fatalf("err = %q, want %q", msg, want)
	}
	if strings.Contains(msg, k.SASLPassword) {
		t.Fatalf("the password leaked: %q", msg)
	}
}

// TestTLSPlaintextClientOnTLSPort: TLS off against the SASL_SSL listener
// names FLASHSALE_KAFKA_TLS, in time.
func TestTLSPlaintextClientOnTLSPort(t *testing.T) {
	c := tlsKafka(t)
	k := c.Kafka
	k.TLS, k.TLSCAFile = false, ""
	sec, err := orderlog.NewSecurity(k)
	if err != nil {
		t.Fatal(err)
	}
	if msg := pingFails(t, sec, c.Brokers()[0]); !strings.HasPrefix(msg, "FLASHSALE_KAFKA_TLS: kafka "+c.Brokers()[0]) {
		t.Fatalf("err = %q, want it to name FLASHSALE_KAFKA_TLS and the broker", msg)
	}
}

// TestTLSUntrustedCAOnStack: the stack's broker against a CA that did not
// sign it names FLASHSALE_KAFKA_TLS_CA_FILE.
func TestTLSUntrustedCAOnStack(t *testing.T) {
	c := tlsKafka(t)
	k := c.Kafka
	k.TLSCAFile = testenv.NewTestCA(t).CAFile
	sec, err := orderlog.NewSecurity(k)
	if err != nil {
		t.Fatal(err)
	}
	if msg := pingFails(t, sec, c.Brokers()[0]); !strings.HasPrefix(msg, "FLASHSALE_KAFKA_TLS_CA_FILE: kafka "+c.Brokers()[0]+": x509:") {
		t.Fatalf("err = %q", msg)
	}
}
