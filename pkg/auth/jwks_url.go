package auth

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// Errors of CheckJWKSURL, for errors.Is.
var (
	// ErrJWKSURL: the JWK Set URL is not an absolute http(s) URL with a host.
	ErrJWKSURL = errors.New("auth: not an absolute https URL with a host")
	// ErrJWKSPlainHTTP: the URL is plain http to a host that is not loopback.
	// Whoever is on the path to the identity provider could serve keys of
	// their own and mint any token, admin tokens included.
	ErrJWKSPlainHTTP = errors.New("auth: plain http to a host that is not loopback")
	// ErrJWKSLoopbackHTTP: plain http to a loopback address without the
	// explicit permission (JWKSOptions.AllowLoopbackHTTP).
	ErrJWKSLoopbackHTTP = errors.New("auth: plain http to a loopback address, not allowed")
)

// CheckJWKSURL says whether the keys of the JWK Set at raw can be trusted
// to arrive unchanged: https always, plain http only to a loopback address
// (a literal 127.0.0.0/8 or ::1 address, or "localhost") and only when
// allowLoopbackHTTP is set, as for a sidecar or an identity provider on the
// same host in a test. Every redirect the fetch follows is held to the same
// rule (jwksClient).
func CheckJWKSURL(raw string, allowLoopbackHTTP bool) error {
	u, err := url.ParseRequestURI(raw)
	if err != nil || u.Host == "" || u.Hostname() == "" {
		return ErrJWKSURL
	}
	return checkJWKSScheme(u, allowLoopbackHTTP)
}

func checkJWKSScheme(u *url.URL, allowLoopbackHTTP bool) error {
	switch {
	case u.Scheme == "https":
		return nil
	case u.Scheme != "http":
		return ErrJWKSURL
	case !loopbackHost(u.Hostname()):
		return ErrJWKSPlainHTTP
	case !allowLoopbackHTTP:
		return ErrJWKSLoopbackHTTP
	}
	return nil
}

// loopbackHost reports a host that cannot leave the machine: a literal
// loopback address, or the name localhost (RFC 6761 reserves it for
// loopback). Other names are not resolved here: what a name resolves to is
// up to whoever answers DNS.
func loopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// jwksClient is the HTTP client of every JWK Set fetch: bounded by
// jo.Timeout, trusting jo.RootCAs, and refusing a redirect that
// CheckJWKSURL would refuse, so an https provider that redirects (or is made
// to redirect) to plain http is not followed there.
func jwksClient(jo JWKSOptions) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if jo.RootCAs != nil {
		tr.TLSClientConfig = &tls.Config{RootCAs: jo.RootCAs, MinVersion: tls.VersionTLS12}
	}
	return &http.Client{
		Timeout:   jo.Timeout,
		Transport: tr,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= 10 {
				return errors.New("auth: jwks: stopped after 10 redirects")
			}
			if err := checkJWKSScheme(req.URL, jo.AllowLoopbackHTTP); err != nil {
				return fmt.Errorf("auth: jwks: redirect to %s://%s: %w", req.URL.Scheme, req.URL.Host, err)
			}
			return nil
		},
	}
}
