//go:build cluster

package rebalance

import (
	"testing"

	"github.com/redis/go-redis/v9"
)

// newClusterEnv is newEnv on a Redis Cluster, with the cluster's client:
// FLASHSALE_REDIS_ADDR not naming one fails the test.
func newClusterEnv(t *testing.T) (*env, *redis.ClusterClient) {
	t.Helper()
	e := newEnv(t)
	cc, ok := e.rdb.(*redis.ClusterClient)
	if !ok {
		t.Fatalf("FLASHSALE_REDIS_ADDR is not a Redis Cluster (run with stack.sh env --cluster)")
	}
	return e, cc
}
