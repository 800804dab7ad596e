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

// MaxBucket is the highest bucket index an id can carry.
const MaxBucket = 999

// MaxLen is the longest id: 19 digits, a dot and 3 digits, a dash, 12+16
// hex characters.
const MaxLen = 52

// New returns a fresh id for item's bucket 0 (an unbucketed item).
func New(itemID int64, now time.Time) string { return NewIn(itemID, 0, now) }

// NewIn returns a fresh id for bucket of item. Its time prefix sorts ids
// roughly by creation; its 64 random bits make collisions negligible.
func NewIn(itemID int64, bucket int, now time.Time) string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	var sb strings.Builder
	sb.Grow(MaxLen)
	sb.WriteString(strconv.FormatInt(itemID, 10))
	if bucket > 0 {
		sb.WriteByte('.')
		sb.WriteString(strconv.Itoa(bucket))
	}
	sb.WriteByte('-')
	ms := strconv.FormatInt(now.UnixMilli(), 16)
	sb.WriteString(strings.Repeat("0", max(0, 12-len(ms))))
	sb.WriteString(ms)
	sb.WriteString(hex.EncodeToString(b[:]))
	return sb.String()
}

// Item returns the item id embedded in id.
func Item(id string) (int64, error) {
	item, _, err := Parse(id)
	return item, err
}

// Bucket returns the bucket embedded in id, 0 for an id without one. It
// does not validate the rest of id; callers that take ids from outside use
// Parse.
func Bucket(id string) int {
	head, _, _ := strings.Cut(id, "-")
	_, b, ok := strings.Cut(head, ".")
	if !ok {
		return 0
	}
	n, err := strconv.Atoi(b)
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// Parse returns the item id and bucket embedded in id.
func Parse(id string) (item int64, bucket int, err error) {
	if len(id) > MaxLen {
		return 0, 0, ErrMalformed
	}
	head, tail, ok := strings.Cut(id, "-")
	if !ok || len(tail) != 28 {
		return 0, 0, ErrMalformed
	}
	itemPart, bucketPart, hasBucket := strings.Cut(head, ".")
	item, err = strconv.ParseInt(itemPart, 10, 64)
	if err != nil || item <= 0 || itemPart[0] == '+' {
		return 0, 0, ErrMalformed
	}
	if hasBucket {
		// Canonical only: 1..MaxBucket, no sign, no leading zero, so one
		// request has one id.
		bucket, err = strconv.Atoi(bucketPart)
		if err != nil || bucket < 1 || bucket > MaxBucket || bucketPart[0] == '0' || bucketPart[0] == '+' {
			return 0, 0, ErrMalformed
		}
	}
	for _, c := range tail {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return 0, 0, ErrMalformed
		}
	}
	return item, bucket, nil
}
