package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/flashsale-dev/flashsale/internal/sqlrows"
)

// Outcome is the arbiter's decision for one admitted request.
type Outcome string

// The four outcomes. Exactly one row per request; the first insert wins.
const (
	Ordered  Outcome = "ORDERED"  // consumer wrote the order
	Rejected Outcome = "REJECTED" // consumer refused it (Reason says why)
	Aborted  Outcome = "ABORTED"  // ingress could not publish it
	Voided   Outcome = "VOIDED"   // reaper swept an orphaned reservation
)

// Reasons shown to buyers for non-ORDERED outcomes.
const (
	ReasonSoldOut            = "sold_out"
	ReasonDuplicateBuyer     = "duplicate_buyer"
	ReasonPublishFailed      = "publish_failed"
	ReasonExpiredReservation = "expired_reservation"
	// ReasonUnknownItem: the message's item does not exist in MySQL (Redis
	// knew an item MySQL never committed, or lost).
	ReasonUnknownItem = "unknown_item"
	// ReasonUnprocessable: the request kept failing with a permanent MySQL
	// error (store.IsPermanent) and was given up; its message is in the DLQ.
	ReasonUnprocessable = "unprocessable"
)

// Decision is one arbiter row.
type Decision struct {
	RequestID string
	ItemID    int64
	UserID    int64
	Qty       int
	Outcome   Outcome
	Reason    string // "" for ORDERED
	DecidedAt time.Time
}

// Decide inserts one decision (ABORTED by the ingress, VOIDED by the reaper).
// It returns won=true when this insert decided the request; otherwise the
// existing decision is returned and the caller must leave stock alone unless
// the existing decision says so.
func Decide(ctx context.Context, q Querier, d Decision) (won bool, existing Decision, err error) {
	_, err = q.ExecContext(ctx,
		"INSERT INTO request_outcomes (request_id, item_id, user_id, qty, outcome, reason) VALUES (?, ?, ?, ?, ?, ?)",
		d.RequestID, d.ItemID, d.UserID, d.Qty, string(d.Outcome), nullable(d.Reason))
	if err == nil {
		return true, d, nil
	}
	if !IsDuplicate(err) {
		return false, Decision{}, fmt.Errorf("store: decide %s: %w", d.RequestID, err)
	}
	existing, err = GetDecision(ctx, q, d.RequestID)
	if err != nil {
		return false, Decision{}, err
	}
	return false, existing, nil
}

const decisionCols = "request_id, item_id, user_id, qty, outcome, reason, decided_at"

func scanDecision(row interface{ Scan(...any) error }) (Decision, error) {
	var d Decision
	var outcome string
	var reason *string
	if err := row.Scan(&d.RequestID, &d.ItemID, &d.UserID, &d.Qty, &outcome, &reason, &d.DecidedAt); err != nil {
		return d, err
	}
	d.Outcome = Outcome(outcome)
	if reason != nil {
		d.Reason = *reason
	}
	return d, nil
}

// GetDecision reads the decision of one request; ErrNotFound if undecided.
func GetDecision(ctx context.Context, q Querier, requestID string) (Decision, error) {
	d, err := scanDecision(q.QueryRowContext(ctx, "SELECT "+decisionCols+" FROM request_outcomes WHERE request_id = ?", requestID))
	if err != nil {
		if isNoRows(err) {
			return d, ErrNotFound
		}
		return d, fmt.Errorf("store: get decision %s: %w", requestID, err)
	}
	return d, nil
}

// DecidedAmong returns the outcomes that already exist among ids.
func DecidedAmong(ctx context.Context, q Querier, ids []string) (map[string]Outcome, error) {
	ds, err := DecisionsAmong(ctx, q, ids)
	if err != nil {
		return nil, err
	}
	out := make(map[string]Outcome, len(ds))
	for id, d := range ds {
		out[id] = d.Outcome
	}
	return out, nil
}

// DecisionsAmong returns the full decisions that already exist among ids.
// Unlike DecidedAmong it carries user, qty and reason, which the writer needs
// to replay the Redis side of a request decided by an earlier delivery whose
// after-commit step may not have finished.
func DecisionsAmong(ctx context.Context, q Querier, ids []string) (map[string]Decision, error) {
	out := make(map[string]Decision, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	ds, err := sqlrows.List(ctx, q, "SELECT "+decisionCols+" FROM request_outcomes WHERE request_id IN ("+placeholders(len(ids))+")", strArgs(ids), scanDecision)
	if err != nil {
		return nil, fmt.Errorf("store: decisions among: %w", err)
	}
	for _, d := range ds {
		out[d.RequestID] = d
	}
	return out, nil
}

// InsertDecisions writes many decisions in one multi-row INSERT. A duplicate
// key error (another writer decided one of them first) fails the statement:
// the caller rolls back and re-reads with DecidedAmong.
func InsertDecisions(ctx context.Context, q Querier, ds []Decision) error {
	if len(ds) == 0 {
		return nil
	}
	var sb strings.Builder
	sb.WriteString("INSERT INTO request_outcomes (request_id, item_id, user_id, qty, outcome, reason) VALUES ")
	args := make([]any, 0, len(ds)*6)
	for i, d := range ds {
		if i > 0 {
			sb.WriteString(",")
		}
		sb.WriteString("(?,?,?,?,?,?)")
		args = append(args, d.RequestID, d.ItemID, d.UserID, d.Qty, string(d.Outcome), nullable(d.Reason))
	}
	if _, err := q.ExecContext(ctx, sb.String(), args...); err != nil {
		return fmt.Errorf("store: insert decisions: %w", err)
	}
	return nil
}

func placeholders(n int) string {
	if n <= 0 {
		return ""
	}
	return strings.Repeat("?,", n-1) + "?"
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func isNoRows(err error) bool { return errors.Is(err, errNoRows) }
