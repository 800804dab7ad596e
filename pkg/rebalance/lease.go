package rebalance

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// RebalanceLease is the key whose holder is the one reaper replica that
// rebalances (Config.LeaseKey's default). It only saves work: transfers are
// safe with any number of movers.
const RebalanceLease = "fs:rebalance:lease"

// holdLease takes key for holder for ttl when nobody holds it, or extends
// it when holder does, and reports whether holder holds it: one script
// (lua/lease_hold.lua), so a holder whose lease expired and was taken never
// extends the new holder's (lease_test.go).
func holdLease(ctx context.Context, rdb redis.UniversalClient, key, holder string, ttl time.Duration) (bool, error) {
	n, err := leaseHoldScript.Run(ctx, rdb, []string{key}, holder, ttl.Milliseconds()).Int()
	if err != nil {
		return false, fmt.Errorf("rebalance: hold lease %s: %w", key, err)
	}
	return n == 1, nil
}

// dropLease gives key up if holder still holds it (lua/lease_drop.lua), so
// another replica need not wait for it to expire.
func dropLease(ctx context.Context, rdb redis.UniversalClient, key, holder string) error {
	if err := leaseDropScript.Run(ctx, rdb, []string{key}, holder).Err(); err != nil {
		return fmt.Errorf("rebalance: drop lease %s: %w", key, err)
	}
	return nil
}
