// Package reqid makes and parses request ids.
//
// A request id names one admitted order attempt everywhere: the Redis
// reservation, the Kafka message, the arbiter row, the order. It embeds the
// item id ("<item>-<time><random>") so a status poll finds the item's Redis
// slot (and so its Redis Cluster node) from the id alone, without MySQL.
package reqid

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"time"
)

// ErrMalformed is returned for an id this package did not make.
var ErrMalformed = errors.New("reqid: malformed request id")

// MaxLen is the longest id: 19 digits, a dash, 12+16 hex characters.
const MaxLen = 48

// New returns a fresh id for item. Its time prefix sorts ids roughly by
// creation; its 64 random bits make collisions negligible.
func New(itemID int64, now time.Time) string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	var sb strings.Builder
	sb.Grow(MaxLen)
	sb.WriteString(strconv.FormatInt(itemID, 10))
	sb.WriteByte('-')
	ms := strconv.FormatInt(now.UnixMilli(), 16)
	sb.WriteString(strings.Repeat("0", max(0, 12-len(ms))))
	sb.WriteString(ms)
	sb.WriteString(hex.EncodeToString(b[:]))
	return sb.String()
}

// Item returns the item id embedded in id.
func Item(id string) (int64, error) {
	if len(id) > MaxLen {
		return 0, ErrMalformed
	}
	head, tail, ok := strings.Cut(id, "-")
	if !ok || len(tail) != 28 {
		return 0, ErrMalformed
	}
	item, err := strconv.ParseInt(head, 10, 64)
	if err != nil || item <= 0 {
		return 0, ErrMalformed
	}
	for _, c := range tail {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return 0, ErrMalformed
		}
	}
	return item, nil
}
