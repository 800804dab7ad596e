package orderlog

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/segmentio/kafka-go"
)

// Headers a dead letter carries besides the original message's key, value
// and headers (the consumer writes them, pkg/orderwriter/dlq.go), so an
// operator can see why and replay it where it came from.
const (
	HeaderDLQError     = "flashsale-error"
	HeaderDLQTopic     = "flashsale-original-topic"
	HeaderDLQPartition = "flashsale-original-partition"
	HeaderDLQOffset    = "flashsale-original-offset"
	HeaderDLQFailedAt  = "flashsale-failed-at"
)

// DLQPartition is the dead-letter topic's one partition (Topics creates it
// with one), so a letter's offset names it: the admin API's
// /admin/dlq/{offset}.
const DLQPartition = 0

// ErrNoLetter is the answer for an offset the dead-letter topic does not
// hold (never written, or deleted by retention).
var ErrNoLetter = errors.New("orderlog: no dead letter at that offset")

// DeadLetter is one message of the dead-letter topic, its headers read.
type DeadLetter struct {
	// Offset is its offset in the dead-letter topic; Time the broker's
	// timestamp of its append.
	Offset int64
	Time   time.Time
	// Key and Value are the original message's, byte for byte; Headers its
	// original headers (the flashsale-* ones taken out into the fields).
	Key, Value []byte
	Headers    []kafka.Header
	// Reason is why the consumer dead-lettered it (flashsale-error).
	Reason string
	// Topic, Partition and SourceOffset say where it was consumed from;
	// FailedAt when it was dead-lettered (zero when a header is missing).
	Topic        string
	Partition    int
	SourceOffset int64
	FailedAt     time.Time
}

// Message is the original message again, as it was published: key, value,
// and its original headers. Its Topic is left empty for a writer bound to
// the orders topic.
func (l DeadLetter) Message() kafka.Message {
	return kafka.Message{Key: l.Key, Value: l.Value, Headers: l.Headers}
}

// RequestID is the request id in the payload, if the payload is JSON with a
// string request_id (it need not decode as an OrderMessage: a letter is
// dead-lettered because it may not).
func (l DeadLetter) RequestID() string {
	var m struct {
		RequestID any `json:"request_id"`
	}
	if json.NewDecoder(bytes.NewReader(l.Value)).Decode(&m) != nil {
		return ""
	}
	s, _ := m.RequestID.(string)
	return s
}

// parseDeadLetter splits r's flashsale-* headers out.
func parseDeadLetter(r kafka.Record) (DeadLetter, error) {
	l := DeadLetter{Offset: r.Offset, Time: r.Time.UTC(), SourceOffset: -1, Partition: -1}
	var err error
	if l.Key, err = readBytes(r.Key); err != nil {
		return l, err
	}
	if l.Value, err = readBytes(r.Value); err != nil {
		return l, err
	}
	for _, h := range r.Headers {
		v := string(h.Value)
		switch h.Key {
		case HeaderDLQError:
			l.Reason = v
		case HeaderDLQTopic:
			l.Topic = v
		case HeaderDLQPartition:
			if n, err := strconv.Atoi(v); err == nil {
				l.Partition = n
			}
		case HeaderDLQOffset:
			if n, err := strconv.ParseInt(v, 10, 64); err == nil {
				l.SourceOffset = n
			}
		case HeaderDLQFailedAt:
			if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
				l.FailedAt = t.UTC()
			}
		default:
			l.Headers = append(l.Headers, kafka.Header{Key: h.Key, Value: append([]byte(nil), h.Value...)})
		}
	}
	return l, nil
}

func readBytes(b kafka.Bytes) ([]byte, error) {
	if b == nil {
		return nil, nil
	}
	defer b.Close()
	out, err := io.ReadAll(b)
	if err != nil {
		return nil, fmt.Errorf("orderlog: read record: %w", err)
	}
	return out, nil
}

// DLQBounds are the dead-letter topic's offsets: First is the oldest
// letter still held, End the offset the next letter will get (End - First
// letters are held).
type DLQBounds struct{ First, End int64 }

// DeadLetterBounds reads topic's first and end offsets (partition
// DLQPartition).
func (s *Security) DeadLetterBounds(ctx context.Context, brokers []string, topic string) (DLQBounds, error) {
	return retryTemporary(ctx, func() (DLQBounds, error) {
		res, err := s.Client(brokers).ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{
			topic: {kafka.FirstOffsetOf(DLQPartition), kafka.LastOffsetOf(DLQPartition)}}})
		if err != nil {
			return DLQBounds{}, fmt.Errorf("orderlog: dlq offsets: %w", err)
		}
		for _, p := range res.Topics[topic] {
			if p.Partition != DLQPartition {
				continue
			}
			if p.Error != nil {
				return DLQBounds{}, fmt.Errorf("orderlog: dlq offsets: %w", p.Error)
			}
			return DLQBounds{First: p.FirstOffset, End: p.LastOffset}, nil
		}
		return DLQBounds{}, fmt.Errorf("orderlog: dlq offsets: topic %s has no partition %d", topic, DLQPartition)
	})
}

// dlqFetchBytes bounds one fetch of letters: a letter is an order message
// (about 150 bytes) and its headers, far below it, so one fetch holds a
// page; a larger letter (a foreign producer's) still comes whole, since the
// broker returns at least one record batch.
const dlqFetchBytes = 1 << 20

// ReadDeadLetters returns the letters of topic at offsets [from, to), in
// offset order, fetching as many times as needed. Offsets that no longer
// exist (retention) are skipped.
func (s *Security) ReadDeadLetters(ctx context.Context, brokers []string, topic string, from, to int64) ([]DeadLetter, error) {
	var out []DeadLetter
	client := s.Client(brokers)
	for from < to {
		res, err := retryTemporary(ctx, func() (*kafka.FetchResponse, error) {
			r, err := client.Fetch(ctx, &kafka.FetchRequest{Topic: topic, Partition: DLQPartition, Offset: from,
				MinBytes: 1, MaxBytes: dlqFetchBytes, MaxWait: 100 * time.Millisecond})
			if err == nil && r.Error != nil {
				err = r.Error
			}
			return r, err
		})
		if errors.Is(err, kafka.OffsetOutOfRange) {
			break // past the end (or before the start) of the log
		}
		if err != nil {
			return out, fmt.Errorf("orderlog: fetch dead letters from %d: %w", from, err)
		}
		next := from
		for {
			r, err := res.Records.ReadRecord()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return out, fmt.Errorf("orderlog: read dead letters: %w", err)
			}
			if r.Offset < from || r.Offset >= to {
				continue // a batch may start before the offset asked for
			}
			l, err := parseDeadLetter(*r)
			if err != nil {
				return out, err
			}
			out = append(out, l)
			next = r.Offset + 1
		}
		if next == from {
			// Nothing at or after from in this answer: the end of the log,
			// or a gap; go on from the log's start if from fell off it.
			if res.LogStartOffset > from {
				from = res.LogStartOffset
				continue
			}
			break
		}
		from = next
	}
	return out, nil
}

// ReadDeadLetter returns the letter at offset, or ErrNoLetter.
func (s *Security) ReadDeadLetter(ctx context.Context, brokers []string, topic string, offset int64) (DeadLetter, error) {
	ls, err := s.ReadDeadLetters(ctx, brokers, topic, offset, offset+1)
	if err != nil {
		return DeadLetter{}, err
	}
	if len(ls) == 0 || ls[0].Offset != offset {
		return DeadLetter{}, ErrNoLetter
	}
	return ls[0], nil
}
