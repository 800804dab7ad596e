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
	// Receipt is the server's signature, by the deployment's Ed25519 key
	// (/.well-known/flashsale-receipt-key), of the item, the ticket's hash,
	// its arrival and TakenAt (docs/fairness.md): a buyer left out of the
	// transcript, or listed with another arrival, holds proof of it.
	Receipt string `json:"receipt"`
}

// InclusionProof shows a ticket is in the round it was drawn in: the
// Merkle audit path from its leaf (hash, arrival) to the round's root, the
// root published when the round closed (docs/fairness.md).
type InclusionProof struct {
	Round int      `json:"round"`
	Index int      `json:"index"`
	Size  int      `json:"size"`
	Root  string   `json:"root"`
	Path  []string `json:"path"`
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
	// EstimatedWaitMs is how long until the ticket is admitted, on
	// average: while its round is open, the time to the close plus the
	// wait for the middle of the round's tickets so far; then the
	// positions before it still to admit at the rate the gate is seen
	// admitting at (at most the item's queue_rate); 0 once admitted;
	// absent when it will not be (sold out, expired).
	EstimatedWaitMs *int64 `json:"estimated_wait_ms,omitempty"`
	// EstimatedAdmissionAt is the same estimate as a moment by the
	// server's clock, when the answer was made plus EstimatedWaitMs: a
	// page counting down to it is not misled by an answer that arrived
	// late. Present with EstimatedWaitMs while waiting.
	EstimatedAdmissionAt *time.Time `json:"estimated_admission_at,omitempty"`
	StockLeft            int64      `json:"stock_left"`
	ShuffleAt            time.Time  `json:"shuffle_at"`
	// AdmissionGrant, with GrantExpiresAt, is what an admitted ticket's
	// (or a waitlist offer's) order sends; every read hands out a fresh one.
	AdmissionGrant string     `json:"admission_grant,omitempty"`
	GrantExpiresAt *time.Time `json:"grant_expires_at,omitempty"`
	// Round is the round the ticket is drawn in (0: taken before the
	// start; absent: taken after the shuffle window, served in arrival
	// order), RoundClosesAt when that round's ticket set is final; until
	// then the ticket has no position. Proof, once the round is closed,
	// shows the ticket is in it.
	Round         *int            `json:"round,omitempty"`
	RoundClosesAt *time.Time      `json:"round_closes_at,omitempty"`
	Proof         *InclusionProof `json:"proof,omitempty"`
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

// ReceiptKey is the public key that signs ticket receipts (schema
// ReceiptKey, GET /.well-known/flashsale-receipt-key): Ed25519, the key's
// 32 bytes in hex, and its id (hex of the first 8 bytes of its SHA-256).
type ReceiptKey struct {
	Algorithm string `json:"algorithm"`
	KeyID     string `json:"key_id"`
	PublicKey string `json:"public_key"`
}
