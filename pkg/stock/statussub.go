package stock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// StatusSubscription follows one item's status channel, on which
// status_put.lua announces the request id of every status it stores, so an
// ingress can wake the buyers waiting on those requests. It uses a
// connection of its own (a Redis pub/sub connection carries nothing else).
type StatusSubscription struct {
	ps *redis.PubSub
}

// statusIdle is how long Next waits for a message before it pings: a
// connection that died silently is noticed within about this long, and the
// reconnect is reported as a gap.
const statusIdle = 15 * time.Second

// SubscribeStatuses subscribes to the status channel of bucket of item
// (SSUBSCRIBE, on the shard of the bucket's keys) and returns once Redis
// confirmed it: every status of a request of that bucket stored after that
// is announced to it.
func (s *Store) SubscribeStatuses(ctx context.Context, itemID int64, bucket int) (*StatusSubscription, error) {
	ch := BucketKeys(itemID, bucket).StatusChannel()
	ps := s.rdb.SSubscribe(ctx, ch)
	msg, err := ps.Receive(ctx)
	if err != nil {
		_ = ps.Close()
		return nil, unavailable("stock: subscribe statuses", err)
	}
	if _, ok := msg.(*redis.Subscription); !ok {
		_ = ps.Close()
		return nil, unavailable("stock: subscribe statuses", fmt.Errorf("unexpected first message %T", msg))
	}
	return &StatusSubscription{ps: ps}, nil
}

// Next blocks until the next announcement and returns its request id. gap
// is true (and requestID empty) when announcements may have been missed:
// the connection failed or was re-established, so every waiter must look
// again. err is returned only once the subscription is closed.
func (ss *StatusSubscription) Next(ctx context.Context) (requestID string, gap bool, err error) {
	for {
		msg, err := ss.ps.ReceiveTimeout(ctx, statusIdle)
		switch m := msg.(type) {
		case *redis.Message:
			return m.Payload, false, nil
		case *redis.Subscription:
			// A re-subscription after a reconnect: whatever was published
			// while the connection was down is lost.
			return "", true, nil
		case *redis.Pong:
			continue
		}
		if err == nil {
			continue
		}
		if errors.Is(err, redis.ErrClosed) || ctx.Err() != nil {
			return "", false, fmt.Errorf("stock: status subscription: %w", err)
		}
		var nerr interface{ Timeout() bool }
		if errors.As(err, &nerr) && nerr.Timeout() {
			// Idle: ping, so a dead connection fails (and reconnects) soon.
			if perr := ss.ps.Ping(ctx); perr == nil {
				continue
			}
		}
		// A failed read: go-redis reconnects and re-subscribes on the next
		// receive; report the gap now and back off a little.
		select {
		case <-time.After(100 * time.Millisecond):
		case <-ctx.Done():
		}
		return "", true, nil
	}
}

// Close ends the subscription and its connection.
func (ss *StatusSubscription) Close() error { return ss.ps.Close() }
