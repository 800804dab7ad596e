package httpapi

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/flashsale-dev/flashsale/pkg/orderstatus"
	"github.com/flashsale-dev/flashsale/pkg/reqid"
)

// parseWait reads ?wait=, cut to max; absent (sent false) is 0, answer at
// once. It accepts exactly what ingress/openapi.yaml's pattern
// ^[0-9]{1,6}(ms|s)$ does (longer waits are cut to the cap), so the
// contract fuzzer's valid values always succeed and its invalid ones are
// always a 400; present but empty is a 400, as the description says. Read
// by hand, not by a regexp: every order that waits passes here, and the
// regexp was 1% of the ingress's CPU.
func parseWait(raw string, sent bool, max time.Duration) (time.Duration, error) {
	if !sent {
		return 0, nil
	}
	digits, unit := raw, time.Second
	if d, ok := strings.CutSuffix(raw, "ms"); ok {
		digits, unit = d, time.Millisecond
	} else if d, ok := strings.CutSuffix(raw, "s"); ok {
		digits = d
	} else {
		return 0, invalidWait()
	}
	if len(digits) < 1 || len(digits) > 6 {
		return 0, invalidWait()
	}
	n := 0
	for _, c := range []byte(digits) {
		if c < '0' || c > '9' {
			return 0, invalidWait()
		}
		n = n*10 + int(c-'0')
	}
	return min(time.Duration(n)*unit, max), nil
}

func invalidWait() error {
	return newErr(http.StatusBadRequest, "invalid_wait", "wait must be whole milliseconds or seconds, e.g. 10s or 500ms")
}

// waitParam is the request's ?wait= (parseWait), cut to
// FLASHSALE_STATUS_WAIT_MAX: the status poll's and the order's alike.
func (s *Server) waitParam(c echo.Context) (time.Duration, error) {
	_, sent := c.QueryParams()["wait"]
	return parseWait(c.QueryParam("wait"), sent, s.cfg.Ingress.StatusWaitMax)
}

// readStatus is rid's status for user (orderstatus.Reader.Read), its
// refusals turned into the contract's: another buyer's request is the same
// 404 as an unknown one.
func (s *Server) readStatus(ctx context.Context, rid string, user int64) (orderstatus.View, error) {
	v, err := s.status.Read(ctx, rid, user)
	return v, statusError(err)
}

// statusError is the API's answer to a status read's error (nil for nil).
func statusError(err error) error {
	switch {
	case errors.Is(err, orderstatus.ErrNoRequest):
		return notFound("no such request")
	case errors.Is(err, orderstatus.ErrUnavailable):
		return unavailable("status temporarily unavailable")
	}
	return err
}

// itemOfRequest is the item of a request id; a malformed one is no request.
func itemOfRequest(rid string) (int64, error) {
	item, err := reqid.Item(rid)
	if err != nil {
		return 0, notFound("no such request")
	}
	return item, nil
}
