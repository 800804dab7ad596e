package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/flashsale-dev/flashsale/pkg/auth"
	"github.com/flashsale-dev/flashsale/pkg/config"
)

// soldOutBody is the ingress's 410 answer, byte for byte as Echo's c.JSON
// writes it (pkg/httpapi errors.go: {"error","message"} and a newline).
// The floor writes it pre-encoded: the least any server must do to answer.
var soldOutBody = func() []byte {
	b, _ := json.Marshal(apiError{Error: "sold_out", Message: "sold out"})
	return append(b, '\n')
}()

// floorMaxBody is the ingress's body bound (pkg/httpapi MaxBody).
const floorMaxBody = 4 << 10

// httpFloor is the HTTP floor's server: net/http (which Echo runs on, so
// nothing built on it can be faster) with the ingress's JWT check and token
// cache, answering every valid order 410 sold_out. It has no routing
// framework, middleware, rate limit, Redis or metrics: what is left is what
// HTTP and the token check cost on this machine.
type httpFloor struct {
	verify *auth.Verifier
	srv    *http.Server
	URL    string
}

// startHTTPFloor listens on a free loopback port. The verifier and the
// server's timeouts are the ingress's (ingress/main.go, pkg/httpapi
// newVerifier), from in; secret is the one the bench signs with.
func startHTTPFloor(secret string, in config.Ingress) (*httpFloor, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("bench: http floor listen: %w", err)
	}
	f := &httpFloor{URL: "http://" + ln.Addr().String(), verify: auth.NewVerifier(secret,
		auth.WithAudience(in.JWTAudience), auth.WithIssuer(in.JWTIssuer), auth.WithMaxTTL(in.JWTMaxTTL),
		auth.WithUserClaim(in.JWTUserClaim), auth.WithRoleClaim(in.JWTRoleClaim), auth.WithAdminRole(in.JWTAdminRole),
		auth.WithTokenCache(in.JWTCacheSize))}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/v1/orders", f.order)
	f.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second,
		WriteTimeout: in.PublishTimeout + 2*time.Second + 5*time.Second, IdleTimeout: 2 * time.Minute}
	go func() {
		if err := f.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			slog.Error("http floor server", "err", err)
		}
	}()
	return f, nil
}

// order checks what the ingress checks before it asks Redis (the token, the
// media type, a JSON body naming an item and a quantity) and answers 410.
func (f *httpFloor) order(w http.ResponseWriter, r *http.Request) {
	if _, err := f.verify.FromHeader(r.Header.Get("Authorization")); err != nil {
		w.Header().Set("WWW-Authenticate", `Bearer realm="flashsale"`)
		http.Error(w, `{"error":"unauthorized","message":"Unauthorized"}`, http.StatusUnauthorized)
		return
	}
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, floorMaxBody))
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || !strings.EqualFold(mt, "application/json") {
		http.Error(w, `{"error":"bad_request","message":"bad request"}`, http.StatusBadRequest)
		return
	}
	var b struct {
		ItemID *int64 `json:"item_id"`
		Qty    *int   `json:"qty"`
	}
	if err := json.Unmarshal(raw, &b); err != nil || b.ItemID == nil || *b.ItemID <= 0 || b.Qty == nil || *b.Qty < 1 {
		http.Error(w, `{"error":"bad_request","message":"bad request"}`, http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusGone)
	_, _ = w.Write(soldOutBody)
}

// close drops the server and its connections at once: it is closed only
// after its attack ended, and a graceful Shutdown would wait about 5 s for
// connections the client dialled but never used (StateNew).
func (f *httpFloor) close() error {
	if err := f.srv.Close(); err != nil {
		return fmt.Errorf("bench: http floor close: %w", err)
	}
	return nil
}

// MeasureHTTPFloor attacks the HTTP floor with the sale's own load: the same
// plan prefix, tokens, mode, concurrency, client and timeouts (Attack), so
// first-time token checks miss the cache exactly as in the sale. Every
// answer should be a 410; its rate is the sold-out phase's (phaseRates),
// which, with no 202, is the whole attack.
func MeasureHTTPFloor(ctx context.Context, w Workload, in config.Ingress, n int) (FloorFigure, error) {
	f, err := startHTTPFloor(w.Settings.JWTSecret, in)
	if err != nil {
		return FloorFigure{}, err
	}
	defer func() {
		if err := f.close(); err != nil {
			slog.Warn("http floor", "err", err)
		}
	}()
	s := w.Settings
	atk := &Attack{Base: f.URL, ItemIDs: []int64{newItemID()}, Plan: w.Plan, Tokens: w.Tokens, N: n,
		Rate: s.Rate, Concurrency: w.Concurrency, Duration: s.Duration, Timeout: s.RequestTimeout}
	rec := NewRecorder(len(w.Plan.Attempts), nil)
	if err := atk.Run(ctx, rec); err != nil {
		return FloorFigure{}, fmt.Errorf("bench: http floor attack: %w", err)
	}
	counts, total := rec.Counts()
	ph := rec.Phases()
	fig := FloorFigure{Path: "http", Concurrency: w.Concurrency, Count: ph.SoldOut, Seconds: ph.SoldOutSecs,
		PerSec: ph.SoldOutPerSec, Failed: total - counts[OutSoldOut]}
	if w.Concurrency == 0 {
		fig.Rate = atk.Rate // open loop, as the sale
	}
	if fig.Count == 0 {
		return fig, fmt.Errorf("bench: http floor: no 410 in %d answers (%v)", total, counts)
	}
	return fig, nil
}
