package api

import "time"

// ItemQueue is an item's waiting room as the buyer's and the admin's item
// show it (the queue properties of the schemas Item, AdminItem and
// AdminItemDetail): queue false and nothing else for an item without one.
// The seed is never here; it is shown from starts_at on, by the transcript.
type ItemQueue struct {
	Queue           bool       `json:"queue"`
	QueueOpensAt    *time.Time `json:"queue_opens_at,omitempty"`
	QueueCommitment string     `json:"queue_commitment,omitempty"`
	QueueRate       int        `json:"queue_rate,omitempty"`
	// QueueShuffleWindowMs and QueueRoundMs: arrivals up to this long after
	// starts_at are drawn too, in rounds of QueueRoundMs (absent: 0, only
	// the tickets taken before the start are).
	QueueShuffleWindowMs int64 `json:"queue_shuffle_window_ms,omitempty"`
	QueueRoundMs         int64 `json:"queue_round_ms,omitempty"`
}

// Item is an item as a buyer reads it (schema Item, GET
// /api/v1/items/{id}): its description and the stock Redis may still admit.
type Item struct {
	ID         int64     `json:"id"`
	Name       string    `json:"name"`
	PriceCents int64     `json:"price_cents"`
	StockLeft  int64     `json:"stock_left"`
	StartsAt   time.Time `json:"starts_at"`
	EndsAt     time.Time `json:"ends_at"`
	ItemQueue
}

// AdminItem is an item as an admin reads it (schema AdminItem): every
// stored field, and the sale's state by the ingress's clock.
type AdminItem struct {
	ID           int64     `json:"id"`
	Name         string    `json:"name"`
	PriceCents   int64     `json:"price_cents"`
	TotalStock   int64     `json:"total_stock"`
	Stock        int64     `json:"stock"`
	PerUserLimit int       `json:"per_user_limit"`
	StartsAt     time.Time `json:"starts_at"`
	EndsAt       time.Time `json:"ends_at"`
	Buckets      int       `json:"buckets"`
	State        string    `json:"state"`
	ItemQueue
}

// AdminItemDetail is one item for GET /api/v1/admin/items/{id} (schema
// AdminItemDetail) and the live view: the stored fields and what Redis
// holds of it (absent when Redis did not answer: the MySQL view is still
// worth an operator's eye then).
type AdminItemDetail struct {
	AdminItem
	RedisWarmed *bool  `json:"redis_warmed,omitempty"`
	RedisStock  *int64 `json:"redis_stock,omitempty"`
}

// ItemPage is a page of the admin's item list (schema ItemPage, GET
// /api/v1/admin/items).
type ItemPage struct {
	Items []AdminItem `json:"items"`
	// NextAfter is the after of the next page, absent on the last one.
	NextAfter *int64 `json:"next_after,omitempty"`
}
