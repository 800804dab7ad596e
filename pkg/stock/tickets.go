package stock

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

var ticketTakeScript = mustScript("ticket_take.lua")

// QueueKeys names the Redis keys of an item's waiting room. They carry the
// item's bucket 0 hash tag, next to its meta, so one script sees both.
type QueueKeys struct {
	ByUser   string // hash: user id -> "ticket:arrival:taken_ms"
	ByTicket string // hash: ticket id -> "user:arrival:taken_ms"
	Arrivals string // string: the number of tickets taken
	Meta     string // the item's meta (bucket 0)
	Gate     string // hash: serving (positions admitted), last_ms (pkg/gate)
	// Waitlist is a hash: the released units held for the waitlist (pool),
	// the serving position of the last ticket considered for one (cursor),
	// and counts of units (in, offered, claimed, lapsed, returned); Offers
	// a hash of the live offers, user id -> "ticket:position:expires_ms"
	// (waitlist.go). Claims is a hash of the reservations that claimed an
	// offer, request id -> the offer, so a claim released (its order not
	// taken) goes back to its offer or the pool, not to the stock.
	Waitlist string
	Offers   string
	Claims   string
}

// QueueKeysOf returns item id's waiting room keys.
func QueueKeysOf(id int64) QueueKeys {
	p := bucketPrefix(id, 0)
	return QueueKeys{ByUser: p + "qu", ByTicket: p + "qt", Arrivals: p + "qn", Meta: p + "meta", Gate: p + "qg",
		Waitlist: p + "qw", Offers: p + "qo", Claims: p + "qc"}
}

// Ticket is one buyer's place in an item's waiting room.
type Ticket struct {
	ID      string
	UserID  int64
	Arrival int64 // 1 for the item's first ticket
	TakenAt time.Time
}

// TakeTicket gives user a ticket of item itemID's waiting room: the ticket
// the user already holds (created false), or a new one of id fresh (created
// true) when the queue is open (Redis' clock at or after opensAt, before the
// sale's end) and soldOut is false. Errors: ErrQueueNotOpen, ErrQueueEnded,
// ErrQueueSoldOut, ErrQueueNotWarmed, ErrUnavailable.
func (s *Store) TakeTicket(ctx context.Context, itemID, userID int64, fresh string, opensAt time.Time, soldOut bool) (Ticket, bool, error) {
	k := QueueKeysOf(itemID)
	res, err := s.run(ctx, ticketTakeScript, []string{k.ByUser, k.ByTicket, k.Arrivals, k.Meta},
		userID, fresh, opensAt.UnixMilli(), flag(soldOut)).StringSlice()
	if err != nil {
		return Ticket{}, false, unavailable("stock: take ticket", err)
	}
	switch {
	case len(res) == 2 && (res[0] == "have" || res[0] == "new"):
		id, rest, _ := strings.Cut(res[1], ":")
		t, err := parseTicket(rest)
		if err != nil {
			return Ticket{}, false, fmt.Errorf("stock: take ticket of item %d: %w", itemID, err)
		}
		t.ID, t.UserID = id, userID
		return t, res[0] == "new", nil
	case len(res) == 1 && res[0] == "not_open":
		return Ticket{}, false, ErrQueueNotOpen
	case len(res) == 1 && res[0] == "ended":
		return Ticket{}, false, ErrQueueEnded
	case len(res) == 1 && res[0] == "sold_out":
		return Ticket{}, false, ErrQueueSoldOut
	case len(res) == 1 && res[0] == "unknown":
		return Ticket{}, false, ErrQueueNotWarmed
	}
	return Ticket{}, false, fmt.Errorf("stock: take ticket: unexpected reply %v", res)
}

// TicketByID reads one ticket of item itemID; found false when there is none.
func (s *Store) TicketByID(ctx context.Context, itemID int64, ticketID string) (Ticket, bool, error) {
	v, err := s.rdb.HGet(ctx, QueueKeysOf(itemID).ByTicket, ticketID).Result()
	if errors.Is(err, redis.Nil) {
		return Ticket{}, false, nil
	}
	if err != nil {
		return Ticket{}, false, unavailable("stock: read ticket", err)
	}
	user, rest, _ := strings.Cut(v, ":")
	t, err := parseTicket(rest)
	if err != nil {
		return Ticket{}, false, fmt.Errorf("stock: ticket %s of item %d: %w", ticketID, itemID, err)
	}
	if t.UserID, err = strconv.ParseInt(user, 10, 64); err != nil {
		return Ticket{}, false, fmt.Errorf("stock: ticket %s of item %d: user %q", ticketID, itemID, user)
	}
	t.ID = ticketID
	return t, true, nil
}

// Tickets reads every ticket of item itemID (the shuffle's input), in no
// particular order.
func (s *Store) Tickets(ctx context.Context, itemID int64) ([]Ticket, error) {
	m, err := s.rdb.HGetAll(ctx, QueueKeysOf(itemID).ByTicket).Result()
	if err != nil {
		return nil, unavailable("stock: read tickets", err)
	}
	out := make([]Ticket, 0, len(m))
	for id, v := range m {
		user, rest, _ := strings.Cut(v, ":")
		t, err := parseTicket(rest)
		if err != nil {
			return nil, fmt.Errorf("stock: ticket %s of item %d: %w", id, itemID, err)
		}
		if t.UserID, err = strconv.ParseInt(user, 10, 64); err != nil {
			return nil, fmt.Errorf("stock: ticket %s of item %d: user %q", id, itemID, user)
		}
		t.ID = id
		out = append(out, t)
	}
	return out, nil
}

// parseTicket reads "arrival:taken_ms".
func parseTicket(v string) (Ticket, error) {
	a, ms, ok := strings.Cut(v, ":")
	arrival, err1 := strconv.ParseInt(a, 10, 64)
	taken, err2 := strconv.ParseInt(ms, 10, 64)
	if !ok || err1 != nil || err2 != nil {
		return Ticket{}, fmt.Errorf("malformed ticket %q", v)
	}
	return Ticket{Arrival: arrival, TakenAt: time.UnixMilli(taken).UTC()}, nil
}
