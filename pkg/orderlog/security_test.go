package orderlog_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/config"
	"github.com/flashsale-dev/flashsale/pkg/orderlog"
)

// pingFails pings brokers over sec and returns the error, failing the test
// if there is none, if it is not the refusal (config.ErrRefused) but a
// hang cut short, or if it is not one line. The context, ten times the
// default store timeout, is a hang guard: a broker that refuses the
// settings answers at once, and a Ping that waited for the context instead
// fails with its error, not with the refusal.
func pingFails(t *testing.T, sec *orderlog.Security, brokers ...string) string {
	t.Helper()
	const storeTimeout = 2 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 10*storeTimeout)
	defer cancel()
	err := sec.Ping(ctx, brokers)
	if err == nil {
		t.Fatalf("Ping %v succeeded", brokers)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Ping hung until its %v hang guard: %v", 10*storeTimeout, err)
	}
	if !errors.Is(err, config.ErrRefused) {
		t.Errorf("%v is not config.ErrRefused: start-up would retry it", err)
	}
	if strings.Contains(err.Error(), "\n") {
		t.Fatalf("error is not one line: %q", err)
	}
	return err.Error()
}

// TestPingUntrustedCA: a broker whose certificate another CA signed stops
// start-up with one line naming FLASHSALE_KAFKA_TLS_CA_FILE and the broker.
func TestPingUntrustedCA(t *testing.T) {
	addr := testenv.NewTestCA(t).TLSListener(t)
	sec, err := orderlog.NewSecurity(config.Kafka{TLSCAFile: testenv.NewTestCA(t).CAFile})
	if err != nil {
		t.Fatal(err)
	}
	msg := pingFails(t, sec, addr)
	if want := "FLASHSALE_KAFKA_TLS_CA_FILE: kafka " + addr + ": x509: certificate signed by unknown authority"; !strings.HasPrefix(msg, want) {
		t.Fatalf("err = %q, want it to start %q", msg, want)
	}
}

// TestPingPlaintextWhereTLSExpected: TLS on against the stack's plaintext
// listener is one line naming FLASHSALE_KAFKA_TLS and the broker, in time.
func TestPingPlaintextWhereTLSExpected(t *testing.T) {
	brokers := testenv.Kafka(t)
	sec, err := orderlog.NewSecurity(config.Kafka{TLS: true})
	if err != nil {
		t.Fatal(err)
	}
	msg := pingFails(t, sec, brokers[0])
	if want := "FLASHSALE_KAFKA_TLS: kafka " + brokers[0]; !strings.HasPrefix(msg, want) {
		t.Fatalf("err = %q, want it to start %q", msg, want)
	}
}

// TestSecurityReachesEveryClient: the dialer, transport, admin client and
// writer built from one Security all carry its TLS and SASL.
func TestSecurityReachesEveryClient(t *testing.T) {
	sec, err := orderlog.NewSecurity(config.Kafka{TLS: true, SASLMechanism: "scram-sha-256", SASLUsername: "u", SASLPassword: "p"})
	if err != nil {
		t.Fatal(err)
	}
	if sec.TLS == nil || sec.SASL == nil || sec.SASL.Name() != "SCRAM-SHA-256" {
		t.Fatalf("security %+v", sec)
	}
	d := sec.Dialer()
	tr := sec.Transport()
	cl := sec.Client([]string{"127.0.0.1:1"}).Transport.(*kafka.Transport)
	w := sec.NewBatchedWriter([]string{"127.0.0.1:1"}, "t", time.Second, orderlog.DefaultBatching()).Transport.(*kafka.Transport)
	for name, got := range map[string][2]any{"dialer": {d.TLS, d.SASLMechanism}, "transport": {tr.TLS, tr.SASL},
		"client": {cl.TLS, cl.SASL}, "writer": {w.TLS, w.SASL}} {
		if got[0] != any(sec.TLS) || got[1] != sec.SASL {
			t.Errorf("%s: TLS/SASL not the Security's", name)
		}
	}
	if sec.Client(nil).Transport != sec.Client(nil).Transport {
		t.Errorf("two admin clients of one Security do not share its transport")
	}
	if (*orderlog.Security)(nil).Client(nil).Transport != nil {
		t.Errorf("a plaintext admin client is not on kafka-go's DefaultTransport")
	}
	if back := orderlog.SecurityOf(d); back.TLS != sec.TLS || back.SASL != sec.SASL {
		t.Errorf("SecurityOf(Dialer()) lost TLS or SASL")
	}
	if orderlog.SecurityOf(nil) != nil || orderlog.SecurityOf(&kafka.Dialer{}) != nil {
		t.Errorf("SecurityOf a plain dialer is not nil")
	}
	plain, err := orderlog.NewSecurity(config.Kafka{SASLMechanism: "PLAIN", SASLUsername: "u", SASLPassword: "p"})
	if err != nil || plain.TLS != nil || plain.SASL.Name() != "PLAIN" {
		t.Fatalf("PLAIN without TLS: %+v %v", plain, err)
	}
}
