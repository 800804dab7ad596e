package history

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Transport is an http.RoundTripper that records every buyer call of the
// flashsale API it carries (order, status and long poll, pay, held order)
// into Rec; other calls (admin, health) pass unrecorded. The buyer is read
// from the bearer token's "sub" claim without verifying it: the server
// verifies, and an unverified token only ever earns a 401, a no-op.
//
// The answer's body is read in full before the call is recorded as
// returned, so the return time is after everything the client learns.
type Transport struct {
	Base http.RoundTripper // nil: http.DefaultTransport
	Rec  *Recorder
}

// maxBody bounds the answers read (the API's are small).
const maxBody = 1 << 20

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	in, ok, err := buyerCall(req)
	if err != nil || !ok {
		if err != nil {
			return nil, err
		}
		return base.RoundTrip(req)
	}
	call := t.Rec.Invoke(in)
	resp, err := base.RoundTrip(req)
	if err != nil {
		call.Return(Output{Error: err.Error()})
		return nil, err
	}
	b, rerr := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(b))
	if rerr != nil {
		call.Return(Output{Error: "reading the answer: " + rerr.Error()})
		return resp, nil
	}
	call.Return(parseAnswer(resp.StatusCode, b))
	return resp, nil
}

// buyerCall reads a request as a buyer operation; ok is false for calls
// that are not one. The body of an order is read and put back.
func buyerCall(req *http.Request) (Input, bool, error) {
	p := strings.TrimPrefix(req.URL.Path, "/api/v1/orders")
	if p == req.URL.Path {
		return Input{}, false, nil
	}
	in := Input{User: bearerUser(req.Header.Get("Authorization"))}
	rest := strings.Split(strings.TrimPrefix(p, "/"), "/")
	switch {
	case p == "" && req.Method == http.MethodPost:
		in.Kind, in.Key = Order, req.Header.Get("Idempotency-Key")
		if req.Body != nil {
			b, err := io.ReadAll(req.Body)
			req.Body.Close()
			if err != nil {
				return Input{}, false, err
			}
			req.Body = io.NopCloser(bytes.NewReader(b))
			var body struct {
				ItemID int64 `json:"item_id"`
				Qty    int   `json:"qty"`
			}
			_ = json.Unmarshal(b, &body)
			in.Item, in.Qty = body.ItemID, body.Qty
		}
	case p == "" && req.Method == http.MethodGet:
		in.Kind = Held
		in.Item, _ = strconv.ParseInt(req.URL.Query().Get("item_id"), 10, 64)
	case len(rest) == 1 && rest[0] != "" && req.Method == http.MethodGet:
		in.Kind, in.RID = Status, rest[0]
		if w := req.URL.Query().Get("wait"); w != "" {
			in.Wait, _ = time.ParseDuration(w)
		}
	case len(rest) == 2 && rest[1] == "pay" && req.Method == http.MethodPost:
		in.Kind, in.RID = Pay, rest[0]
	default:
		return Input{}, false, nil
	}
	return in, true, nil
}

// parseAnswer reads the fields of any of the API's answers that the model
// uses.
func parseAnswer(code int, b []byte) Output {
	var body struct {
		Error     string `json:"error"`
		RequestID string `json:"request_id"`
		Status    string `json:"status"`
		Qty       int    `json:"qty"`
	}
	out := Output{Code: code}
	if err := json.Unmarshal(b, &body); err != nil {
		// An answer we cannot read tells nothing (Code 0): for an order
		// or a pay, it may still have taken effect.
		return Output{Error: "unreadable answer to " + strconv.Itoa(code)}
	}
	out.Error, out.RID, out.Status, out.Qty = body.Error, body.RequestID, body.Status, body.Qty
	return out
}

// bearerUser is the "sub" claim of a bearer JWT, 0 if there is none.
func bearerUser(h string) int64 {
	tok, ok := strings.CutPrefix(h, "Bearer ")
	if !ok {
		return 0
	}
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return 0
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return 0
	}
	var c struct {
		Sub string `json:"sub"`
	}
	if json.Unmarshal(b, &c) != nil {
		return 0
	}
	n, _ := strconv.ParseInt(c.Sub, 10, 64)
	return n
}

// CloseIdleConnections closes the base transport's idle connections (what
// http.Client.CloseIdleConnections asks of its transport).
func (t *Transport) CloseIdleConnections() {
	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	if c, ok := base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}
