package stock

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// admitAndWait runs the admission script and then WAIT on the same
// connection of the item's primary, in one round trip: Redis' WAIT counts
// the replicas that acknowledged this connection's writes, so it must
// follow the script on the connection that ran it. A pipeline of a plain
// client uses one connection; on a Cluster the pipeline goes to the item's
// master directly, and a MOVED (the slot moved in a failover or a
// resharding) reloads the slot map and runs both again, which the script's
// idempotence per request id makes safe.
//
// Asynchronous replication otherwise loses the reservations and buyer marks
// a primary acknowledged just before it died (docs/guarantees.md, "Not promised"); MySQL
// still refuses oversell and second orders, so this buys exact Redis state
// across a failover at the price of the replication round trip.
func (s *Store) admitAndWait(ctx context.Context, slotKey string, keys []string, args []any, n int, timeout time.Duration) ([]string, int, error) {
	for attempt := 0; ; attempt++ {
		node, err := s.nodeOf(ctx, slotKey)
		if err != nil {
			return nil, 0, err
		}
		var eval *redis.Cmd
		var wait *redis.Cmd
		_, err = node.Pipelined(ctx, func(p redis.Pipeliner) error {
			// Sent once by go-redis, so a refused retry never hides a
			// written attempt (exact NotSent: sendonce.go).
			eval = onceScripter{Scripter: p, process: p.Process}.EvalSha(ctx, admitScript.Hash(), keys, args...)
			wait = p.Do(ctx, "WAIT", n, timeout.Milliseconds())
			return nil
		})
		switch {
		case err == nil:
			res, err := eval.StringSlice()
			acked, _ := wait.Int()
			return res, acked, err
		case attempt < 2 && isNoScript(eval.Err()):
			if err := admitScript.Load(ctx, node).Err(); err != nil {
				return nil, 0, err
			}
		case attempt < 2 && isMoved(eval.Err()):
			if cc, ok := s.rdb.(*redis.ClusterClient); ok {
				cc.ReloadState(ctx)
			}
		default:
			return nil, 0, err
		}
	}
}

// nodeOf is the client of the node that serves key: the client itself
// unless it is a Cluster client.
func (s *Store) nodeOf(ctx context.Context, key string) (redis.Cmdable, error) {
	switch c := s.rdb.(type) {
	case *redis.ClusterClient:
		node, err := c.MasterForKey(ctx, key)
		if err != nil {
			return nil, fmt.Errorf("stock: master of %s: %w", key, err)
		}
		return node, nil
	case *redis.Client:
		return c, nil
	}
	return nil, errors.New("stock: WAIT needs a single-node or a Cluster client")
}

func isNoScript(err error) bool { return err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT") }

func isMoved(err error) bool {
	return err != nil && (strings.HasPrefix(err.Error(), "MOVED ") || strings.HasPrefix(err.Error(), "ASK "))
}
