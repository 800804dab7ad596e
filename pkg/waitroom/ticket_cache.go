package waitroom

import (
	"context"
	"sync"
)

// ticketCache keeps the tickets this replica has read. A ticket never
// changes once taken (ticket_take.lua writes it once and nothing rewrites
// it), so a poll that comes back need not read it from Redis again: during
// a queued sale every buyer polls their ticket many times, and each read
// saved is a Redis round trip off a machine that is also serving the
// orders. Bounded: past maxTickets it starts afresh, which costs one read
// per ticket again, never a wrong answer.
type ticketCache struct {
	mu sync.Mutex
	m  map[ticketKey]Ticket
}

type ticketKey struct {
	item int64
	id   string
}

const maxTickets = 200_000

func newTicketCache() *ticketCache { return &ticketCache{m: map[ticketKey]Ticket{}} }

// ticket reads ticket id of item, from memory when this replica read it
// before; found false for no such ticket (not remembered: a made-up id is
// a client's to send, and remembering misses would let it fill memory).
func (c *ticketCache) ticket(ctx context.Context, wr *Store, item int64, id string) (Ticket, bool, error) {
	k := ticketKey{item, id}
	c.mu.Lock()
	t, ok := c.m[k]
	c.mu.Unlock()
	if ok {
		return t, true, nil
	}
	t, found, err := wr.TicketByID(ctx, item, id)
	if err != nil || !found {
		return t, found, err
	}
	c.mu.Lock()
	if len(c.m) >= maxTickets {
		c.m = map[ticketKey]Ticket{}
	}
	c.m[k] = t
	c.mu.Unlock()
	return t, true, nil
}
