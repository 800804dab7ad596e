package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/flashsale-dev/flashsale/pkg/audit"
)

// API is the bench's client of the flashsale HTTP contract
// (ingress/openapi.yaml). The baselines serve the same routes, so one client
// drives all three.
type API struct {
	Base   string
	Client *http.Client
	Admin  string // admin bearer header
}

// NewHTTPClient returns a client whose pool holds conns idle connections to
// the one host under test, so the attack does not pay for new connections.
func NewHTTPClient(conns int, timeout time.Duration) *http.Client {
	return &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{
			MaxIdleConns:        conns,
			MaxIdleConnsPerHost: conns,
			IdleConnTimeout:     90 * time.Second,
		},
	}
}

// apiError is the error body of the contract.
type apiError struct {
	Error   string `json:"error"`
	Message string `json:"message"`
}

// StatusError is a non-2xx answer.
type StatusError struct {
	Code int
	Body string
}

func (e *StatusError) Error() string { return fmt.Sprintf("http %d: %s", e.Code, e.Body) }

// do sends one JSON request and decodes a 2xx JSON answer into out.
func (a *API) do(ctx context.Context, method, path, bearer string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("bench: encode %s %s: %w", method, path, err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, a.Base+path, body)
	if err != nil {
		return fmt.Errorf("bench: %s %s: %w", method, path, err)
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if bearer != "" {
		req.Header.Set("Authorization", bearer)
	}
	resp, err := a.Client.Do(req)
	if err != nil {
		return fmt.Errorf("bench: %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return fmt.Errorf("bench: %s %s: read: %w", method, path, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("bench: %s %s: %w", method, path, &StatusError{Code: resp.StatusCode, Body: strings.TrimSpace(string(b))})
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			return fmt.Errorf("bench: %s %s: decode %q: %w", method, path, b, err)
		}
	}
	return nil
}

// ItemSpec is the body of PUT /api/v1/admin/items/{id}.
type ItemSpec struct {
	Name         string    `json:"name"`
	PriceCents   int64     `json:"price_cents"`
	Stock        int       `json:"stock"`
	PerUserLimit int       `json:"per_user_limit"`
	StartsAt     time.Time `json:"starts_at"`
	EndsAt       time.Time `json:"ends_at"`
	// Buckets is the item's stock bucket count (flashsale; omitted for 1).
	Buckets int `json:"buckets,omitempty"`
}

// CreateItem creates the sale item (and, on flashsale, warms Redis) with
// buckets stock buckets. The sale started a minute ago and lasts an hour,
// so every attempt finds it active.
func (a *API) CreateItem(ctx context.Context, id int64, units, buckets int) error {
	now := time.Now().UTC().Truncate(time.Millisecond)
	return a.CreateSale(ctx, id, units, buckets, now.Add(-time.Minute), now.Add(time.Hour))
}

// CreateSale creates the sale item with its sale window from starts to
// ends (the bots mode's sale starts in the future).
func (a *API) CreateSale(ctx context.Context, id int64, units, buckets int, starts, ends time.Time) error {
	return a.do(ctx, http.MethodPut, "/api/v1/admin/items/"+strconv.FormatInt(id, 10), a.Admin, saleSpec(id, units, buckets, starts, ends), nil)
}

// EndSale ends the item's sale now (POST …/end): the bench is done with it.
func (a *API) EndSale(ctx context.Context, id int64) error {
	return a.do(ctx, http.MethodPost, "/api/v1/admin/items/"+strconv.FormatInt(id, 10)+"/end", a.Admin, nil, nil)
}

// saleSpec is the bench's item: units at one per buyer, sold from starts
// to ends.
func saleSpec(id int64, units, buckets int, starts, ends time.Time) ItemSpec {
	spec := ItemSpec{Name: "bench item " + strconv.FormatInt(id, 10), PriceCents: 999, Stock: units,
		PerUserLimit: 1, StartsAt: starts.UTC(), EndsAt: ends.UTC()}
	if buckets > 1 {
		spec.Buckets = buckets
	}
	return spec
}

// OrderStatus is the body of GET /api/v1/orders/{request_id}.
type OrderStatus struct {
	RequestID string `json:"request_id"`
	ItemID    int64  `json:"item_id"`
	Qty       int    `json:"qty"`
	Status    string `json:"status"`
	OrderID   int64  `json:"order_id,omitempty"`
	Reason    string `json:"reason,omitempty"`
	// ExpiresAt is an order's end of payment (UNPAID, PAID, CANCELLED),
	// by the server's clock.
	ExpiresAt time.Time `json:"expires_at,omitzero"`
}

// Terminal reports whether a buyer-visible status is final for I4: every
// status but PENDING (UNPAID may still move, but the order exists).
func Terminal(status string) bool {
	switch status {
	case "UNPAID", "PAID", "CANCELLED", "REJECTED":
		return true
	}
	return false
}

// Status polls one request as its owner; wait > 0 asks the server to answer
// only once the request left PENDING, or after wait (?wait=).
func (a *API) Status(ctx context.Context, bearer, requestID string, wait time.Duration) (OrderStatus, error) {
	var s OrderStatus
	path := "/api/v1/orders/" + requestID
	if wait > 0 {
		path += "?wait=" + strconv.FormatInt(wait.Milliseconds(), 10) + "ms"
	}
	err := a.do(ctx, http.MethodGet, path, bearer, nil, &s)
	return s, err
}

// Pay pays one order as its owner.
func (a *API) Pay(ctx context.Context, bearer, requestID string) error {
	return a.do(ctx, http.MethodPost, "/api/v1/orders/"+requestID+"/pay", bearer, nil, nil)
}

// Audit reads the admin audit of the item.
func (a *API) Audit(ctx context.Context, itemID int64) (Audit, error) {
	var au Audit
	err := a.do(ctx, http.MethodGet, "/api/v1/admin/items/"+strconv.FormatInt(itemID, 10)+"/audit", a.Admin, nil, &au)
	return au, err
}

// Audit is the admin audit as served by GET .../audit: pkg/audit's report
// for flashsale; the baselines fill what applies to them.
type Audit = audit.Report

// orderBody is the body of POST /api/v1/orders.
func orderBody(itemID int64) []byte {
	return []byte(`{"item_id":` + strconv.FormatInt(itemID, 10) + `,"qty":1}`)
}

// Outcome labels. The report keeps exactly these rows, in this order.
const (
	OutAccepted = "202"
	OutAlready  = "409 already_purchased"
	OutSoldOut  = "410 sold_out"
	OutLimited  = "429"
	OutUnavail  = "503"
	OutOther    = "other"
)

// Outcomes lists the report rows in order.
var Outcomes = []string{OutAccepted, OutAlready, OutSoldOut, OutLimited, OutUnavail, OutOther}

// Classify maps one answer to its outcome row and, for a 202, the request id.
// detail names what "other" was (status and error code, or transport error).
func Classify(code int, body []byte, transportErr string) (outcome, requestID, detail string) {
	outcome, st, detail := classifyOrder(code, body, transportErr)
	return outcome, st.RequestID, detail
}

// classifyOrder is Classify with the whole body of a 202: with ?wait= it
// is the request's status view (ingress/openapi.yaml), else its request
// id and PENDING.
func classifyOrder(code int, body []byte, transportErr string) (outcome string, accepted OrderStatus, detail string) {
	if code == 0 {
		return OutOther, OrderStatus{}, "transport: " + transportErr
	}
	var e apiError
	switch code {
	case http.StatusAccepted:
		var s OrderStatus
		if err := json.Unmarshal(body, &s); err != nil || s.RequestID == "" {
			return OutOther, OrderStatus{}, "202 without request_id"
		}
		return OutAccepted, s, ""
	case http.StatusConflict:
		_ = json.Unmarshal(body, &e)
		if e.Error == "already_purchased" {
			return OutAlready, OrderStatus{}, ""
		}
	case http.StatusGone:
		_ = json.Unmarshal(body, &e)
		if e.Error == "sold_out" {
			return OutSoldOut, OrderStatus{}, ""
		}
	case http.StatusTooManyRequests:
		return OutLimited, OrderStatus{}, ""
	case http.StatusServiceUnavailable:
		return OutUnavail, OrderStatus{}, ""
	default:
		_ = json.Unmarshal(body, &e)
	}
	return OutOther, OrderStatus{}, strconv.Itoa(code) + " " + e.Error
}
