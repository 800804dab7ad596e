package orderwriter

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/flashsale-dev/flashsale/pkg/orderlog"
)

// Headers a dead-lettered message carries besides its original key, value and
// headers, so an operator can see why and replay it where it came from. They
// are pkg/orderlog's, which the admin API reads them with.
const (
	HeaderError     = orderlog.HeaderDLQError
	HeaderTopic     = orderlog.HeaderDLQTopic
	HeaderPartition = orderlog.HeaderDLQPartition
	HeaderOffset    = orderlog.HeaderDLQOffset
	HeaderFailedAt  = orderlog.HeaderDLQFailedAt
)

// dlqWriter publishes messages that can never be processed. The original
// offset is committed only after the DLQ publish was acknowledged by all
// in-sync replicas, so nothing is lost between the two topics.
type dlqWriter struct {
	w     *kafka.Writer
	topic string
}

func newDLQWriter(cfg Config) *dlqWriter {
	w := &kafka.Writer{
		Addr:                   kafka.TCP(cfg.Brokers...),
		Topic:                  cfg.DLQTopic,
		Balancer:               &kafka.Hash{},
		RequiredAcks:           kafka.RequireAll,
		BatchTimeout:           2 * time.Millisecond,
		MaxAttempts:            3,
		WriteTimeout:           cfg.StoreTimeout * 5,
		ReadTimeout:            cfg.StoreTimeout * 5,
		AllowAutoTopicCreation: false,
	}
	if cfg.Dialer != nil {
		w.Transport = &kafka.Transport{Dial: cfg.Dialer.DialFunc, TLS: cfg.Dialer.TLS, SASL: cfg.Dialer.SASLMechanism}
	}
	return &dlqWriter{w: w, topic: cfg.DLQTopic}
}

// deadLetter is one message bound for the DLQ and why.
type deadLetter struct {
	msg   kafka.Message
	cause error
}

func (d *dlqWriter) send(ctx context.Context, letters []deadLetter) error {
	if len(letters) == 0 {
		return nil
	}
	out := make([]kafka.Message, len(letters))
	now := time.Now().UTC().Format(time.RFC3339Nano)
	for i, l := range letters {
		h := append([]kafka.Header(nil), l.msg.Headers...)
		h = append(h,
			kafka.Header{Key: HeaderError, Value: []byte(l.cause.Error())},
			kafka.Header{Key: HeaderTopic, Value: []byte(l.msg.Topic)},
			kafka.Header{Key: HeaderPartition, Value: strconv.AppendInt(nil, int64(l.msg.Partition), 10)},
			kafka.Header{Key: HeaderOffset, Value: strconv.AppendInt(nil, l.msg.Offset, 10)},
			kafka.Header{Key: HeaderFailedAt, Value: []byte(now)},
		)
		out[i] = kafka.Message{Key: l.msg.Key, Value: l.msg.Value, Headers: h}
	}
	if err := d.w.WriteMessages(ctx, out...); err != nil {
		return fmt.Errorf("orderwriter: publish %d messages to %s: %w", len(out), d.topic, err)
	}
	return nil
}

func (d *dlqWriter) close() error { return d.w.Close() }
