package testenv

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
)

// JSONRequest is a request to url with in, unless nil, as its JSON body
// (and Content-Type), authorization, unless empty, as its Authorization
// header (a whole value: "Bearer ..."), and the fields of header: the calls
// the suites that drive the deployables over HTTP (faults, scenarios) send.
func JSONRequest(ctx context.Context, method, url, authorization string, in any, header map[string]string) (*http.Request, error) {
	var body io.Reader
	if in != nil {
		b, _ := json.Marshal(in)
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, body)
	if err != nil {
		return nil, err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	return req, nil
}
