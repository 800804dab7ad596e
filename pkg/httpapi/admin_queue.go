package httpapi

import (
	"context"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/flashsale-dev/flashsale/pkg/audit"
	"github.com/flashsale-dev/flashsale/pkg/lease"
	"github.com/flashsale-dev/flashsale/pkg/waitroom"
)

// adminQueue is GET /api/v1/admin/items/{id}/queue's answer (AdminQueue in
// ingress/openapi.yaml): an operator's view of one item's waiting room.
type adminQueue struct {
	ItemID     int64     `json:"item_id"`
	OpensAt    time.Time `json:"opens_at"`
	StartsAt   time.Time `json:"starts_at"`
	Commitment string    `json:"commitment"`
	Rate       int       `json:"rate"`
	Tickets    int64     `json:"tickets"`
	// Serving is the gate's serving position (0 before starts_at), Waiting
	// the tickets beyond it.
	Serving int64 `json:"serving_position"`
	Waiting int64 `json:"waiting"`
	// GateHolder is the reaper replica holding the gate now, nil when none
	// does (no reaper runs the gate: nobody is being admitted).
	GateHolder *string `json:"gate_holder"`
	// Waitlist is the hand-off of released units (pkg/waitroom waitlist.go):
	// what it holds now and what it did, in units.
	Waitlist audit.Waitlist `json:"waitlist"`
}

// getAdminQueue is GET /api/v1/admin/items/{id}/queue.
func (s *Server) getAdminQueue(c echo.Context) error {
	it, err := s.queuedItem(c)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(c.Request().Context(), s.cfg.StoreTimeout)
	defer cancel()
	g, err := s.wr.ReadGate(ctx, it.ID)
	if err != nil {
		return unavailable("redis unavailable")
	}
	holder, err := lease.Current(ctx, s.st.Client(), waitroom.GateLeaseKey())
	if err != nil {
		return unavailable("redis unavailable")
	}
	w, err := s.wr.ReadWaitlist(ctx, it.ID)
	if err != nil {
		return unavailable("redis unavailable")
	}
	v := adminQueue{ItemID: it.ID, OpensAt: it.QueueOpensAt.UTC(), StartsAt: it.StartsAt.UTC(), Commitment: it.QueueCommitment,
		Rate: it.QueueRate, Tickets: g.Tickets, Serving: g.Serving, Waiting: max(g.Tickets-g.Serving, 0),
		Waitlist: audit.WaitlistOf(w)}
	if holder != "" {
		v.GateHolder = &holder
	}
	return c.JSON(http.StatusOK, v)
}
