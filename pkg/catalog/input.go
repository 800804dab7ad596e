package catalog

import (
	"context"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/flashsale-dev/flashsale/pkg/store"
)

// Input is an item as an admin writes it (schema ItemInput of
// ingress/openapi.yaml): the body of a PUT (every field but buckets
// required) and, merged onto the stored item, of a PATCH. Both are checked
// by the same Validate.
type Input struct {
	Name         *string    `json:"name"`
	PriceCents   *int64     `json:"price_cents"`
	Stock        *int64     `json:"stock"`
	PerUserLimit *int       `json:"per_user_limit"`
	StartsAt     *time.Time `json:"starts_at"`
	EndsAt       *time.Time `json:"ends_at"`
	// Buckets is optional: a new item gets 1, an existing one keeps its
	// count.
	Buckets *int `json:"buckets"`
	// Queue is optional (a new item gets none, an existing one keeps its
	// own); QueueOpensAt is required with queue true, at or before
	// starts_at, and ignored without it. QueueRate, the tickets a second the
	// gate admits, is optional with queue true (defaultQueueRate) and may
	// change during the sale: it is the operator's throttle.
	// QueueShuffleWindowMs is how long after starts_at arrivals are still
	// drawn (defaultShuffleWindowMs with queue true), in rounds of
	// QueueRoundMs (the whole window unless said); neither may change once
	// the queue opened.
	Queue                *bool      `json:"queue"`
	QueueOpensAt         *time.Time `json:"queue_opens_at"`
	QueueRate            *int       `json:"queue_rate"`
	QueueShuffleWindowMs *int       `json:"queue_shuffle_window_ms"`
	QueueRoundMs         *int       `json:"queue_round_ms"`
}

// Bounds of admin input: the stock columns are INT.
const (
	maxStock        = 1_000_000_000
	maxPerUserLimit = 1000

	// A queue's admissions per second: 100 unless the admin says.
	defaultQueueRate = 100
	maxQueueRate     = 100_000

	// The shuffle window after starts_at (docs/fairness.md): arrivals in
	// it are drawn, in rounds, instead of served first come. 10 s holds
	// the late arrivals of the bench's spread model (-2 s to +8 s around
	// the start, BENCHMARKS.md); at most 10 minutes; rounds of at least a
	// second.
	defaultShuffleWindowMs = 10_000
	maxShuffleWindowMs     = 600_000
	minRoundMs             = 1000
)

// Years a sale time may be written with (ingress/openapi.yaml's SaleTime).
// Any offset keeps such a time inside what DATETIME(3) and a JSON answer can
// hold once it is turned into UTC; year 9999 or 10000 in UTC would be a 503
// from MySQL or a 500 from the encoder instead of a 400.
const (
	minSaleYear = 1970
	maxSaleYear = 9998
)

// saleYear reports whether t's year, in the offset it was written with, is
// one a sale time may have.
func saleYear(t time.Time) bool { return t.Year() >= minSaleYear && t.Year() <= maxSaleYear }

// InvalidError is an Input its own rules refuse, whatever is stored: Code
// names the rule (the answer's error code), Message says what is allowed.
type InvalidError struct{ Code, Message string }

func (e *InvalidError) Error() string { return e.Code + ": " + e.Message }

func invalid(code, msg string) error { return &InvalidError{Code: code, Message: msg} }

// Validate checks b and makes it the item id, with at most maxBuckets
// buckets (FLASHSALE_MAX_BUCKETS): an *InvalidError names the first rule b
// breaks.
func (b Input) Validate(id int64, maxBuckets int) (store.Item, error) {
	switch {
	case b.Buckets != nil && (*b.Buckets < 1 || *b.Buckets > maxBuckets):
		return store.Item{}, invalid("invalid_buckets", fmt.Sprintf("buckets must be an integer from 1 to %d", maxBuckets))
	case b.Name == nil || *b.Name == "" || utf8.RuneCountInString(*b.Name) > 200:
		return store.Item{}, invalid("invalid_name", "name must be 1 to 200 characters")
	case b.PriceCents == nil || *b.PriceCents < 0:
		return store.Item{}, invalid("invalid_price", "price_cents must be an integer >= 0")
	case b.Stock == nil || *b.Stock < 0 || *b.Stock > maxStock:
		return store.Item{}, invalid("invalid_stock", "stock must be an integer from 0 to 1000000000")
	case b.PerUserLimit == nil || *b.PerUserLimit < 1 || *b.PerUserLimit > maxPerUserLimit:
		return store.Item{}, invalid("invalid_per_user_limit", "per_user_limit must be an integer from 1 to 1000")
	case b.StartsAt == nil || b.EndsAt == nil || !b.StartsAt.Before(*b.EndsAt) || !saleYear(*b.StartsAt) || !saleYear(*b.EndsAt):
		return store.Item{}, invalid("invalid_window", "starts_at and ends_at are RFC 3339 times of the years 1970 to 9998 with starts_at before ends_at")
	case b.Queue != nil && *b.Queue && (b.QueueOpensAt == nil || !saleYear(*b.QueueOpensAt) || b.QueueOpensAt.After(*b.StartsAt)):
		return store.Item{}, invalid("invalid_queue", "with queue true, queue_opens_at is an RFC 3339 time of the years 1970 to 9998 at or before starts_at")
	case b.QueueRate != nil && (*b.QueueRate < 1 || *b.QueueRate > maxQueueRate):
		return store.Item{}, invalid("invalid_queue_rate", fmt.Sprintf("queue_rate must be an integer from 1 to %d admissions a second", maxQueueRate))
	case b.QueueShuffleWindowMs != nil && (*b.QueueShuffleWindowMs < 0 || *b.QueueShuffleWindowMs > maxShuffleWindowMs):
		return store.Item{}, invalid("invalid_queue_shuffle_window", fmt.Sprintf("queue_shuffle_window_ms must be an integer from 0 to %d", maxShuffleWindowMs))
	case b.QueueRoundMs != nil && (*b.QueueRoundMs < minRoundMs || *b.QueueRoundMs > maxShuffleWindowMs):
		return store.Item{}, invalid("invalid_queue_round", fmt.Sprintf("queue_round_ms must be an integer from %d to %d", minRoundMs, maxShuffleWindowMs))
	}
	it := store.Item{ID: id, Name: *b.Name, PriceCents: *b.PriceCents, TotalStock: *b.Stock,
		PerUserLimit: *b.PerUserLimit, StartsAt: b.StartsAt.UTC(), EndsAt: b.EndsAt.UTC()}
	if b.Buckets != nil {
		it.Buckets = *b.Buckets
	}
	if b.Queue != nil && *b.Queue {
		it.Queue, it.QueueOpensAt, it.QueueRate = true, b.QueueOpensAt.UTC(), defaultQueueRate
		if b.QueueRate != nil {
			it.QueueRate = *b.QueueRate
		}
		window := defaultShuffleWindowMs
		if b.QueueShuffleWindowMs != nil {
			window = *b.QueueShuffleWindowMs
		}
		round := window
		if b.QueueRoundMs != nil && window > 0 {
			round = min(*b.QueueRoundMs, window)
		}
		it.QueueShuffleWindow, it.QueueRound = time.Duration(window)*time.Millisecond, time.Duration(round)*time.Millisecond
	}
	return it, nil
}

// QueueKeptError refuses a body that says nothing of the queue but moves
// starts_at before the opening of the queue the item keeps: the body is
// valid alone, the conflict is with the stored state (a 409 queue_kept
// naming the kept opening: a 400 would blame a request that an outside
// client, reading only the schema, built right).
type QueueKeptError struct{ OpensAt, StartsAt time.Time }

func (e *QueueKeptError) Error() string {
	return fmt.Sprintf("the item keeps its queue, which opens at %s, after the starts_at asked for (%s); send queue false, or a queue_opens_at at or before starts_at, with it",
		e.OpensAt.UTC().Format(time.RFC3339Nano), e.StartsAt.UTC().Format(time.RFC3339Nano))
}

// queueKeptConflict is the QueueKeptError of a body with startsAt and no
// word of the queue, for the stored item cur; nil when there is no
// conflict.
func queueKeptConflict(cur store.Item, startsAt time.Time) error {
	if !cur.Queue || !cur.QueueOpensAt.After(startsAt) {
		return nil
	}
	return &QueueKeptError{OpensAt: cur.QueueOpensAt, StartsAt: startsAt}
}

// InputKinds is the JSON type each Input field must have
// (ingress/openapi.yaml): none is nullable, so a decoder that checks them
// refuses a null the struct decode would take for "not sent".
var InputKinds = map[string]string{
	"name": "string", "price_cents": "integer", "stock": "integer", "per_user_limit": "integer",
	"starts_at": "string", "ends_at": "string", "buckets": "integer",
	"queue": "boolean", "queue_opens_at": "string", "queue_rate": "integer",
	"queue_shuffle_window_ms": "integer", "queue_round_ms": "integer",
}

// inputOf is a stored item as a complete PUT body, with buckets left out (a
// PATCH that does not name it keeps the count, even one above today's
// FLASHSALE_MAX_BUCKETS).
func inputOf(it store.Item) Input {
	name, price, total, limit := it.Name, it.PriceCents, it.TotalStock, it.PerUserLimit
	starts, ends := it.StartsAt.UTC(), it.EndsAt.UTC()
	b := Input{Name: &name, PriceCents: &price, Stock: &total, PerUserLimit: &limit, StartsAt: &starts, EndsAt: &ends}
	if it.Queue {
		q, opens, rate := true, it.QueueOpensAt.UTC(), it.QueueRate
		window, round := int(it.QueueShuffleWindow.Milliseconds()), int(it.QueueRound.Milliseconds())
		b.Queue, b.QueueOpensAt, b.QueueRate = &q, &opens, &rate
		b.QueueShuffleWindowMs = &window
		// A round as long as the window is what a body without
		// queue_round_ms asks for; named, a window under the shortest
		// round a body may ask for (minRoundMs) would refuse its own item.
		if round > 0 && round != window {
			b.QueueRoundMs = &round
		}
	}
	return b
}

// merge is the JSON merge patch (RFC 7386) p applied to b: every field p
// names replaces b's. A patch cannot remove a field (null is refused by its
// decoder, InputKinds), so "named" is "not nil".
func (b Input) merge(p Input) Input {
	if p.Name != nil {
		b.Name = p.Name
	}
	if p.PriceCents != nil {
		b.PriceCents = p.PriceCents
	}
	if p.Stock != nil {
		b.Stock = p.Stock
	}
	if p.PerUserLimit != nil {
		b.PerUserLimit = p.PerUserLimit
	}
	if p.StartsAt != nil {
		b.StartsAt = p.StartsAt
	}
	if p.EndsAt != nil {
		b.EndsAt = p.EndsAt
	}
	if p.Buckets != nil {
		b.Buckets = p.Buckets
	}
	if p.Queue != nil {
		b.Queue = p.Queue
	}
	if p.QueueOpensAt != nil {
		b.QueueOpensAt = p.QueueOpensAt
	}
	if p.QueueRate != nil {
		b.QueueRate = p.QueueRate
	}
	if p.QueueShuffleWindowMs != nil {
		b.QueueShuffleWindowMs = p.QueueShuffleWindowMs
	}
	if p.QueueRoundMs != nil {
		b.QueueRoundMs = p.QueueRoundMs
	}
	return b
}

// PutInput is Put of the item b describes (a PUT of item id): b is checked
// (Validate), and a b that leaves out the queue keeps the stored one, as it
// keeps the bucket count, checked again with it under the item's row lock
// (its opening must be at or before b's starts_at: QueueKeptError). The
// errors are Put's, and Validate's and QueueKeptError with nothing changed.
func (c *Catalog) PutInput(ctx context.Context, id int64, b Input, maxBuckets int) (store.Item, error) {
	in, err := b.Validate(id, maxBuckets)
	if err != nil {
		return store.Item{}, err
	}
	if b.Queue != nil {
		return c.Put(ctx, in)
	}
	return c.put(ctx, id, func(cur store.Item, found bool) (store.Item, error) {
		if !found || !cur.Queue {
			return in, nil
		}
		if err := queueKeptConflict(cur, *b.StartsAt); err != nil {
			return store.Item{}, err
		}
		return keepQueue(b, cur).Validate(id, maxBuckets)
	})
}

// keepQueue is b, a body that says nothing of the queue, with the queue of
// the stored item cur kept: its opening, and its rate and rounds where b
// does not name them, as inputOf names them (a round as long as the window
// left out, so a window under minRoundMs does not refuse its own item).
func keepQueue(b Input, cur store.Item) Input {
	stored := inputOf(cur)
	b.Queue, b.QueueOpensAt = stored.Queue, stored.QueueOpensAt
	if b.QueueRate == nil {
		b.QueueRate = stored.QueueRate
	}
	if b.QueueShuffleWindowMs == nil {
		b.QueueShuffleWindowMs = stored.QueueShuffleWindowMs
	}
	if b.QueueRoundMs == nil {
		b.QueueRoundMs = stored.QueueRoundMs
	}
	return b
}

// PatchInput is Put of the item that the JSON merge patch (RFC 7386) p makes
// of item id as stored, read under its row lock (so two patches of one item
// never lose one another's change) and checked by PUT's Validate once
// merged. A p that moves starts_at and says nothing of the queue is held to
// the queue the item keeps (QueueKeptError). The errors are Put's, Validate's
// and QueueKeptError with nothing changed, and store.ErrNotFound for an
// unknown item.
func (c *Catalog) PatchInput(ctx context.Context, id int64, p Input, maxBuckets int) (store.Item, error) {
	return c.put(ctx, id, func(cur store.Item, found bool) (store.Item, error) {
		if !found {
			return store.Item{}, fmt.Errorf("catalog: patch item %d: %w", id, store.ErrNotFound)
		}
		if p.Queue == nil && p.QueueOpensAt == nil && p.StartsAt != nil {
			if err := queueKeptConflict(cur, *p.StartsAt); err != nil {
				return store.Item{}, err
			}
		}
		return inputOf(cur).merge(p).Validate(id, maxBuckets)
	})
}
