package stock

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// MinRedisVersion is the oldest Redis the scripts and the status channel run
// on: SPUBLISH and SSUBSCRIBE (shard channels, pkg/orderstatus/subscribe.go)
// came in 7.0.
var MinRedisVersion = [2]int{7, 0}

// ErrServerUnfit marks a Redis that answers but would lose or refuse what
// flashsale keeps in it (errors.Is).
var ErrServerUnfit = errors.New("redis server unfit for flashsale")

// CheckServer asks every node the client writes to (each primary of a
// Cluster) for its version and eviction policy and returns one error per
// trap found, each naming the node, joined; nil when every node is fit.
//
// Managed Redis is where these bite: ElastiCache and Memorystore default
// to an LRU policy (volatile-lru, allkeys-lru), and an evicted reservation,
// buyer mark or restore guard is stock accounting lost without a trace (I3
// breaks silently). INFO is used rather than CONFIG GET, which managed
// services refuse.
func CheckServer(ctx context.Context, rdb redis.UniversalClient) error {
	var mu sync.Mutex
	var problems []error
	check := func(ctx context.Context, c *redis.Client) error {
		info, err := c.Info(ctx, "server", "memory").Result()
		if err != nil {
			return fmt.Errorf("redis %s: INFO: %w", c.Options().Addr, err)
		}
		if err := checkInfo(info); err != nil {
			mu.Lock()
			problems = append(problems, fmt.Errorf("redis %s: %w", c.Options().Addr, err))
			mu.Unlock()
		}
		return nil
	}
	var err error
	switch c := rdb.(type) {
	case *redis.ClusterClient:
		err = c.ForEachMaster(ctx, check)
	case *redis.Client:
		err = check(ctx, c)
	default:
		return fmt.Errorf("stock: check server: unsupported client %T", rdb)
	}
	if err != nil {
		return err
	}
	return errors.Join(problems...)
}

// checkInfo judges one node's INFO text.
func checkInfo(info string) error {
	fields := map[string]string{}
	for _, line := range strings.Split(info, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			fields[k] = v
		}
	}
	var problems []error
	if v := fields["redis_version"]; !versionAtLeast(v, MinRedisVersion) {
		problems = append(problems, fmt.Errorf("%w: version %q, need %d.%d or later (SPUBLISH, SSUBSCRIBE)",
			ErrServerUnfit, v, MinRedisVersion[0], MinRedisVersion[1]))
	}
	if p := fields["maxmemory_policy"]; p != "noeviction" {
		problems = append(problems, fmt.Errorf("%w: maxmemory-policy %q, need noeviction (an evicted reservation or buyer mark is stock lost; set it in the server's parameter group)",
			ErrServerUnfit, p))
	}
	return errors.Join(problems...)
}

// versionAtLeast reports whether a "major.minor.patch" version is at least
// min; an unparsable one is not.
func versionAtLeast(v string, min [2]int) bool {
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return false
	}
	major, err1 := strconv.Atoi(parts[0])
	minor, err2 := strconv.Atoi(parts[1])
	if err1 != nil || err2 != nil {
		return false
	}
	return major > min[0] || major == min[0] && minor >= min[1]
}
