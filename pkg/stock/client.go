package stock

import (
	"time"

	"github.com/redis/go-redis/v9"
)

// NewClient returns a Redis client for addrs: one address is a single node,
// several are Redis Cluster seeds. Every call is bounded by timeout, and the
// pool is sized for a burst of concurrent handlers.
func NewClient(addrs []string, timeout time.Duration, poolSize int) redis.UniversalClient {
	return redis.NewUniversalClient(&redis.UniversalOptions{
		Addrs:        addrs,
		DialTimeout:  timeout,
		ReadTimeout:  timeout,
		WriteTimeout: timeout,
		PoolSize:     poolSize,
		PoolTimeout:  timeout,
		MaxRetries:   1,
		// One dial per attempt. go-redis' default (5 dials, 100 ms apart)
		// turns a refused connection, which certainly sent nothing and is
		// answered "unavailable", into half a second of waiting that runs
		// past the caller's deadline and becomes an ambiguous timeout.
		DialerRetries: 1,
		// Cluster mode only when there are several seeds, so a single
		// non-cluster Redis is never asked CLUSTER SLOTS.
		IsClusterMode: len(addrs) > 1,
	})
}
