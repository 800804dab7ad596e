package stock

import (
	"context"
	"errors"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Buyer marks and idempotency answers: who holds an item, by which
// request, and what an Idempotency-Key was answered.

// Holder is one buyer mark: the user and the request by which they hold
// the item.
type Holder struct {
	UserID    int64
	RequestID string
}

// HeldBy returns the request id by which user holds the item in Redis (in
// bucket, the user's home bucket), if any, and whether Redis has the bucket
// at all (a warmed item's buyer marks
// are complete: warm copies every order holder from MySQL, and every
// admission adds its own). One round trip.
func (s *Store) HeldBy(ctx context.Context, itemID int64, bucket int, userID int64) (rid string, held, warmed bool, err error) {
	k := BucketKeys(itemID, bucket)
	var hget *redis.StringCmd
	var exists *redis.IntCmd
	_, err = s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		hget = p.HGet(ctx, k.Holders, strconv.FormatInt(userID, 10))
		exists = p.Exists(ctx, k.Stock)
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return "", false, false, unavailable("stock: held by", err)
	}
	rid, herr := hget.Result()
	return rid, herr == nil, exists.Val() == 1, nil
}

// IdempotencyAnswer reads an Idempotency-Key's first request id and whether
// its publish was acknowledged (see Ack); found is false once the key is
// gone (expired, or released after an abort).
func (s *Store) IdempotencyAnswer(ctx context.Context, itemID int64, bucket int, userID int64, idempotencyKey string) (rid string, acked, found bool, err error) {
	v, err := s.rdb.Get(ctx, BucketKeys(itemID, bucket).Idempotency(userID, idempotencyKey)).Result()
	if errors.Is(err, redis.Nil) {
		return "", false, false, nil
	}
	if err != nil {
		return "", false, false, unavailable("stock: idempotency answer", err)
	}
	answer, acked := strings.CutSuffix(v, ":a")
	rid, _, _ = strings.Cut(answer, "#") // "<request id>#<fingerprint>" (admit.lua)
	return rid, acked, true, nil
}

// Ack records on a keyed request's Idempotency-Key answer that Kafka
// acknowledged its message, so a replay of the key may answer 202. It
// reports false when the key no longer names requestID (expired, or
// released after an abort).
func (s *Store) Ack(ctx context.Context, itemID, userID int64, idempotencyKey, requestID string) (bool, error) {
	n, err := s.run(ctx, ackScript, []string{RequestKeys(itemID, requestID).Idempotency(userID, idempotencyKey)}, requestID).Int()
	if err != nil {
		return false, unavailable("stock: ack", err)
	}
	return n == 1, nil
}
