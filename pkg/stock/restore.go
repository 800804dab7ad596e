package stock

import (
	"context"
	"time"
)

// Restores: a cancelled order's qty back to Redis, once per request id.

// MarkedGuardTTL is how long a restore guard is kept once MySQL marked its
// record applied (ExpireRestoreGuards). Until then it has no TTL. It must
// exceed the longest time a reaper may take between reading a record as
// pending and its restore reaching Redis (one read and one restore call,
// each bounded by the store timeout, seconds): a slower replica that read
// the record before another one marked it still finds the guard.
const MarkedGuardTTL = time.Hour

// RestoreResult is what Restore did.
type RestoreResult int

// Restore outcomes; see lua/restore.lua.
const (
	RestoreApplied RestoreResult = 1 // qty given back now
	// RestoreWaitlisted: given back now, to the bucket's waitlist pool (a
	// queued item's sale is open and the bucket's stock gone; pkg/waitroom
	// waitlist.go).
	RestoreWaitlisted RestoreResult = 2
	RestoreSeen       RestoreResult = 0  // given back before: no-op
	RestoreNoStock    RestoreResult = -1 // Redis has no state for the item; warm rebuilds it from MySQL
)

// Restore gives the qty of requestID's cancelled order back to bucket of the
// item in Redis, once per request id: the restore guard makes a repeat a
// no-op (RestoreSeen). The qty goes back to the bucket's stock
// (RestoreApplied), except for an item with a waiting room whose sale is
// open and whose bucket's stock is gone: there it goes to the bucket's
// waitlist pool (RestoreWaitlisted), so the gate offers it to the next
// ticket in line rather than to whoever asks first. With no stock key (RestoreNoStock)
// nothing is given back in Redis, since the warm that rebuilds the item from
// MySQL counts the qty already; the guard is set all the same. Its guard has
// no TTL until ExpireRestoreGuards, after the mark.
func (s *Store) Restore(ctx context.Context, itemID int64, bucket int, requestID string, qty int) (RestoreResult, error) {
	n, err := restoreScript.Run(ctx, s.rdb, restoreKeys(itemID, bucket, requestID), qty).Int()
	if err != nil {
		return 0, unavailable("stock: restore", err)
	}
	return RestoreResult(n), nil
}

// restoreKeys are restore.lua's keys for requestID's qty going back to
// bucket of item itemID: the waitlist's hash is that bucket's own.
func restoreKeys(itemID int64, bucket int, requestID string) []string {
	k := BucketKeys(itemID, bucket)
	return []string{k.Stock, k.RestoreGuard(requestID), k.Meta, k.Waitlist}
}
