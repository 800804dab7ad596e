package auth

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/golang-jwt/jwt/v5"
)

// testIssuer and the default audience are what the JWKS tests' verifiers
// require, as a realm of Keycloak would issue them.
const testIssuer = "https://id.test/realms/shop"

// testKeys are generated once per run: RSA generation is the slow part.
type testKeySet struct {
	rsaA, rsaB *rsa.PrivateKey
	ec         *ecdsa.PrivateKey
	stranger   *ecdsa.PrivateKey // never published
}

var testKeys = sync.OnceValue(func() testKeySet {
	mustRSA := func() *rsa.PrivateKey {
		k, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			panic(err)
		}
		return k
	}
	mustEC := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			panic(err)
		}
		return k
	}
	return testKeySet{rsaA: mustRSA(), rsaB: mustRSA(), ec: mustEC(), stranger: mustEC()}
})

// pubKey is one key the test identity provider publishes.
type pubKey struct {
	kid string
	alg jwkset.ALG // "" = the JWK carries no alg
	use jwkset.USE
	key any // a public key
}

// jwksJSON renders keys as a JWK Set the way an identity provider serves it.
func jwksJSON(t *testing.T, keys ...pubKey) []byte {
	t.Helper()
	store := jwkset.NewMemoryStorage()
	for _, k := range keys {
		jwk, err := jwkset.NewJWKFromKey(k.key, jwkset.JWKOptions{
			Metadata: jwkset.JWKMetadataOptions{KID: k.kid, ALG: k.alg, USE: k.use},
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := store.KeyWrite(context.Background(), jwk); err != nil {
			t.Fatal(err)
		}
	}
	b, err := store.JSONPublic(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// idp is a local JWKS endpoint whose answer the test changes: a key set,
// an error status, or a hang (the request blocks until released).
type idp struct {
	srv  *httptest.Server
	hits atomic.Int64
	hung atomic.Int64 // requests held by a hang now

	mu     sync.Mutex
	body   []byte
	status int           // 0 = 200 with body
	hang   chan struct{} // non-nil: requests block until it is closed
}

func newIDP(t *testing.T, body []byte) *idp {
	t.Helper()
	p := &idp{body: body}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.hits.Add(1)
		p.mu.Lock()
		body, status, hang := p.body, p.status, p.hang
		p.mu.Unlock()
		if hang != nil {
			p.hung.Add(1)
			select {
			case <-hang:
			case <-r.Context().Done():
			}
			p.hung.Add(-1)
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		if status != 0 {
			w.WriteHeader(status)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	}))
	t.Cleanup(p.srv.Close)
	t.Cleanup(p.release) // runs before Close, so Close has no hung handler to wait for
	return p
}

func (p *idp) url() string { return p.srv.URL + "/realms/shop/protocol/openid-connect/certs" }

// serve makes the endpoint answer body.
func (p *idp) serve(body []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.body, p.status = body, 0
}

// fail makes the endpoint answer status.
func (p *idp) fail(status int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.status = status
}

// hangUp makes every request block until release.
func (p *idp) hangUp() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.hang == nil {
		p.hang = make(chan struct{})
	}
}

func (p *idp) release() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.hang != nil {
		close(p.hang)
		p.hang = nil
	}
}

// claimsFor returns a payload the JWKS tests' policy accepts, with the given
// changes; a nil value deletes the claim.
func claimsFor(kv ...any) jwt.MapClaims {
	now := time.Now()
	return changed(jwt.MapClaims{"sub": "42", "aud": DefaultAudience, "iss": testIssuer,
		"iat": now.Unix(), "exp": now.Add(5 * time.Minute).Unix()}, kv...)
}

// changed is c with kv's changes, name, value pairs: a nil value deletes
// the claim.
func changed(c jwt.MapClaims, kv ...any) jwt.MapClaims {
	for i := 0; i < len(kv); i += 2 {
		if kv[i+1] == nil {
			delete(c, kv[i].(string))
		} else {
			c[kv[i].(string)] = kv[i+1]
		}
	}
	return c
}

// mint signs c with key under method, naming kid in the header ("" = none).
func mint(t *testing.T, method jwt.SigningMethod, key any, kid string, c jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(method, c)
	if kid != "" {
		tok.Header["kid"] = kid
	}
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// newTestJWKSVerifier builds a verifier on p with the tests' policy plus
// opts, stopped with the test.
func newTestJWKSVerifier(t *testing.T, p *idp, jo JWKSOptions, opts ...Option) *Verifier {
	t.Helper()
	v, err := buildTestJWKSVerifier(t, p, jo, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// buildTestJWKSVerifier is newTestJWKSVerifier returning its error, for a
// goroutine (which may not stop the test).
func buildTestJWKSVerifier(t *testing.T, p *idp, jo JWKSOptions, opts ...Option) (*Verifier, error) {
	opts = append([]Option{WithIssuer(testIssuer)}, opts...)
	if jo.Log == nil && !testing.Verbose() {
		jo.Log = slog.New(slog.DiscardHandler) // refresh failures are the point of several tests
	}
	jo.AllowLoopbackHTTP = true // the test provider is plain http on 127.0.0.1
	return NewJWKSVerifier(t.Context(), p.url(), jo, opts...)
}

// eventually polls cond every 10 ms until it holds or d has passed. It is
// testenv.Eventually's loop, which this package's own tests cannot import:
// testenv imports pkg/auth.
func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for deadline := time.Now().Add(d); !cond(); <-tick.C {
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %s", d, what)
		}
	}
}
