package orderstatus

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flashsale-dev/flashsale/pkg/stock"
)

// StatusSubscription follows one item's status channel, on which
// status_put.lua announces every status it stores (the request id and the
// status itself), so an ingress can answer the buyers waiting on those
// requests without reading Redis again. It uses a
// connection of its own (a Redis pub/sub connection carries nothing else).
//
// On a Redis Cluster the channel is a shard channel of the slot of the
// item's keys. When that slot moves to another primary (a resharding, a
// failover), the old primary ends the subscription itself with an
// `sunsubscribe` and announces nothing more, and go-redis does not
// subscribe again (the connection is still up). Next then subscribes anew
// on the slot's primary and reports a gap; before, it only reported the
// gap, and every long poll on the slot waited out its full time.
type StatusSubscription struct {
	rdb redis.UniversalClient
	ch  string

	// lost is the subscription the server ended, to be replaced by the
	// next Next (only Next's goroutine touches it).
	lost *redis.PubSub

	mu     sync.Mutex
	ps     *redis.PubSub
	closed bool
}

// statusIdle is how long Next waits for a message before it pings: a
// connection that died silently is noticed within about this long, and the
// reconnect is reported as a gap.
const statusIdle = 15 * time.Second

// resubscribePause is the wait between attempts to subscribe again after
// the server ended the subscription (its slot moved): the slot map may
// still name the old primary, which answers MOVED, until it is reloaded.
const resubscribePause = 50 * time.Millisecond

// SubscribeStatuses subscribes to the status channel of bucket of item
// (SSUBSCRIBE, on the shard of the bucket's keys) and returns once Redis
// confirmed it: every status of a request of that bucket stored after that
// is announced to it.
func (s *Store) SubscribeStatuses(ctx context.Context, itemID int64, bucket int) (*StatusSubscription, error) {
	ss := &StatusSubscription{rdb: s.st.Client(), ch: stock.BucketKeys(itemID, bucket).StatusChannel()}
	ps, err := ss.subscribe(ctx)
	if err != nil {
		return nil, stock.Unavailable("orderstatus: subscribe statuses", err)
	}
	ss.ps = ps
	return ss, nil
}

// subscribe opens a subscription to ss.ch and waits for Redis' confirmation.
func (ss *StatusSubscription) subscribe(ctx context.Context) (*redis.PubSub, error) {
	ps := ss.rdb.SSubscribe(ctx, ss.ch)
	msg, err := ps.Receive(ctx)
	if err != nil {
		_ = ps.Close()
		return nil, err
	}
	if _, ok := msg.(*redis.Subscription); !ok {
		_ = ps.Close()
		return nil, fmt.Errorf("unexpected first message %T", msg)
	}
	return ps, nil
}

// Announcement is one message of a status channel: the request whose status
// was stored and, from status_put.lua, that status as cached ("rank|JSON",
// parsed by cachedView). Status is nil when the message carries only the
// request id: the pay's in-doubt marker (status_mark.lua), whose truth is
// in MySQL, or a message of a writer older than the status in messages.
// Either way the waiter reads the status again.
type Announcement struct {
	RequestID string
	Status    []byte
}

// parseAnnouncement splits a channel message: "request-id cached-status"
// or a bare request id (request ids hold no space).
func parseAnnouncement(payload string) Announcement {
	rid, status, ok := strings.Cut(payload, " ")
	if !ok {
		return Announcement{RequestID: payload}
	}
	return Announcement{RequestID: rid, Status: []byte(status)}
}

// Next blocks until the next announcement and returns it. gap is true (and
// the announcement empty) when announcements may have been missed:
// the connection failed or was re-established, or the subscription moved
// with its slot, so every waiter must look again. err is returned only
// once the subscription is closed. One goroutine calls Next at a time.
func (ss *StatusSubscription) Next(ctx context.Context) (a Announcement, gap bool, err error) {
	if ss.lost != nil {
		// Subscribed again only now, so the gap was reported at once:
		// what was published in between is lost, another gap.
		old := ss.lost
		ss.lost = nil
		if err := ss.resubscribe(ctx, old); err != nil {
			return Announcement{}, false, err
		}
		return Announcement{}, true, nil
	}
	for {
		ps, err := ss.current()
		if err != nil {
			return Announcement{}, false, err
		}
		msg, err := ps.ReceiveTimeout(ctx, statusIdle)
		switch m := msg.(type) {
		case *redis.Message:
			return parseAnnouncement(m.Payload), false, nil
		case *redis.Subscription:
			if m.Kind == "sunsubscribe" {
				// The server ended it (the slot moved): the next call
				// subscribes again.
				ss.lost = ps
			}
			// Else a re-subscription after a reconnect: whatever was
			// published while the connection was down is lost.
			return Announcement{}, true, nil
		case *redis.Pong:
			continue
		}
		if err == nil {
			continue
		}
		if errors.Is(err, redis.ErrClosed) || ctx.Err() != nil {
			return Announcement{}, false, fmt.Errorf("orderstatus: status subscription: %w", err)
		}
		var nerr interface{ Timeout() bool }
		if errors.As(err, &nerr) && nerr.Timeout() {
			// Idle: ping, so a dead connection fails (and reconnects) soon.
			if perr := ps.Ping(ctx); perr == nil {
				continue
			}
		}
		// A failed read: go-redis reconnects and re-subscribes on the next
		// receive; report the gap now and back off a little.
		select {
		case <-time.After(100 * time.Millisecond):
		case <-ctx.Done():
		}
		return Announcement{}, true, nil
	}
}

func (ss *StatusSubscription) current() (*redis.PubSub, error) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.closed {
		return nil, fmt.Errorf("orderstatus: status subscription: %w", redis.ErrClosed)
	}
	return ss.ps, nil
}

// resubscribe replaces old, which the server unsubscribed, by a new
// subscription on the channel's current primary, trying until it is
// confirmed, ctx ends or the subscription is closed.
func (ss *StatusSubscription) resubscribe(ctx context.Context, old *redis.PubSub) error {
	_ = old.Close()
	for {
		if cc, ok := ss.rdb.(*redis.ClusterClient); ok {
			cc.ReloadState(ctx) // lazy: a MOVED below retries after it
		}
		ps, err := ss.subscribe(ctx)
		ss.mu.Lock()
		switch {
		case ss.closed:
			ss.mu.Unlock()
			if ps != nil {
				_ = ps.Close()
			}
			return fmt.Errorf("orderstatus: status subscription: %w", redis.ErrClosed)
		case err == nil:
			ss.ps = ps
			ss.mu.Unlock()
			return nil
		}
		ss.mu.Unlock()
		select {
		case <-time.After(resubscribePause):
		case <-ctx.Done():
			return fmt.Errorf("orderstatus: status subscription: subscribe again: %w (%w)", ctx.Err(), err)
		}
	}
}

// Close ends the subscription and its connection; a Next waiting returns.
func (ss *StatusSubscription) Close() error {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.closed = true
	return ss.ps.Close()
}
