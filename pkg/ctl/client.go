package ctl

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// APIError is an error answer of the API: {"error": code, "message": text}.
type APIError struct {
	Status  int
	Code    string `json:"error"`
	Message string `json:"message"`
}

func (e *APIError) Error() string {
	return fmt.Sprintf("%s (HTTP %d): %s", e.Code, e.Status, e.Message)
}

// errUnreachable marks a call that got no API answer.
var errUnreachable = errors.New("server unreachable")

// client is one server and token.
type client struct {
	base  *url.URL
	token string
	http  *http.Client
}

func (o *options) client() (*client, error) { return o.newClient(true) }

// newClient is the client of the resolved server; a public read (needToken
// false) goes without a token when none is set, so a buyer can run it too.
func (o *options) newClient(needToken bool) (*client, error) {
	tok := o.resolvedToken()
	if tok == "" && needToken {
		return nil, usageErr("no admin token: pass --token or set FLASHSALE_TOKEN (for the local stack: export FLASHSALE_TOKEN=$(flashsalectl token --admin))")
	}
	u, err := url.Parse(o.resolvedServer())
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, usageErr("server %q: expected an http(s) URL such as %s", o.resolvedServer(), DefaultServer)
	}
	return &client{base: u, token: tok, http: &http.Client{Timeout: o.timeout}}, nil
}

// do sends one request (body JSON-encoded unless nil, with ctype) and
// decodes a 2xx answer into out (a *json.RawMessage keeps it as sent).
func (c *client) do(ctx context.Context, method, path string, q url.Values, body any, ctype string, out any) error {
	u := c.base.JoinPath(path)
	u.RawQuery = q.Encode()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
	if err != nil {
		return err
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", ctype)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("%w: %s %s: %v", errUnreachable, method, u.Redacted(), err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return fmt.Errorf("%w: %s %s: %v", errUnreachable, method, u.Redacted(), err)
	}
	if resp.StatusCode >= 300 {
		ae := &APIError{Status: resp.StatusCode}
		if json.Unmarshal(raw, ae) != nil || ae.Code == "" {
			return fmt.Errorf("%w: %s %s answered %d, not an API error: %.200q", errUnreachable, method, u.Redacted(), resp.StatusCode, raw)
		}
		return ae
	}
	if out == nil {
		return nil
	}
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		return fmt.Errorf("%w: %s %s answered %s, not JSON", errUnreachable, method, u.Redacted(), resp.Header.Get("Content-Type"))
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("%w: %s %s: bad JSON: %v", errUnreachable, method, u.Redacted(), err)
	}
	return nil
}

// get reads path into out and, for -o json, returns the answer as sent.
func (o *options) get(cmd interface{ Context() context.Context }, path string, q url.Values, out any) (json.RawMessage, error) {
	return o.call(cmd, http.MethodGet, path, q, nil, "", out)
}

// send makes a write (PUT, PATCH, POST) and returns the answer as sent.
func (o *options) send(cmd interface{ Context() context.Context }, method, path string, body any, ctype string, out any) (json.RawMessage, error) {
	return o.call(cmd, method, path, nil, body, ctype, out)
}

// getPublic reads a public path (one the API serves without a token).
func (o *options) getPublic(cmd interface{ Context() context.Context }, path string, out any) (json.RawMessage, error) {
	c, err := o.newClient(false)
	if err != nil {
		return nil, err
	}
	return c.call(cmd, http.MethodGet, path, nil, nil, "", out)
}

// call is one request of a command: the answer as sent, and decoded into
// out when out is not nil.
func (o *options) call(cmd interface{ Context() context.Context }, method, path string, q url.Values, body any, ctype string, out any) (json.RawMessage, error) {
	c, err := o.client()
	if err != nil {
		return nil, err
	}
	return c.call(cmd, method, path, q, body, ctype, out)
}

// call is one request on c, as options.call describes it.
func (c *client) call(cmd interface{ Context() context.Context }, method, path string, q url.Values, body any, ctype string, out any) (json.RawMessage, error) {
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	var raw json.RawMessage
	if err := c.do(ctx, method, path, q, body, ctype, &raw); err != nil {
		return nil, err
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			return nil, fmt.Errorf("%w: %s: %v", errUnreachable, path, err)
		}
	}
	return raw, nil
}
