package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/flashsale-dev/flashsale/pkg/auth"
)

// BaselineServer serves a baseline behind the same HTTP contract as the
// flashsale ingress (the routes the bench uses), on a loopback port, so the
// attack, the polling and the audit are byte-for-byte the same code for all
// three scenarios. It is a BASELINE for comparison, not a feature.
type BaselineServer struct {
	Name    string
	db      *sql.DB
	orderer Orderer
	verify  *auth.Verifier
	srv     *http.Server
	URL     string
}

// StartBaseline listens on 127.0.0.1 (a free port) and serves until Close.
func StartBaseline(name string, db *sql.DB, o Orderer, jwtSecret string) (*BaselineServer, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("bench: baseline %s listen: %w", name, err)
	}
	b := &BaselineServer{Name: name, db: db, orderer: o, verify: auth.NewVerifier(jwtSecret), URL: "http://" + ln.Addr().String()}
	mux := http.NewServeMux()
	mux.HandleFunc("PUT /api/v1/admin/items/{id}", b.admin(b.putItem))
	mux.HandleFunc("GET /api/v1/admin/items/{id}/audit", b.admin(b.audit))
	mux.HandleFunc("POST /api/v1/orders", b.buyer(b.order))
	mux.HandleFunc("GET /api/v1/orders/{rid}", b.buyer(b.status))
	mux.HandleFunc("POST /api/v1/orders/{rid}/pay", b.buyer(b.pay))
	b.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := b.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			slog.Error("baseline server", "baseline", name, "err", err)
		}
	}()
	return b, nil
}

// Close shuts the server down gracefully.
func (b *BaselineServer) Close(ctx context.Context) error {
	if err := b.srv.Shutdown(ctx); err != nil {
		return fmt.Errorf("bench: baseline %s shutdown: %w", b.Name, err)
	}
	return nil
}

type handler func(w http.ResponseWriter, r *http.Request, user int64)

func (b *BaselineServer) buyer(h handler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		p, err := b.verify.FromHeader(r.Header.Get("Authorization"))
		if err != nil {
			writeErr(w, http.StatusUnauthorized, "unauthenticated")
			return
		}
		h(w, r, p.UserID)
	}
}

func (b *BaselineServer) admin(h handler) http.HandlerFunc {
	return b.buyer(func(w http.ResponseWriter, r *http.Request, user int64) {
		if p, _ := b.verify.FromHeader(r.Header.Get("Authorization")); !p.Admin {
			writeErr(w, http.StatusForbidden, "forbidden")
			return
		}
		h(w, r, user)
	})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func writeErr(w http.ResponseWriter, code int, e string) {
	writeJSON(w, code, apiError{Error: e, Message: e})
}

func pathID(r *http.Request) (int64, bool) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	return id, err == nil && id > 0
}

func (b *BaselineServer) putItem(w http.ResponseWriter, r *http.Request, _ int64) {
	id, ok := pathID(r)
	var spec ItemSpec
	if !ok || json.NewDecoder(http.MaxBytesReader(w, r.Body, 4096)).Decode(&spec) != nil || spec.Stock < 0 {
		writeErr(w, http.StatusBadRequest, "bad_request")
		return
	}
	_, err := b.db.ExecContext(r.Context(), `INSERT INTO baseline_items (id, name, price_cents, total_stock, stock, per_user_limit)
 VALUES (?, ?, ?, ?, ?, ?) ON DUPLICATE KEY UPDATE name = VALUES(name), price_cents = VALUES(price_cents),
 total_stock = VALUES(total_stock), stock = VALUES(stock), per_user_limit = VALUES(per_user_limit)`,
		id, spec.Name, spec.PriceCents, spec.Stock, spec.Stock, spec.PerUserLimit)
	if err != nil {
		slog.Error("baseline put item", "baseline", b.Name, "err", err)
		writeErr(w, http.StatusInternalServerError, "internal")
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"id": id, "stock_left": spec.Stock})
}

func (b *BaselineServer) order(w http.ResponseWriter, r *http.Request, user int64) {
	var in struct {
		ItemID int64 `json:"item_id"`
		Qty    int   `json:"qty"`
	}
	if json.NewDecoder(http.MaxBytesReader(w, r.Body, 4096)).Decode(&in) != nil || in.ItemID <= 0 || in.Qty != 1 {
		writeErr(w, http.StatusBadRequest, "bad_request")
		return
	}
	v, err := b.orderer.Order(r.Context(), in.ItemID, user, in.Qty, r.Header.Get("Idempotency-Key"))
	if err != nil {
		slog.Debug("baseline order", "baseline", b.Name, "err", err)
		writeErr(w, http.StatusInternalServerError, "internal")
		return
	}
	if v.Code != http.StatusAccepted {
		writeErr(w, v.Code, v.Error)
		return
	}
	// Synchronous: the order exists already, so the first answer is final.
	writeJSON(w, http.StatusAccepted, map[string]string{"request_id": v.RequestID, "status": "UNPAID"})
}

func (b *BaselineServer) status(w http.ResponseWriter, r *http.Request, user int64) {
	var s OrderStatus
	err := b.db.QueryRowContext(r.Context(), "SELECT request_id, item_id, qty, status, id FROM baseline_orders WHERE request_id = ? AND user_id = ?",
		r.PathValue("rid"), user).Scan(&s.RequestID, &s.ItemID, &s.Qty, &s.Status, &s.OrderID)
	writeRow(w, s, err)
}

// writeRow answers a read of one row: 404 when there is none, 500 on any
// other error, v as 200 otherwise (the order's status, an item's audit).
func writeRow(w http.ResponseWriter, v any, err error) {
	switch {
	case errors.Is(err, sql.ErrNoRows):
		writeErr(w, http.StatusNotFound, "not_found")
	case err != nil:
		writeErr(w, http.StatusInternalServerError, "internal")
	default:
		writeJSON(w, http.StatusOK, v)
	}
}

func (b *BaselineServer) pay(w http.ResponseWriter, r *http.Request, user int64) {
	ctx, rid := r.Context(), r.PathValue("rid")
	res, err := b.db.ExecContext(ctx, "UPDATE baseline_orders SET status = 'PAID', paid_at = NOW(3) WHERE request_id = ? AND user_id = ? AND status = 'UNPAID'", rid, user)
	if err != nil {
		writeErr(w, http.StatusInternalServerError, "internal")
		return
	}
	if n, _ := res.RowsAffected(); n == 1 {
		writeJSON(w, http.StatusOK, map[string]string{"status": "PAID"})
		return
	}
	var status string
	err = b.db.QueryRowContext(ctx, "SELECT status FROM baseline_orders WHERE request_id = ? AND user_id = ?", rid, user).Scan(&status)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		writeErr(w, http.StatusNotFound, "not_found")
	case err != nil:
		writeErr(w, http.StatusInternalServerError, "internal")
	case status == "PAID":
		writeJSON(w, http.StatusOK, map[string]string{"status": "PAID"})
	default:
		writeErr(w, http.StatusConflict, "not_payable")
	}
}

// audit checks the invariants that apply to a synchronous design: I1 no
// oversell, I2 one per buyer, I3 conservation (stock + active = total), I7
// stock never negative. (I4 is checked by the bench from the buyers' side.)
func (b *BaselineServer) audit(w http.ResponseWriter, r *http.Request, _ int64) {
	id, ok := pathID(r)
	if !ok {
		writeErr(w, http.StatusNotFound, "not_found")
		return
	}
	a, err := BaselineAudit(r.Context(), b.db, id)
	writeRow(w, a, err)
}

// BaselineAudit computes a baseline item's audit.
func BaselineAudit(ctx context.Context, db *sql.DB, itemID int64) (Audit, error) {
	a := Audit{ItemID: itemID, Violations: []string{}}
	var dups int64
	err := db.QueryRowContext(ctx, `SELECT i.total_stock, i.stock,
 (SELECT COALESCE(SUM(qty), 0) FROM baseline_orders WHERE item_id = i.id AND status = 'UNPAID'),
 (SELECT COALESCE(SUM(qty), 0) FROM baseline_orders WHERE item_id = i.id AND status = 'PAID'),
 (SELECT COALESCE(SUM(qty), 0) FROM baseline_orders WHERE item_id = i.id AND status = 'CANCELLED'),
 (SELECT COUNT(*) FROM (SELECT user_id FROM baseline_orders WHERE item_id = ? GROUP BY user_id HAVING COUNT(*) > 1) d)
 FROM baseline_items i WHERE i.id = ?`, itemID, itemID).Scan(&a.Total, &a.DBStock, &a.Unpaid, &a.Paid, &a.Cancelled, &dups)
	if err != nil {
		return Audit{}, fmt.Errorf("bench: baseline audit %d: %w", itemID, err)
	}
	active := a.Unpaid + a.Paid
	if active > a.Total {
		a.Violations = append(a.Violations, fmt.Sprintf("I1 oversell: unpaid+paid %d > total %d", active, a.Total))
	}
	if dups > 0 {
		a.Violations = append(a.Violations, fmt.Sprintf("I2 one per buyer: %d users hold more than one order", dups))
	}
	if a.DBStock+active != a.Total {
		a.Violations = append(a.Violations, fmt.Sprintf("I3 conservation: stock %d + active %d != total %d", a.DBStock, active, a.Total))
	}
	if a.DBStock < 0 {
		a.Violations = append(a.Violations, fmt.Sprintf("I7 negative stock: %d", a.DBStock))
	}
	a.OK = len(a.Violations) == 0
	return a, nil
}
