package auth

import (
	"crypto/x509"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/golang-jwt/jwt/v5"
)

// TestCheckJWKSURL: https always; plain http only to a literal loopback
// address or localhost, and only with the permission; nothing else.
func TestCheckJWKSURL(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		url   string
		allow bool
		want  error
	}{
		{"https://id.example/certs", false, nil},
		{"https://127.0.0.1:8443/certs", false, nil},
		{"http://127.0.0.1:8080/certs", true, nil},
		{"http://127.9.9.9/certs", true, nil},
		{"http://[::1]:8080/certs", true, nil},
		{"http://LOCALHOST/certs", true, nil},
		{"http://127.0.0.1:8080/certs", false, ErrJWKSLoopbackHTTP},
		{"http://keycloak:8080/certs", false, ErrJWKSPlainHTTP},
		{"http://keycloak:8080/certs", true, ErrJWKSPlainHTTP},
		{"http://10.0.0.7/certs", true, ErrJWKSPlainHTTP},
		{"http://127.0.0.1.evil.example/certs", true, ErrJWKSPlainHTTP},
		{"http://localhost.evil.example/certs", true, ErrJWKSPlainHTTP},
		{"ftp://id.example/certs", true, ErrJWKSURL},
		{"file:///etc/jwks.json", true, ErrJWKSURL},
		{"https:///certs", false, ErrJWKSURL},
		{"/certs", false, ErrJWKSURL},
		{"not a url", false, ErrJWKSURL},
	} {
		if err := CheckJWKSURL(c.url, c.allow); !errors.Is(err, c.want) {
			t.Errorf("CheckJWKSURL(%q, %v) = %v, want %v", c.url, c.allow, err, c.want)
		}
	}
}

// TestJWKSRefusesPlainHTTP: the verifier itself refuses a plain http URL,
// whatever its caller validated, and fetches nothing from it.
func TestJWKSRefusesPlainHTTP(t *testing.T) {
	t.Parallel()
	p := newIDP(t, jwksJSON(t, pubKey{kid: "ec-1", alg: jwkset.AlgES256, key: &testKeys().ec.PublicKey}))
	_, err := NewJWKSVerifier(t.Context(), p.url(), JWKSOptions{Log: slog.New(slog.DiscardHandler)})
	if !errors.Is(err, ErrJWKSLoopbackHTTP) {
		t.Fatalf("plain http to loopback without permission: err = %v, want ErrJWKSLoopbackHTTP", err)
	}
	if _, err := NewJWKSVerifier(t.Context(), "http://id.example/certs", JWKSOptions{AllowLoopbackHTTP: true}); !errors.Is(err, ErrJWKSPlainHTTP) {
		t.Fatalf("plain http to another host: err = %v, want ErrJWKSPlainHTTP", err)
	}
	if n := p.hits.Load(); n != 0 {
		t.Errorf("the refused URL was fetched %d times", n)
	}
}

// TestJWKSHTTPSAndNoDowngrade: keys come over https from a provider behind
// a private CA (RootCAs), and a provider that redirects to plain http is
// not followed there: no keys, every token refused, the http server never
// asked.
func TestJWKSHTTPSAndNoDowngrade(t *testing.T) {
	t.Parallel()
	k := testKeys()
	set := jwksJSON(t, pubKey{kid: "ec-1", alg: jwkset.AlgES256, key: &k.ec.PublicKey})
	tok := mint(t, jwt.SigningMethodES256, k.ec, "ec-1", claimsFor())
	plain := newIDP(t, set) // the keys an attacker on the path would serve

	var redirectTo atomic.Pointer[string] // nil: serve the keys
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if to := redirectTo.Load(); to != nil {
			http.Redirect(w, r, *to, http.StatusFound)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(set)
	}))
	t.Cleanup(srv.Close)
	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate())
	jo := JWKSOptions{Refresh: time.Hour, Timeout: time.Second, RootCAs: roots, Log: slog.New(slog.DiscardHandler)}

	v, err := NewJWKSVerifier(t.Context(), srv.URL+"/certs", jo, WithIssuer(testIssuer))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.Verify(tok); err != nil {
		t.Fatalf("token signed by the https provider's key refused: %v", err)
	}

	for _, c := range []struct {
		to    string
		allow bool
	}{
		{plain.url(), false},              // to loopback http without the permission
		{"http://id.example/certs", true}, // to another host's http, even with it
		{"ftp://id.example/certs", true},  // to no http at all
	} {
		redirectTo.Store(&c.to)
		jo.AllowLoopbackHTTP = c.allow
		v, err := NewJWKSVerifier(t.Context(), srv.URL+"/certs", jo, WithIssuer(testIssuer))
		if err != nil {
			t.Fatal(err)
		}
		if err := v.Ready(t.Context()); !errors.Is(err, ErrNoKeys) {
			t.Errorf("redirected to %s (allow %v): Ready = %v, want ErrNoKeys", c.to, c.allow, err)
		}
		if _, err := v.Verify(tok); err == nil {
			t.Errorf("redirected to %s (allow %v): a token was accepted", c.to, c.allow)
		}
	}
	if n := plain.hits.Load(); n != 0 {
		t.Errorf("the plain http provider was asked %d times", n)
	}
}
