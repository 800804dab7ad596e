package store

import (
	"database/sql"
	"time"
)

// ItemQueue is an item's waiting room as its item_queues row (pkg/waitroom's
// table, queue_sql.go) holds it, read by the join of the item's own row
// (QueueCols from ItemsFrom). Both Item and waitroom.Item carry it, so its
// columns are listed and scanned in this one place (QueueRow); waitroom.Item
// says what each field means. Queue is false, and the others zero, without
// one.
type ItemQueue struct {
	Queue              bool
	QueueOpensAt       time.Time
	QueueCommitment    string
	QueueRate          int
	QueueShuffleWindow time.Duration
	QueueRound         time.Duration
}

// QueueCols are ItemQueue's columns, from ItemsFrom's join: NULL for an item
// without a queue. A read scans them, in this order, into a QueueRow.
const QueueCols = "q.opens_at, q.commitment, q.rate, q.shuffle_window_ms, q.round_ms"

// ItemsFrom is what an item's columns and QueueCols are read from: the item
// and its queue's row, in one join (the primary key on both sides), rather
// than a subquery per column.
const ItemsFrom = "items LEFT JOIN item_queues q ON q.item_id = items.id"

// QueueRow is where a read scans QueueCols (Dest), NULL or not; Queue is the
// ItemQueue they held.
type QueueRow struct {
	opens               sql.NullTime
	commitment          sql.NullString
	rate, window, round sql.NullInt64
}

// Dest is the scan destinations of QueueCols, in their order.
func (r *QueueRow) Dest() []any {
	return []any{&r.opens, &r.commitment, &r.rate, &r.window, &r.round}
}

// Queue is the waiting room the scanned columns held: none (the zero
// ItemQueue) when the join found no row, or a row without its opening or
// commitment.
func (r *QueueRow) Queue() ItemQueue {
	if !r.opens.Valid || !r.commitment.Valid {
		return ItemQueue{}
	}
	return ItemQueue{Queue: true, QueueOpensAt: r.opens.Time, QueueCommitment: r.commitment.String, QueueRate: int(r.rate.Int64),
		QueueShuffleWindow: time.Duration(r.window.Int64) * time.Millisecond, QueueRound: time.Duration(r.round.Int64) * time.Millisecond}
}
