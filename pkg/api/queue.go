package api

import "time"

// Ticket is a buyer's ticket of an item's waiting room as taking it
// answers (schema Ticket, POST /api/v1/items/{id}/queue): its id (the
// buyer's to keep: with the arrival number it is what the buyer checks the
// transcript with), its arrival number and the commitment it was taken
// under.
type Ticket struct {
	Ticket          string    `json:"ticket"`
	ItemID          int64     `json:"item_id"`
	Arrival         int64     `json:"arrival"`
	TakenAt         time.Time `json:"taken_at"`
	QueueCommitment string    `json:"queue_commitment"`
}

// The states of a ticket (TicketStatus.State).
const (
	TicketWaiting  = "waiting"
	TicketAdmitted = "admitted"
	TicketSoldOut  = "sold_out"
	TicketExpired  = "expired"
	// TicketOffered: the item sold out, and the waitlist holds a released
	// unit for this ticket's buyer until grant_expires_at; the order sends
	// the offer's admission_grant.
	TicketOffered = "offered"
)

// TicketStatus is a ticket's state as its buyer reads it (schema
// TicketStatus, GET /api/v1/items/{id}/queue/{ticket}).
type TicketStatus struct {
	Ticket  string `json:"ticket"`
	ItemID  int64  `json:"item_id"`
	Arrival int64  `json:"arrival"`
	State   string `json:"state"`
	// Position is the ticket's place in the serving order (1 first) and
	// Ahead the tickets before it; both absent before starts_at, when the
	// order is not drawn yet.
	Position *int64 `json:"position,omitempty"`
	Ahead    *int64 `json:"ahead,omitempty"`
	// ServingPosition is how many positions the gate has admitted (from
	// starts_at on): the ticket is admitted once it reaches Position.
	ServingPosition *int64 `json:"serving_position,omitempty"`
	// EstimatedWaitMs is how long until the ticket is admitted: until
	// starts_at before it, then the positions before it still to admit at
	// the item's queue_rate; 0 once admitted; absent when it will not be
	// (sold out, expired).
	EstimatedWaitMs *int64    `json:"estimated_wait_ms,omitempty"`
	StockLeft       int64     `json:"stock_left"`
	ShuffleAt       time.Time `json:"shuffle_at"`
	// AdmissionGrant, with GrantExpiresAt, is what an admitted ticket's
	// (or a waitlist offer's) order sends; every read hands out a fresh one.
	AdmissionGrant string     `json:"admission_grant,omitempty"`
	GrantExpiresAt *time.Time `json:"grant_expires_at,omitempty"`
}

// AdminQueue is an operator's view of one item's waiting room (schema
// AdminQueue, GET /api/v1/admin/items/{id}/queue).
type AdminQueue struct {
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
	// Waitlist is the hand-off of released units: what it holds now and
	// what it did, in units.
	Waitlist Waitlist `json:"waitlist"`
}
