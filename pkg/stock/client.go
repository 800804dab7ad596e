package stock

import (
	"time"

	"github.com/redis/go-redis/v9"
)

// NewClient returns a Redis client for addrs: one address is a single node,
// several are Redis Cluster seeds. Every call is bounded by timeout, and the
// pool is sized for a burst of concurrent handlers.
//
// ContextTimeoutEnabled makes a call's context deadline bound the socket
// reads and writes (the earlier of it and now + timeout). Without it go-redis
// hands the connection context.Background() and sets each reply read's
// deadline to now + ReadTimeout: a caller's shorter deadline (the IP
// limiter's quarter of the store timeout) was ignored, and against a stalled
// Redis (connected, never answering) a pipeline or several calls under one
// deadline took a multiple of the timeout. The cost: a call cut by its
// deadline closes its connection, so a stall means redials, which a stalled
// server needs anyway. A cancelled context without a deadline still does not
// interrupt a read already on the wire.
func NewClient(addrs []string, timeout time.Duration, poolSize int) redis.UniversalClient {
	opt := &redis.UniversalOptions{
		Addrs:                 addrs,
		DialTimeout:           timeout,
		ReadTimeout:           timeout,
		WriteTimeout:          timeout,
		ContextTimeoutEnabled: true,
		PoolSize:              poolSize,
		PoolTimeout:           timeout,
		MaxRetries:            1,
		// One dial per attempt. go-redis' default (5 dials, 100 ms apart)
		// turns a refused connection, which certainly sent nothing and is
		// answered "unavailable", into half a second of waiting that runs
		// past the caller's deadline and becomes an ambiguous timeout.
		DialerRetries: 1,
		// Cluster mode only when there are several seeds, so a single
		// non-cluster Redis is never asked CLUSTER SLOTS.
		IsClusterMode: len(addrs) > 1,
	}
	if !opt.IsClusterMode {
		return redis.NewUniversalClient(opt)
	}
	c := opt.Cluster()
	c.ClusterStateReloadInterval = clusterStateReload
	return redis.NewClusterClient(c)
}

// clusterStateReload bounds how long a Cluster client keeps sending a slot's
// commands to a primary that died. go-redis reloads the slot map on MOVED,
// but a dead primary answers nothing, only refused dials, which reload
// nothing; its default interval (60 s) kept every admission of the slot
// failing for up to a minute after the replica had been promoted (about
// 6 s: faults/redis_cluster_test.go). The reload is lazy (only a client in
// use asks CLUSTER SLOTS, at most once a second), so this costs nothing idle.
const clusterStateReload = time.Second
