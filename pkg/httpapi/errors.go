package httpapi

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"
)

// apiError is every error answer: {"error": code, "message": text}.
type apiError struct {
	Status  int    `json:"-"`
	Code    string `json:"error"`
	Message string `json:"message"`
	// RequestID names the request the answer is about, when there is one
	// the buyer can poll: the held request of a 409 already_purchased, the
	// undecided request of a 503 outcome_unknown.
	RequestID  string        `json:"request_id,omitempty"`
	RetryAfter time.Duration `json:"-"`
	// body, when set, is the answer already encoded (preEncoded): the
	// constant answers of the hot paths skip the encoder.
	body []byte
}

// preEncoded returns e with its JSON answer encoded once, as c.JSON would
// write it (with its trailing newline). The result is shared: never change
// it.
func preEncoded(e *apiError) *apiError {
	b, err := json.Marshal(e)
	if err != nil {
		panic(err) // a constant answer that cannot encode is a programming error
	}
	e.body = append(b, '\n')
	return e
}

// errSoldOut is the sold-out answer, most of a sale's answers: encoded once
// (the floors' profile had the error path's c.JSON at 3.2% of the ingress'
// CPU in the sold-out phase, which the HTTP floor writes pre-encoded).
var errSoldOut = preEncoded(newErr(http.StatusGone, "sold_out", "sold out"))

func (e *apiError) Error() string { return e.Code + ": " + e.Message }

func newErr(status int, code, msg string) *apiError {
	return &apiError{Status: status, Code: code, Message: msg}
}

func badRequest(code, msg string) *apiError { return newErr(http.StatusBadRequest, code, msg) }

func notFound(msg string) *apiError { return newErr(http.StatusNotFound, "not_found", msg) }

func unavailable(msg string) *apiError {
	return &apiError{Status: http.StatusServiceUnavailable, Code: "unavailable", Message: msg, RetryAfter: time.Second}
}

// echoCodes names Echo's own errors (routing, method) in our error shape.
var echoCodes = map[int]string{
	http.StatusNotFound:              "not_found",
	http.StatusMethodNotAllowed:      "method_not_allowed",
	http.StatusRequestEntityTooLarge: "body_too_large",
	http.StatusUnauthorized:          "unauthorized",
	http.StatusForbidden:             "forbidden",
	http.StatusBadRequest:            "bad_request",
}

// errorHandler writes every error as JSON; anything unexpected is a 500
// whose detail stays in the log.
func (s *Server) errorHandler(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	var ae *apiError
	var he *echo.HTTPError
	switch {
	case errors.As(err, &ae):
	case errors.As(err, &he):
		code, ok := echoCodes[he.Code]
		if !ok {
			code = "error"
		}
		ae = newErr(he.Code, code, http.StatusText(he.Code))
	default:
		s.log.ErrorContext(c.Request().Context(), "internal error", "route", c.Path(), "err", err)
		ae = newErr(http.StatusInternalServerError, "internal", "internal error")
	}
	if ae.RetryAfter > 0 {
		secs := int((ae.RetryAfter + time.Second - 1) / time.Second)
		c.Response().Header().Set("Retry-After", strconv.Itoa(max(1, secs)))
	}
	if ae.Status == http.StatusUnauthorized {
		c.Response().Header().Set("WWW-Authenticate", `Bearer realm="flashsale"`)
	}
	if c.Request().Method == http.MethodHead {
		_ = c.NoContent(ae.Status)
		return
	}
	if ae.body != nil {
		_ = c.JSONBlob(ae.Status, ae.body)
		return
	}
	_ = c.JSON(ae.Status, ae)
}
