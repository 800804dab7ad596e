package dlq

import (
	"context"
	"database/sql"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/segmentio/kafka-go"

	"github.com/flashsale-dev/flashsale/pkg/api"
	"github.com/flashsale-dev/flashsale/pkg/orderlog"
	"github.com/flashsale-dev/flashsale/pkg/store"
)

// The refusals of Letters' operations.
var (
	// ErrUnavailable: Kafka did not answer (the bounds or the letters).
	ErrUnavailable = errors.New("dlq: kafka unavailable")
	// ErrNoLetter: the topic does not hold a letter at that offset (never
	// written, or deleted by retention).
	ErrNoLetter = errors.New("dlq: no dead letter at that offset")
	// ErrNotPublished: a replay's publish failed; the letter may or may not
	// have been replayed (a second replay is harmless).
	ErrNotPublished = errors.New("dlq: replay not acknowledged")
)

// NotReplayableError refuses a replay whose payload does not decode as an
// order message: the consumer would only dead-letter it again.
type NotReplayableError struct{ Err error }

func (e *NotReplayableError) Error() string { return "dlq: not replayable: " + e.Err.Error() }

// OtherTopicError refuses a replay of a letter consumed from another topic
// than the orders topic a replay publishes to.
type OtherTopicError struct{ Topic, OrdersTopic string }

func (e *OtherTopicError) Error() string {
	return fmt.Sprintf("dlq: letter of topic %q, not of the orders topic %q", e.Topic, e.OrdersTopic)
}

// Publisher appends to the orders topic (the admission path's publisher).
type Publisher interface {
	WriteMessages(ctx context.Context, msgs ...kafka.Message) error
}

// Letters is the dead-letter topic as the admin API serves it. It holds no
// state: a caller builds it from its settings for each call.
type Letters struct {
	Kafka    *orderlog.Security // how Brokers are reached; nil = plaintext
	Brokers  []string
	DLQTopic string
	// OrdersTopic is where a replay publishes, through Publisher, acknowledged
	// as an order is.
	OrdersTopic string
	Publisher   Publisher
	// DB is the arbiter's, read for a letter's decision.
	DB *sql.DB
	// StoreTimeout bounds one MySQL read; a list, a show or a replay's read
	// of Kafka gets five of them. PublishTimeout bounds a replay's publish.
	StoreTimeout   time.Duration
	PublishTimeout time.Duration
	Log            *slog.Logger
}

// Page asks for a page of the list: the newest Limit letters below Before,
// or with HasAfter the Limit letters above After, oldest first (to follow
// the topic), below Before when both are given (a range).
type Page struct {
	Limit, Before, After int64
	HasAfter             bool
}

// List reads a page of letters. The topic has one partition, so an offset
// names a letter.
func (l Letters) List(ctx context.Context, p Page) (api.DeadLetterPage, error) {
	kctx, cancel := context.WithTimeout(ctx, 5*l.StoreTimeout)
	defer cancel()
	b, err := l.bounds(ctx, kctx)
	if err != nil {
		return api.DeadLetterPage{}, err
	}
	page := api.DeadLetterPage{FirstOffset: b.First, EndOffset: b.End, Letters: []api.DeadLetter{}}
	var lo, hi int64
	top := min(p.Before, b.End)
	if p.HasAfter {
		lo = max(p.After+1, b.First)
		hi = min(lo+p.Limit, top)
	} else {
		hi = min(p.Before, b.End)
		lo = max(b.First, hi-p.Limit)
	}
	if lo >= hi {
		return page, nil
	}
	ls, err := l.Kafka.ReadDeadLetters(kctx, l.Brokers, l.DLQTopic, lo, hi)
	if err != nil {
		l.Log.WarnContext(ctx, "admin: dlq read", "err", err)
		return api.DeadLetterPage{}, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	for _, dl := range ls {
		page.Letters = append(page.Letters, toLetter(dl))
	}
	if p.HasAfter {
		if hi < top {
			next := hi - 1
			page.NextAfter = &next
		}
	} else {
		slices.Reverse(page.Letters)
		if lo > b.First {
			page.NextBefore = &lo
		}
	}
	return page, nil
}

// Count is the number of letters the topic holds now.
func (l Letters) Count(ctx context.Context) (int64, error) {
	b, err := l.Kafka.DeadLetterBounds(ctx, l.Brokers, l.DLQTopic)
	if err != nil {
		return 0, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return b.End - b.First, nil
}

// Get is one letter, its payload, and whether a replay could do anything.
func (l Letters) Get(ctx context.Context, offset int64) (api.DeadLetterDetail, error) {
	dl, err := l.read(ctx, offset)
	if err != nil {
		return api.DeadLetterDetail{}, err
	}
	d := api.DeadLetterDetail{DeadLetter: toLetter(dl), Headers: []api.DeadLetterHeader{}, PayloadEncoding: "utf-8", Payload: string(dl.Value)}
	if !utf8.Valid(dl.Value) {
		d.PayloadEncoding, d.Payload = "base64", base64.StdEncoding.EncodeToString(dl.Value)
	}
	for _, h := range dl.Headers {
		d.Headers = append(d.Headers, api.DeadLetterHeader{Key: h.Key, Value: string(h.Value)})
	}
	m, err := orderlog.Decode(dl.Value)
	d.Replayable = err == nil
	if err != nil {
		d.DecodeError = err.Error()
	} else {
		d.Decision = l.decisionOf(ctx, m.RequestID)
	}
	return d, nil
}

// Replay publishes the letter's original message (key, value, headers)
// again to the orders topic through the admission path's own publisher,
// acknowledged as an order is, so the consumer decides it on its idempotent
// path: a request the arbiter has decided (REJECTED unprocessable by the
// give-up, VOIDED by the reaper, or ORDERED by an earlier replay) is dropped
// there, an undecided one is written once. Replaying twice therefore
// changes nothing. A payload that does not decode is refused
// (NotReplayableError): the consumer would only dead-letter it again.
func (l Letters) Replay(ctx context.Context, offset int64) (api.DeadLetterReplay, error) {
	dl, err := l.read(ctx, offset)
	if err != nil {
		return api.DeadLetterReplay{}, err
	}
	m, err := orderlog.Decode(dl.Value)
	if err != nil {
		return api.DeadLetterReplay{}, &NotReplayableError{Err: err}
	}
	if dl.Topic != "" && dl.Topic != l.OrdersTopic {
		return api.DeadLetterReplay{}, &OtherTopicError{Topic: dl.Topic, OrdersTopic: l.OrdersTopic}
	}
	before := l.decisionOf(ctx, m.RequestID)
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.PublishTimeout)
	err = l.Publisher.WriteMessages(pctx, dl.Message())
	cancel()
	if err != nil {
		l.Log.WarnContext(ctx, "admin: dlq replay publish failed", "offset", dl.Offset, "request_id", m.RequestID, "err", err)
		return api.DeadLetterReplay{}, fmt.Errorf("%w: %w", ErrNotPublished, err)
	}
	l.Log.InfoContext(ctx, "dead letter replayed", "offset", dl.Offset, "request_id", m.RequestID, "topic", l.OrdersTopic)
	return api.DeadLetterReplay{Offset: dl.Offset, RequestID: m.RequestID, Topic: l.OrdersTopic, Decision: before}, nil
}

// read reads the letter at offset: ErrNoLetter when the topic does not hold
// it (an offset at or past its end, or deleted by retention).
func (l Letters) read(ctx context.Context, offset int64) (orderlog.DeadLetter, error) {
	kctx, cancel := context.WithTimeout(ctx, 5*l.StoreTimeout)
	defer cancel()
	b, err := l.bounds(ctx, kctx)
	if err != nil {
		return orderlog.DeadLetter{}, err
	}
	if offset < b.First || offset >= b.End {
		return orderlog.DeadLetter{}, ErrNoLetter
	}
	dl, err := l.Kafka.ReadDeadLetter(kctx, l.Brokers, l.DLQTopic, offset)
	if errors.Is(err, orderlog.ErrNoLetter) {
		return dl, ErrNoLetter
	}
	if err != nil {
		l.Log.WarnContext(ctx, "admin: dlq read", "offset", offset, "err", err)
		return dl, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return dl, nil
}

// bounds reads the topic's first and end offsets within kctx (logged under
// ctx when Kafka does not answer).
func (l Letters) bounds(ctx, kctx context.Context) (orderlog.DLQBounds, error) {
	b, err := l.Kafka.DeadLetterBounds(kctx, l.Brokers, l.DLQTopic)
	if err != nil {
		l.Log.WarnContext(ctx, "admin: dlq bounds", "err", err)
		return b, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return b, nil
}

// decisionOf is the arbiter's decision of requestID, nil when undecided or
// unreadable (it only informs; the consumer decides).
func (l Letters) decisionOf(ctx context.Context, requestID string) *api.DeadLetterDecision {
	ctx, cancel := context.WithTimeout(ctx, l.StoreTimeout)
	defer cancel()
	d, err := store.GetDecision(ctx, l.DB, requestID)
	if err != nil {
		return nil
	}
	return &api.DeadLetterDecision{Outcome: string(d.Outcome), Reason: d.Reason, DecidedAt: d.DecidedAt.UTC()}
}

func toLetter(l orderlog.DeadLetter) api.DeadLetter {
	failed := l.FailedAt
	if failed.IsZero() {
		failed = l.Time
	}
	return api.DeadLetter{Offset: l.Offset, AppendedAt: l.Time, FailedAt: failed, Reason: l.Reason, Key: string(l.Key),
		RequestID: l.RequestID(), Source: api.DeadLetterSource{Topic: l.Topic, Partition: l.Partition, Offset: l.SourceOffset}, Size: len(l.Value)}
}
