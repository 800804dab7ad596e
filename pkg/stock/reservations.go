package stock

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Reading the pending reservations (Keys.Reservations) of an item.

// Reservation is one pending admission.
type Reservation struct {
	RequestID  string
	UserID     int64
	Qty        int
	ReservedAt time.Time
}

// ParseReservation reads one entry of a reservations hash (request id ->
// "user:qty:reserved_ms", as admit.lua writes it), for readers of the hash
// outside this package (pkg/orderstatus's lookup of a request).
func ParseReservation(id, v string) (Reservation, error) {
	parts := strings.Split(v, ":")
	if len(parts) != 3 {
		return Reservation{}, fmt.Errorf("stock: malformed reservation %q", v)
	}
	user, err1 := strconv.ParseInt(parts[0], 10, 64)
	qty, err2 := strconv.Atoi(parts[1])
	ms, err3 := strconv.ParseInt(parts[2], 10, 64)
	if err := errors.Join(err1, err2, err3); err != nil {
		return Reservation{}, fmt.Errorf("stock: malformed reservation %q: %w", v, err)
	}
	return Reservation{RequestID: id, UserID: user, Qty: qty, ReservedAt: time.UnixMilli(ms).UTC()}, nil
}

// GetReservation returns the pending reservation of requestID, if any.
func (s *Store) GetReservation(ctx context.Context, itemID int64, requestID string) (Reservation, bool, error) {
	v, err := s.rdb.HGet(ctx, RequestKeys(itemID, requestID).Reservations, requestID).Result()
	if errors.Is(err, redis.Nil) {
		return Reservation{}, false, nil
	}
	if err != nil {
		return Reservation{}, false, unavailable("stock: get reservation", err)
	}
	r, err := ParseReservation(requestID, v)
	return r, err == nil, err
}

// ScanReservations calls fn for every pending reservation of the item, in
// every bucket Redis knows of, in HSCAN pages (no blocking HGETALL on a big
// hash): the audit's and the reaper's orphan sweep's read of them.
func (s *Store) ScanReservations(ctx context.Context, itemID int64, fn func(Reservation) error) error {
	n, _, err := s.Buckets(ctx, itemID)
	if err != nil {
		return err
	}
	for b := range max(n, 1) {
		if err := s.scanBucketReservations(ctx, itemID, b, fn); err != nil {
			return err
		}
	}
	return nil
}

// scanBucketReservations calls fn for every pending reservation of one
// bucket of the item.
func (s *Store) scanBucketReservations(ctx context.Context, itemID int64, bucket int, fn func(Reservation) error) error {
	key := BucketKeys(itemID, bucket).Reservations
	var cursor uint64
	for {
		kv, next, err := s.rdb.HScan(ctx, key, cursor, "*", 1000).Result()
		if err != nil {
			return unavailable("stock: scan reservations", err)
		}
		for i := 0; i+1 < len(kv); i += 2 {
			r, err := ParseReservation(kv[i], kv[i+1])
			if err != nil {
				return err
			}
			if err := fn(r); err != nil {
				return err
			}
		}
		if cursor = next; cursor == 0 {
			return nil
		}
	}
}
