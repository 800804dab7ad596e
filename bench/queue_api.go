package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"time"
)

// The waiting room as the bench's players see it (ingress/openapi.yaml's
// Ticket and TicketStatus, and the gate's contract: serving_position,
// admission_grant): the answers are decoded with the fields the bench
// reads, the rest ignored.

// The states of a ticket.
const (
	ticketWaiting  = "waiting"
	ticketAdmitted = "admitted"
	ticketSoldOut  = "sold_out"
	ticketExpired  = "expired"
	// ticketOffered: the waitlist holds a released unit for the ticket's
	// buyer; admission_grant is the offer grant that claims it until
	// grant_expires_at.
	ticketOffered = "offered"
)

// ticketPollWait is how long a player's ticket long-poll asks the server to
// hold it (?wait=10s): a polite client, one request per change.
const ticketPollWait = 10 * time.Second

// takenTicket is POST /api/v1/items/{id}/queue's 201/200.
type takenTicket struct {
	Ticket  string    `json:"ticket"`
	Arrival int64     `json:"arrival"`
	TakenAt time.Time `json:"taken_at"`
}

// ticketState is GET /api/v1/items/{id}/queue/{ticket}'s 200.
type ticketState struct {
	Ticket          string `json:"ticket"`
	State           string `json:"state"`
	Position        *int64 `json:"position"`
	ServingPosition *int64 `json:"serving_position"`
	EstimatedWaitMs *int64 `json:"estimated_wait_ms"`
	// EstimatedAdmissionAt is the same estimate as a moment by the
	// server's clock.
	EstimatedAdmissionAt *time.Time `json:"estimated_admission_at"`
	StockLeft            int64      `json:"stock_left"`
	AdmissionGrant       string     `json:"admission_grant"`
	GrantExpiresAt       time.Time  `json:"grant_expires_at"`
	ShuffleAt            time.Time  `json:"shuffle_at"`
}

// queuedSpec is ItemSpec with the waiting room on.
type queuedSpec struct {
	ItemSpec
	Queue        bool      `json:"queue"`
	QueueOpensAt time.Time `json:"queue_opens_at"`
	QueueRate    int       `json:"queue_rate"`
	// QueueShuffleWindowMs is left out (nil) for the server's default.
	QueueShuffleWindowMs *int64 `json:"queue_shuffle_window_ms,omitempty"`
}

// CreateQueuedSale creates the sale item as CreateSale does, with its
// waiting room opening at opens and admitting rate tickets a second, its
// shuffle window window long (negative: the server's default).
func (a *API) CreateQueuedSale(ctx context.Context, id int64, units, buckets int, opens, starts, ends time.Time, rate int, window time.Duration) error {
	spec := queuedSpec{ItemSpec: saleSpec(id, units, buckets, starts, ends), Queue: true, QueueOpensAt: opens.UTC(), QueueRate: rate}
	if window >= 0 {
		ms := window.Milliseconds()
		spec.QueueShuffleWindowMs = &ms
	}
	return a.do(ctx, http.MethodPut, "/api/v1/admin/items/"+strconv.FormatInt(id, 10), a.Admin, spec, nil)
}

// queuePaths are one item's waiting room URLs.
type queuePaths struct{ orders, tickets string }

func newQueuePaths(base string, item int64) queuePaths {
	return queuePaths{orders: base + "/api/v1/orders", tickets: base + "/api/v1/items/" + strconv.FormatInt(item, 10) + "/queue"}
}

// ticketURL is the status URL of ticket, long-polled for wait if > 0.
func (p queuePaths) ticketURL(ticket string, wait time.Duration) string {
	u := p.tickets + "/" + ticket
	if wait > 0 {
		u += "?wait=" + strconv.FormatInt(wait.Milliseconds(), 10) + "ms"
	}
	return u
}

// grantOrderBody is an order of one unit carrying an admission grant ("" =
// none, the body of orderBody).
func grantOrderBody(item int64, grant string) []byte {
	if grant == "" {
		return orderBody(item)
	}
	g, _ := json.Marshal(grant) // a string always encodes
	return []byte(`{"item_id":` + strconv.FormatInt(item, 10) + `,"qty":1,"admission_grant":` + string(g) + `}`)
}

// send is one request with a bearer and an optional JSON body, as post.
func send(ctx context.Context, c *http.Client, method, url, bearer string, body []byte) (int, []byte, string) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return 0, nil, err.Error()
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", bearer)
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, err.Error()
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return 0, nil, err.Error()
	}
	return resp.StatusCode, b, ""
}

// answerLabel names an answer by its status and error code ("201",
// "409 queue_not_open", "transport"), for the report's counts.
func answerLabel(code int, body []byte) string {
	if code == 0 {
		return "transport"
	}
	var e apiError
	if code >= 300 && json.Unmarshal(body, &e) == nil && e.Error != "" {
		return strconv.Itoa(code) + " " + e.Error
	}
	return strconv.Itoa(code)
}
