package waitroom

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flashsale-dev/flashsale/pkg/stock"
)

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
// sale's end) and soldOut is false. Errors: ErrNotOpen, ErrEnded,
// ErrSoldOut, ErrNotWarmed, ErrUnavailable.
func (s *Store) TakeTicket(ctx context.Context, itemID, userID int64, fresh string, opensAt time.Time, soldOut bool) (Ticket, bool, error) {
	k := stock.QueueKeysOf(itemID)
	res, err := s.eval(ctx, ticketTakeScript, []string{k.ByUser, k.ByTicket, k.Arrivals, k.Meta},
		userID, fresh, opensAt.UnixMilli(), flag(soldOut)).StringSlice()
	if err != nil {
		return Ticket{}, false, unavailable("waitroom: take ticket", err)
	}
	switch {
	case len(res) == 2 && (res[0] == "have" || res[0] == "new"):
		id, rest, _ := strings.Cut(res[1], ":")
		t, err := parseTicket(rest)
		if err != nil {
			return Ticket{}, false, fmt.Errorf("waitroom: take ticket of item %d: %w", itemID, err)
		}
		t.ID, t.UserID = id, userID
		return t, res[0] == "new", nil
	case len(res) == 1 && res[0] == "not_open":
		return Ticket{}, false, ErrNotOpen
	case len(res) == 1 && res[0] == "ended":
		return Ticket{}, false, ErrEnded
	case len(res) == 1 && res[0] == "sold_out":
		return Ticket{}, false, ErrSoldOut
	case len(res) == 1 && res[0] == "unknown":
		return Ticket{}, false, ErrNotWarmed
	}
	return Ticket{}, false, fmt.Errorf("waitroom: take ticket: unexpected reply %v", res)
}

// TicketByID reads one ticket of item itemID; found false when there is none.
func (s *Store) TicketByID(ctx context.Context, itemID int64, ticketID string) (Ticket, bool, error) {
	v, err := s.client().HGet(ctx, stock.QueueKeysOf(itemID).ByTicket, ticketID).Result()
	if errors.Is(err, redis.Nil) {
		return Ticket{}, false, nil
	}
	if err != nil {
		return Ticket{}, false, unavailable("waitroom: read ticket", err)
	}
	user, rest, _ := strings.Cut(v, ":")
	t, err := parseTicket(rest)
	if err != nil {
		return Ticket{}, false, fmt.Errorf("waitroom: ticket %s of item %d: %w", ticketID, itemID, err)
	}
	if t.UserID, err = strconv.ParseInt(user, 10, 64); err != nil {
		return Ticket{}, false, fmt.Errorf("waitroom: ticket %s of item %d: user %q", ticketID, itemID, user)
	}
	t.ID = ticketID
	return t, true, nil
}

// Tickets reads every ticket of item itemID (the shuffle's input), in no
// particular order.
func (s *Store) Tickets(ctx context.Context, itemID int64) ([]Ticket, error) {
	m, err := s.client().HGetAll(ctx, stock.QueueKeysOf(itemID).ByTicket).Result()
	if err != nil {
		return nil, unavailable("waitroom: read tickets", err)
	}
	out := make([]Ticket, 0, len(m))
	for id, v := range m {
		user, rest, _ := strings.Cut(v, ":")
		t, err := parseTicket(rest)
		if err != nil {
			return nil, fmt.Errorf("waitroom: ticket %s of item %d: %w", id, itemID, err)
		}
		if t.UserID, err = strconv.ParseInt(user, 10, 64); err != nil {
			return nil, fmt.Errorf("waitroom: ticket %s of item %d: user %q", id, itemID, user)
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
