package httpapi

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/flashsale-dev/flashsale/pkg/admission"
	"github.com/flashsale-dev/flashsale/pkg/orderstatus"
	"github.com/flashsale-dev/flashsale/pkg/tally"
	"github.com/flashsale-dev/flashsale/pkg/waitroom"
)

type orderBody struct {
	ItemID *int64 `json:"item_id"`
	Qty    *int   `json:"qty"`
	// AdmissionGrant is what an admitted waiting-room ticket shows
	// (waitroom.Room.CheckGrant): required for an item with a queue, ignored for
	// any other.
	AdmissionGrant *string `json:"admission_grant"`
}

type accepted struct {
	RequestID string `json:"request_id"`
	Status    string `json:"status"`
}

// postOrder is POST /api/v1/orders: 202 once the request is reserved in
// Redis and durably in Kafka. Every answer for a well-formed item id is
// counted for the item's live view (pkg/tally): a few atomic adds, never a
// wait.
//
// With ?wait= (the status poll's parameter and cap) the 202 waits, as
// GET /api/v1/orders/{request_id}?wait= would, for the request to leave
// PENDING and carries its status: a buyer following the API's advice makes
// one request per order instead of two, and the ingress and Redis answer
// one where they answered two (issue 42). The wait is the buyer's, not
// the admission's: the latency histograms and the live view time the
// admission alone (markAnswered).
func (s *Server) postOrder(c echo.Context) error {
	start := time.Now()
	wait, err := s.waitParam(c)
	if err != nil {
		return err
	}
	var b orderBody
	if err := decodeStrict(c, &b); err != nil {
		return err
	}
	if b.ItemID == nil || *b.ItemID <= 0 {
		return badRequest("invalid_item_id", "item_id must be a positive integer")
	}
	// With a wait, the status wait is registered before the request's
	// message is published (orderstatus.Reader.Expect), so it needs no
	// first read.
	var exp *orderstatus.Expected
	var before func(string)
	if wait > 0 {
		before = func(rid string) { exp = s.status.Expect(rid) }
	}
	rid, err := s.order(c, b, before)
	outcome := tally.Accepted
	var ae *apiError
	switch {
	case errors.As(err, &ae):
		outcome = ae.Code
	case err != nil:
		outcome = "internal"
	}
	s.tally.Record(*b.ItemID, outcome, time.Since(start))
	if err != nil {
		s.status.Drop(exp)
		return err
	}
	if wait <= 0 {
		return c.JSON(http.StatusAccepted, accepted{RequestID: rid, Status: orderstatus.Pending})
	}
	markAnswered(c)
	return c.JSON(http.StatusAccepted, s.awaitAccepted(c, b, rid, exp, wait))
}

// awaitAccepted is the status of the accepted request rid up to wait (the
// long poll of getOrder), through exp when the wait was registered before
// this very request was published; a replay's (another request's id, or
// no exp) reads first, as a poll does. A status that cannot be read is
// PENDING: the request was accepted, and a failed read must not turn the
// 202 into an error the buyer would retry.
func (s *Server) awaitAccepted(c echo.Context, b orderBody, rid string, exp *orderstatus.Expected, wait time.Duration) any {
	ctx, user := c.Request().Context(), principal(c).UserID
	if exp != nil && exp.RequestID() == rid {
		return s.status.Await(ctx, exp, orderstatus.View{RequestID: rid, ItemID: *b.ItemID, Qty: *b.Qty, Status: orderstatus.Pending, UserID: user}, wait)
	}
	s.status.Drop(exp)
	v, err := s.status.Poll(ctx, rid, user, wait)
	if err != nil || v.RequestID != rid {
		return accepted{RequestID: rid, Status: orderstatus.Pending}
	}
	return v
}

// order admits the order of a body with a valid item id and returns its
// request id; before (nil: none) is admission.Request.BeforePublish.
func (s *Server) order(c echo.Context, b orderBody, before func(rid string)) (string, error) {
	if b.Qty == nil || *b.Qty < 1 || *b.Qty > s.cfg.MaxQty {
		return "", badRequest("invalid_qty", fmt.Sprintf("qty must be an integer from 1 to the item's per-user limit (at most %d)", s.cfg.MaxQty))
	}
	key := c.Request().Header.Get("Idempotency-Key")
	if _, sent := c.Request().Header["Idempotency-Key"]; sent && !plainToken(key, 64) {
		return "", badRequest("invalid_idempotency_key", "Idempotency-Key must be 1 to 64 characters of A-Z a-z 0-9 . _ : -")
	}
	user := principal(c).UserID
	kind := waitroom.NoGrant
	if b.AdmissionGrant != nil {
		var err error
		if kind, err = s.room.CheckGrant(c.Request().Context(), *b.ItemID, user, *b.AdmissionGrant); err != nil {
			if errors.Is(err, waitroom.ErrUnavailable) {
				return "", unavailable("the order could not be taken; nothing was reserved, please retry")
			}
			return "", roomError(err, waitroom.Item{}, "order")
		}
	}
	res := s.admission.Admit(c.Request().Context(), admission.Request{
		ItemID: *b.ItemID, UserID: user, Qty: *b.Qty, IdempotencyKey: key,
		Granted: kind == waitroom.AdmitGrant, Claim: kind == waitroom.OfferGrant, BeforePublish: before,
	})
	if res.OK() {
		if kind == waitroom.OfferGrant && res.Outcome == admission.Accepted {
			s.room.CountOfferClaim()
		}
		return res.RequestID, nil
	}
	if res.Outcome == admission.NotActive {
		// sale_ended or sale_not_active: which one is the item row's to say.
		return "", s.notActive(c.Request().Context(), *b.ItemID)
	}
	if res.Outcome == admission.NeedGrant {
		s.room.CountRefusal(waitroom.RefusedRequired)
	}
	if res.Outcome == admission.NoOffer {
		s.room.CountRefusal(waitroom.RefusedOfferGone)
	}
	if res.Outcome == admission.OverLimit && kind == waitroom.OfferGrant {
		return "", badRequest("invalid_qty", "a waitlist offer is one unit: order it with qty 1")
	}
	return "", admissionError(res)
}

// admissionError maps a refused admission to the contract's answer (but
// NotActive, which postOrder names through notActive).
func admissionError(r admission.Result) error {
	switch r.Outcome {
	case admission.UnknownItem:
		return newErr(http.StatusNotFound, "unknown_item", "no such item on sale")
	case admission.NeedGrant:
		return errGrantRequired
	case admission.NoOffer:
		return errOfferGone
	case admission.OverLimit:
		return badRequest("invalid_qty", fmt.Sprintf("qty exceeds the per-user limit of %d", r.Limit))
	case admission.RateLimited:
		return &apiError{Status: http.StatusTooManyRequests, Code: "rate_limited", Message: "too many attempts; retry later", RetryAfter: r.RetryAfter}
	case admission.Already:
		e := newErr(http.StatusConflict, "already_purchased", "you already hold this item; request_id is the request that holds it")
		e.RequestID = r.RequestID
		return e
	case admission.KeyReused:
		e := newErr(http.StatusUnprocessableEntity, "idempotency_key_reused",
			"this Idempotency-Key was first sent with another request (another item quantity or kind); nothing was taken: use a new key for a new request, request_id is the key's first request")
		e.RequestID = r.RequestID
		return e
	case admission.SoldOut, admission.SoldOutMem:
		return errSoldOut
	case admission.StockMoving:
		return &apiError{Status: http.StatusServiceUnavailable, Code: "stock_moving", RetryAfter: r.RetryAfter,
			Message: "your share of this item's stock is being refilled from its other buckets; nothing was reserved, retry shortly"}
	case admission.Unconfirmed:
		return &apiError{Status: http.StatusServiceUnavailable, Code: "outcome_unknown", RequestID: r.RequestID, RetryAfter: time.Second,
			Message: "the outcome of this request is not known yet; poll GET /api/v1/orders/{request_id} for its final status before ordering again"}
	}
	return unavailable("the order could not be taken; nothing was reserved, please retry")
}

// getOrder is GET /api/v1/orders/{request_id}: PENDING from the Redis
// reservation, terminal states from the status cache, MySQL only on a miss.
// Another user's request is a 404, exactly like an unknown one.
//
// With ?wait= (orderstatus.Reader.Poll) a PENDING request is answered as
// soon as its status leaves PENDING, or PENDING at the end of the wait.
func (s *Server) getOrder(c echo.Context) error {
	wait, err := s.waitParam(c)
	if err != nil {
		return err
	}
	ctx, user := c.Request().Context(), principal(c).UserID
	v, err := s.status.Poll(ctx, c.Param("request_id"), user, wait)
	if err != nil {
		return statusError(err)
	}
	return c.JSON(http.StatusOK, v)
}

// testHookAfterPayCommit, when set by a test, runs after the pay's MySQL
// commit and before its status cache write.
var testHookAfterPayCommit func()

// payOrder is POST /api/v1/orders/{request_id}/pay.
func (s *Server) payOrder(c echo.Context) error {
	ctx := c.Request().Context()
	rid, user := c.Param("request_id"), principal(c).UserID
	item, err := itemOfRequest(rid)
	if err != nil {
		return err
	}
	o, err := s.pay(ctx, item, rid, user)
	switch {
	case err == nil:
		if h := testHookAfterPayCommit; h != nil {
			h()
		}
		// Best effort: a failure leaves the in-doubt marker pay wrote
		// before the commit, and polls ask MySQL (pay.go).
		s.status.Fill(ctx, orderstatus.FromOrder(o))
		return c.JSON(http.StatusOK, map[string]string{"status": orderstatus.Paid})
	case errors.Is(err, errNotPayable):
		return newErr(http.StatusConflict, "not_payable", "this order cannot be paid (pending, cancelled, expired or rejected)")
	case errors.Is(err, errNoOrder):
		// No order (yet): pending or rejected requests of this user are
		// not payable; anything else is not theirs to know about.
		if _, verr := s.readStatus(ctx, rid, user); verr != nil {
			return verr
		}
		return newErr(http.StatusConflict, "not_payable", "this request has no order to pay (pending or rejected)")
	}
	return err
}
