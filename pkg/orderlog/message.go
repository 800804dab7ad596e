package orderlog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/flashsale-dev/flashsale/pkg/reqid"
)

// Topic and group names.
const (
	OrdersTopic = "flashsale.orders.v1"
	DLQTopic    = "flashsale.orders.dlq.v1"
	GroupID     = "flashsale-order-writers"
)

// MessageVersion is the version of OrderMessage this code writes and reads.
const MessageVersion = 1

// ErrPoison marks a message that can never be processed (bad JSON, unknown
// version, invalid fields). The consumer sends it to the DLQ.
var ErrPoison = errors.New("orderlog: poison message")

// OrderMessage is one admitted request, published by the ingress after the
// Redis reservation and consumed by the order writers. Key = item id.
type OrderMessage struct {
	V          int    `json:"v"`
	RequestID  string `json:"request_id"`
	ItemID     int64  `json:"item_id"`
	UserID     int64  `json:"user_id"`
	Qty        int    `json:"qty"`
	ReservedMs int64  `json:"reserved_ms"`
}

// Key is the Kafka message key: the item id, with ".<bucket>" for a bucket
// of a bucketed item, so one stock row's requests share a partition and one
// consumer writes them in order, while a hot item's buckets spread over
// partitions and so over consumer replicas.
func (m OrderMessage) Key() []byte {
	k := strconv.AppendInt(nil, m.ItemID, 10)
	if b := m.Bucket(); b > 0 {
		k = append(k, '.')
		k = strconv.AppendInt(k, int64(b), 10)
	}
	return k
}

// Bucket is the stock bucket the request was admitted in (from its id).
func (m OrderMessage) Bucket() int { return reqid.Bucket(m.RequestID) }

// StockKey names the stock row the request takes from: its item and bucket.
type StockKey struct {
	ItemID int64
	Bucket int
}

// StockKey returns the message's StockKey.
func (m OrderMessage) StockKey() StockKey { return StockKey{m.ItemID, m.Bucket()} }

// Encode returns the JSON of m with V set.
func (m OrderMessage) Encode() ([]byte, error) {
	m.V = MessageVersion
	return json.Marshal(m)
}

// Decode parses and validates a message. Every failure wraps ErrPoison.
func Decode(b []byte) (OrderMessage, error) {
	var m OrderMessage
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return m, fmt.Errorf("%w: %v", ErrPoison, err)
	}
	if m.V != MessageVersion {
		return m, fmt.Errorf("%w: unknown version %d", ErrPoison, m.V)
	}
	item, err := reqid.Item(m.RequestID)
	switch {
	case err != nil:
		return m, fmt.Errorf("%w: request_id: %v", ErrPoison, err)
	case item != m.ItemID:
		return m, fmt.Errorf("%w: request_id %s is not of item %d", ErrPoison, m.RequestID, m.ItemID)
	case m.UserID <= 0:
		return m, fmt.Errorf("%w: user_id %d", ErrPoison, m.UserID)
	case m.Qty <= 0:
		return m, fmt.Errorf("%w: qty %d", ErrPoison, m.Qty)
	}
	return m, nil
}
