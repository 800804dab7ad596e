package orderwriter

import (
	"errors"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/flashsale-dev/flashsale/pkg/orderlog"
)

// Config is one consumer's settings. Zero values take the defaults noted per
// field, so tests set only what they isolate (topics, group).
type Config struct {
	// Brokers are the Kafka bootstrap brokers.
	Brokers []string
	// Topic is the orders topic; default orderlog.OrdersTopic.
	Topic string
	// DLQTopic receives poison messages; default orderlog.DLQTopic.
	DLQTopic string
	// GroupID is the consumer group; default orderlog.GroupID.
	GroupID string
	// BatchSize is the most messages of one round; default 500.
	BatchSize int
	// BatchWait is how long a round waits to fill once it has a message;
	// default 20ms.
	BatchWait time.Duration
	// ItemParallelism bounds the item writes (one transaction and its Redis
	// step each) run at once, across all batches in flight; default 8. Items
	// are independent rows, so they need not wait for each other. Keep the
	// MySQL pool at least this large.
	ItemParallelism int
	// BatchesInFlight bounds the fetched batches not yet covered by a
	// committed offset; default 2: one written while the next is fetched
	// and written, its offsets committed in the background. It bounds what
	// a crash redelivers and how far fetching runs ahead of a stuck item.
	BatchesInFlight int
	// MaxBackoff caps the retry backoff; default 5s.
	MaxBackoff time.Duration
	// MinBackoff is the first retry delay; default 50ms.
	MinBackoff time.Duration
	// GiveUpAfter is how long an item's messages may keep failing with a
	// permanent error (store.IsPermanent) before the consumer gives up on the
	// ones that still fail alone; default 30s. Transient errors never give up.
	GiveUpAfter time.Duration
	// PaymentWindow is added to the database's NOW(3) for expires_at;
	// default 15m.
	PaymentWindow time.Duration
	// StoreTimeout bounds one MySQL transaction attempt or one Redis call;
	// default 2s. A batch transaction gets 5x this.
	StoreTimeout time.Duration
	// DrainTimeout bounds finishing the batch in hand after shutdown starts;
	// default 10s. Set it below the process' ShutdownTimeout.
	DrainTimeout time.Duration
	// LagInterval is how often the group's committed lag is polled from the
	// broker, and the bound of one poll; default 5s.
	LagInterval time.Duration
	// Dialer is the Kafka dialer (orderlog.Security.Dialer: TLS and SASL; tests
	// inject faults); the reader, the DLQ writer and the lag watch all use
	// it. nil = kafka-go default, plaintext.
	Dialer *kafka.Dialer
	// HeartbeatInterval, SessionTimeout and RebalanceTimeout tune the group
	// protocol; zero = kafka-go defaults (3s, 30s, 30s). Tests shorten them.
	HeartbeatInterval time.Duration
	SessionTimeout    time.Duration
	RebalanceTimeout  time.Duration
}

func (c *Config) withDefaults() (Config, error) {
	out := *c
	if len(out.Brokers) == 0 {
		return out, errors.New("orderwriter: no Kafka brokers")
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	defInt := func(d *int, v int) {
		if *d <= 0 {
			*d = v
		}
	}
	if out.Topic == "" {
		out.Topic = orderlog.OrdersTopic
	}
	if out.DLQTopic == "" {
		out.DLQTopic = orderlog.DLQTopic
	}
	if out.GroupID == "" {
		out.GroupID = orderlog.GroupID
	}
	defInt(&out.BatchSize, 500)
	def(&out.BatchWait, 20*time.Millisecond)
	defInt(&out.ItemParallelism, 8)
	defInt(&out.BatchesInFlight, 2)
	def(&out.MaxBackoff, 5*time.Second)
	def(&out.MinBackoff, 50*time.Millisecond)
	def(&out.GiveUpAfter, 30*time.Second)
	def(&out.PaymentWindow, 15*time.Minute)
	def(&out.StoreTimeout, 2*time.Second)
	def(&out.DrainTimeout, 10*time.Second)
	def(&out.LagInterval, 5*time.Second)
	if out.MinBackoff > out.MaxBackoff {
		out.MinBackoff = out.MaxBackoff
	}
	return out, nil
}
