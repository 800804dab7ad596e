package httpapi

import (
	"context"
	"errors"
	"net/http"
	"regexp"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/flashsale-dev/flashsale/pkg/orderstatus"
	"github.com/flashsale-dev/flashsale/pkg/reqid"
)

// waitPattern is the wait query parameter as ingress/openapi.yaml declares
// it: whole milliseconds or seconds. Exactly what the schema accepts is
// accepted (longer waits are cut to the cap), so the contract fuzzer's
// valid values always succeed and its invalid ones are always a 400.
var waitPattern = regexp.MustCompile(`^([0-9]{1,6})(ms|s)$`)

// parseWait reads ?wait=, cut to max; absent (sent false) is 0, answer at
// once. Present but empty does not match the pattern and is a 400, as the
// description says.
func parseWait(raw string, sent bool, max time.Duration) (time.Duration, error) {
	if !sent {
		return 0, nil
	}
	m := waitPattern.FindStringSubmatch(raw)
	if m == nil {
		return 0, newErr(http.StatusBadRequest, "invalid_wait", "wait must be whole milliseconds or seconds, e.g. 10s or 500ms")
	}
	n, _ := strconv.Atoi(m[1]) // at most 6 digits
	d := time.Duration(n) * time.Millisecond
	if m[2] == "s" {
		d = time.Duration(n) * time.Second
	}
	return min(d, max), nil
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
