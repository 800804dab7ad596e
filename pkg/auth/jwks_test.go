package auth

import (
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/golang-jwt/jwt/v5"
)

// TestJWKSAcceptsProviderTokens: RS256 and ES256 tokens signed with
// published keys pass, with or without kid, and the principal is read from
// them; Ready answers nil once the keys are in.
func TestJWKSAcceptsProviderTokens(t *testing.T) {
	t.Parallel()
	k := testKeys()
	p := newIDP(t, jwksJSON(t,
		pubKey{kid: "rsa-a", alg: jwkset.AlgRS256, use: jwkset.UseSig, key: &k.rsaA.PublicKey},
		pubKey{kid: "ec-1", alg: jwkset.AlgES256, key: &k.ec.PublicKey}, // no "use", as some providers publish
	))
	v := newTestJWKSVerifier(t, p, JWKSOptions{})
	if err := v.Ready(t.Context()); err != nil {
		t.Fatalf("Ready after a successful first fetch: %v", err)
	}
	for name, tok := range map[string]string{
		"RS256":        mint(t, jwt.SigningMethodRS256, k.rsaA, "rsa-a", claimsFor()),
		"ES256":        mint(t, jwt.SigningMethodES256, k.ec, "ec-1", claimsFor()),
		"RS256 no kid": mint(t, jwt.SigningMethodRS256, k.rsaA, "", claimsFor()),
		"ES256 no kid": mint(t, jwt.SigningMethodES256, k.ec, "", claimsFor()),
	} {
		if pr, err := v.Verify(tok); err != nil || pr.UserID != 42 || pr.Admin {
			t.Errorf("%s: %+v %v, want user 42, not admin", name, pr, err)
		}
	}
	if hits := p.hits.Load(); hits != 1 {
		t.Errorf("JWKS fetched %d times for known keys, want 1 (the start-up fetch)", hits)
	}
}

// TestJWKSPolicy: a token of the right key still needs this service's
// audience, the configured issuer, iat and a bounded lifetime.
func TestJWKSPolicy(t *testing.T) {
	t.Parallel()
	k := testKeys()
	p := newIDP(t, jwksJSON(t, pubKey{kid: "ec-1", alg: jwkset.AlgES256, key: &k.ec.PublicKey}))
	v := newTestJWKSVerifier(t, p, JWKSOptions{}, WithMaxTTL(time.Hour))
	es := func(c jwt.MapClaims) string { return mint(t, jwt.SigningMethodES256, k.ec, "ec-1", c) }
	if _, err := v.Verify(es(claimsFor())); err != nil {
		t.Fatalf("good token refused: %v", err)
	}
	for name, tok := range map[string]string{
		"wrong iss":  es(claimsFor("iss", "https://id.test/realms/other")),
		"no iss":     es(claimsFor("iss", nil)),
		"wrong aud":  es(claimsFor("aud", "account")),
		"no aud":     es(claimsFor("aud", nil)),
		"no iat":     es(claimsFor("iat", nil)),
		"expired":    es(claimsFor("iat", time.Now().Add(-time.Hour).Unix(), "exp", time.Now().Add(-time.Minute).Unix())),
		"over cap":   es(claimsFor("exp", time.Now().Add(2*time.Hour).Unix())),
		"uuid sub":   es(claimsFor("sub", "f81d4fae-7dec-11d0-a765-00a0c91e6bf6")),
		"tampered":   es(claimsFor())[:40] + "x" + es(claimsFor())[41:],
		"not a jwt":  "a.b.c",
		"empty":      "",
		"nbf future": es(claimsFor("nbf", time.Now().Add(time.Hour).Unix())),
	} {
		if _, err := v.Verify(tok); !errors.Is(err, ErrUnauthenticated) {
			t.Errorf("%s: err = %v, want ErrUnauthenticated", name, err)
		}
	}
}

// TestJWKSAlgConfusion: with a JWKS, HS256 is refused whatever its secret,
// in particular the published public key's own bytes (the classic attack on
// verifiers that hand "the key" to whichever algorithm the token names),
// and a key's "alg" must be the token's.
func TestJWKSAlgConfusion(t *testing.T) {
	t.Parallel()
	k := testKeys()
	rsaJWK := pubKey{kid: "rsa-a", alg: jwkset.AlgRS256, use: jwkset.UseSig, key: &k.rsaA.PublicKey}
	bare := pubKey{kid: "rsa-bare", key: &k.rsaA.PublicKey} // no alg: the key type alone decides
	set := jwksJSON(t, rsaJWK, bare, pubKey{kid: "ec-1", alg: jwkset.AlgES256, key: &k.ec.PublicKey})
	// A symmetric key in the set (a provider misconfigured, or a set an
	// attacker could append to) must not make HS256 acceptable either.
	var withOct map[string][]map[string]any
	if err := json.Unmarshal(set, &withOct); err != nil {
		t.Fatal(err)
	}
	octSecret := []byte("0123456789abcdef0123456789abcdef")
	withOct["keys"] = append(withOct["keys"], map[string]any{
		"kty": "oct", "kid": "oct-1", "alg": "HS256", "k": base64.RawURLEncoding.EncodeToString(octSecret)})
	body, _ := json.Marshal(withOct)
	p := newIDP(t, body)
	v := newTestJWKSVerifier(t, p, JWKSOptions{})
	if _, err := v.Verify(mint(t, jwt.SigningMethodRS256, k.rsaA, "rsa-bare", claimsFor())); err != nil {
		t.Fatalf("RS256 with the alg-less key refused: %v", err)
	}

	der, err := x509.MarshalPKIXPublicKey(&k.rsaA.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
	pkcs1 := pem.EncodeToMemory(&pem.Block{Type: "RSA PUBLIC KEY", Bytes: x509.MarshalPKCS1PublicKey(&k.rsaA.PublicKey)})
	jwkBytes := jwksJSON(t, rsaJWK)
	hs := func(secret []byte, kid string) string {
		return mint(t, jwt.SigningMethodHS256, secret, kid, claimsFor())
	}
	bad := map[string]string{
		"HS256, PEM public key, kid rsa-a":     hs(pemBytes, "rsa-a"),
		"HS256, PEM public key, alg-less kid":  hs(pemBytes, "rsa-bare"),
		"HS256, PEM public key, no kid":        hs(pemBytes, ""),
		"HS256, PKCS1 PEM, kid rsa-a":          hs(pkcs1, "rsa-a"),
		"HS256, DER public key, kid rsa-a":     hs(der, "rsa-a"),
		"HS256, modulus bytes, kid rsa-a":      hs(k.rsaA.PublicKey.N.Bytes(), "rsa-a"),
		"HS256, the JWKS document, kid rsa-a":  hs(jwkBytes, "rsa-a"),
		"HS256, the published oct key":         hs(octSecret, "oct-1"),
		"HS512, PEM public key":                mint(t, jwt.SigningMethodHS512, pemBytes, "rsa-a", claimsFor()),
		"alg none":                             mint(t, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, "rsa-a", claimsFor()),
		"RS256 token naming the ES256 key":     mint(t, jwt.SigningMethodRS256, k.rsaA, "ec-1", claimsFor()),
		"PS256 token naming an RS256-only key": mint(t, jwt.SigningMethodPS256, k.rsaA, "rsa-a", claimsFor()),
	}
	for name, tok := range bad {
		if _, err := v.Verify(tok); !errors.Is(err, ErrUnauthenticated) {
			t.Errorf("%s: err = %v, want ErrUnauthenticated", name, err)
		}
	}
}

// TestJWKSEncryptionKeyNotForSignatures: a key published with "use": "enc"
// does not verify tokens.
func TestJWKSEncryptionKeyNotForSignatures(t *testing.T) {
	t.Parallel()
	k := testKeys()
	p := newIDP(t, jwksJSON(t, pubKey{kid: "enc-1", alg: jwkset.AlgRS256, use: jwkset.UseEnc, key: &k.rsaB.PublicKey}))
	v := newTestJWKSVerifier(t, p, JWKSOptions{})
	if _, err := v.Verify(mint(t, jwt.SigningMethodRS256, k.rsaB, "enc-1", claimsFor())); !errors.Is(err, ErrUnauthenticated) {
		t.Errorf("token signed with an encryption key: err = %v, want ErrUnauthenticated", err)
	}
}

// TestJWKSRotation: a key rotated in after the last fetch is accepted at its
// first token (which triggers one refresh), and a key rotated out stops
// working after the next background refresh.
func TestJWKSRotation(t *testing.T) {
	t.Parallel()
	k := testKeys()
	a := pubKey{kid: "rsa-a", alg: jwkset.AlgRS256, use: jwkset.UseSig, key: &k.rsaA.PublicKey}
	b := pubKey{kid: "rsa-b", alg: jwkset.AlgRS256, use: jwkset.UseSig, key: &k.rsaB.PublicKey}
	p := newIDP(t, jwksJSON(t, a))
	v := newTestJWKSVerifier(t, p, JWKSOptions{Refresh: time.Hour, MinRefresh: time.Minute})
	tokA := mint(t, jwt.SigningMethodRS256, k.rsaA, "rsa-a", claimsFor())
	tokB := mint(t, jwt.SigningMethodRS256, k.rsaB, "rsa-b", claimsFor())
	if _, err := v.Verify(tokA); err != nil {
		t.Fatalf("key a: %v", err)
	}

	p.serve(jwksJSON(t, a, b)) // the provider rotates b in and signs with it
	before := p.hits.Load()
	if _, err := v.Verify(tokB); err != nil {
		t.Fatalf("first token of the rotated-in key b refused: %v", err)
	}
	if got := p.hits.Load() - before; got != 1 {
		t.Errorf("unknown kid caused %d fetches, want 1", got)
	}
	if _, err := v.Verify(tokB); err != nil {
		t.Fatalf("second token of key b: %v", err)
	}
	if got := p.hits.Load() - before; got != 1 {
		t.Errorf("a known kid caused a fetch: %d in all, want 1", got)
	}

	// Rotating a out is seen by the background refresh.
	p2 := newIDP(t, jwksJSON(t, a, b))
	v2 := newTestJWKSVerifier(t, p2, JWKSOptions{Refresh: 50 * time.Millisecond, MinRefresh: time.Minute})
	if _, err := v2.Verify(tokA); err != nil {
		t.Fatalf("key a before it is rotated out: %v", err)
	}
	p2.serve(jwksJSON(t, b))
	eventually(t, 5*time.Second, "a token of the rotated-out key a is still accepted", func() bool {
		_, err := v2.Verify(tokA)
		return errors.Is(err, ErrUnauthenticated)
	})
	if _, err := v2.Verify(tokB); err != nil {
		t.Fatalf("key b after a rotated out: %v", err)
	}
}

// TestJWKSUnknownKidRateLimited: a token with a kid the provider never
// published is refused; the first one costs one fetch, and a flood of
// others (each a new kid) costs none within MinRefresh and none of them
// waits: the provider hangs during the flood and Timeout is a minute, so a
// token that waited for the rate limiter or the provider would hold the
// flood past its hang guard.
func TestJWKSUnknownKidRateLimited(t *testing.T) {
	t.Parallel()
	k := testKeys()
	p := newIDP(t, jwksJSON(t, pubKey{kid: "ec-1", alg: jwkset.AlgES256, key: &k.ec.PublicKey}))
	const timeout = time.Minute
	v := newTestJWKSVerifier(t, p, JWKSOptions{Refresh: time.Hour, MinRefresh: time.Hour, Timeout: timeout})
	bogus := func(i int) string {
		return mint(t, jwt.SigningMethodES256, k.stranger, fmt.Sprintf("bogus-%d", i), claimsFor())
	}
	if _, err := v.Verify(bogus(0)); !errors.Is(err, ErrUnauthenticated) {
		t.Fatalf("unknown kid: err = %v, want ErrUnauthenticated", err)
	}
	if hits := p.hits.Load(); hits != 2 {
		t.Fatalf("JWKS fetched %d times after one unknown kid, want 2 (start-up + one refresh)", hits)
	}
	const n = 500
	toks := make([]string, n)
	for i := range toks {
		toks[i] = bogus(i + 1)
	}
	p.hangUp()
	within(t, timeout/2, "the flood of bogus kids: one waited for the rate limiter or the provider", func() {
		var wg sync.WaitGroup
		for w := 0; w < 8; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				for i := w; i < n; i += 8 {
					if _, err := v.Verify(toks[i]); !errors.Is(err, ErrUnauthenticated) {
						t.Errorf("bogus kid %d: err = %v, want ErrUnauthenticated", i, err)
					}
				}
			}(w)
		}
		wg.Wait()
	})
	if hits := p.hits.Load(); hits != 2 {
		t.Errorf("%d bogus kids caused %d more fetches, want 0 within MinRefresh", n, hits-2)
	}
	// The good key is unaffected.
	if _, err := v.Verify(mint(t, jwt.SigningMethodES256, k.ec, "ec-1", claimsFor())); err != nil {
		t.Errorf("known key during the flood: %v", err)
	}
}

// TestJWKSProviderDown: once the keys are cached, tokens of known keys keep
// passing, without waiting, while the provider refuses, hangs (the
// background refreshes hang with it) or is gone; a token with an unknown
// kid waits at most Timeout, once per MinRefresh.
func TestJWKSProviderDown(t *testing.T) {
	t.Parallel()
	k := testKeys()
	set := jwksJSON(t,
		pubKey{kid: "rsa-a", alg: jwkset.AlgRS256, use: jwkset.UseSig, key: &k.rsaA.PublicKey},
		pubKey{kid: "ec-1", alg: jwkset.AlgES256, key: &k.ec.PublicKey})
	p := newIDP(t, set)
	// A minute: a refresh that reaches the hung provider stays there until
	// the test releases it, and a token that waited on it would too.
	const timeout = time.Minute
	v := newTestJWKSVerifier(t, p, JWKSOptions{Refresh: 20 * time.Millisecond, MinRefresh: time.Hour, Timeout: timeout})
	toks := []string{
		mint(t, jwt.SigningMethodRS256, k.rsaA, "rsa-a", claimsFor()),
		mint(t, jwt.SigningMethodES256, k.ec, "ec-1", claimsFor()),
	}
	// verifyUntil verifies the known tokens until cond holds, then 100 more
	// while it still does; the bound is a hang guard, half the Timeout a
	// token that waited on the provider would take.
	verifyUntil := func(phase string, cond func() bool) {
		t.Helper()
		n := 0
		within(t, timeout/2, phase+": a cached-key token waited on the provider", func() {
			for more := 100; more > 0; n++ {
				if cond() {
					more--
				}
				if _, err := v.Verify(toks[n%2]); err != nil {
					t.Errorf("%s: cached key refused: %v", phase, err)
					return
				}
			}
		})
		t.Logf("%s: %d tokens verified", phase, n)
	}
	refreshed := func(since int64) func() bool { return func() bool { return p.hits.Load() >= since+2 } }

	p.fail(500)
	verifyUntil("provider answers 500", refreshed(p.hits.Load()))

	// Two background refreshes in turn reach the hung provider and stay
	// there while the tokens are verified; each then fails (released with
	// a 503) and the next one hangs.
	for i := range 2 {
		p.hangUp()
		verifyUntil(fmt.Sprintf("provider hangs, refresh %d held", i+1), func() bool { return p.hung.Load() > 0 })
		p.release()
		eventually(t, 10*time.Second, "the released refresh is still held", func() bool { return p.hung.Load() == 0 })
	}

	p.srv.Close() // gone: connection refused
	verifyUntil("provider gone", func() bool { return true })

	// An unknown kid with the provider hung, on a verifier whose keys are
	// cached and whose Timeout is short: the one refresh it may trigger is
	// bounded by Timeout, and the next unknown kid triggers none. The bound
	// on each is a hang guard, ten times the Timeout: the provider never
	// answers.
	const short = 500 * time.Millisecond
	p2 := newIDP(t, set)
	v2 := newTestJWKSVerifier(t, p2, JWKSOptions{Refresh: time.Hour, MinRefresh: time.Hour, Timeout: short})
	p2.hangUp()
	for _, kid := range []string{"new-kid", "newer-kid"} {
		var err error
		within(t, 10*short, "unknown kid "+kid+" with the provider hung, past its Timeout", func() {
			_, err = v2.Verify(mint(t, jwt.SigningMethodES256, k.stranger, kid, claimsFor()))
		})
		if !errors.Is(err, ErrUnauthenticated) {
			t.Fatalf("unknown kid %s with the provider hung: err = %v", kid, err)
		}
	}
	if hits := p2.hits.Load(); hits != 2 {
		t.Errorf("two unknown kids with the provider hung: %d fetches in all, want 2 (start-up + one refresh): the rate limit did not hold", hits)
	}
}

// within runs f and fails the test if it has not returned after d: a hang
// guard for a call that would otherwise wait on a provider that never
// answers (f keeps running; the test's cleanup releases the provider).
func within(t *testing.T, d time.Duration, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("still waiting after %v: %s", d, what)
	}
}

// TestJWKSStartWithProviderDown: the first fetch failing (or hanging) does
// not stop the verifier from being built, within Timeout; it refuses every
// token and is not Ready until the provider answers, then the first token
// with a kid brings the keys.
func TestJWKSStartWithProviderDown(t *testing.T) {
	t.Parallel()
	k := testKeys()
	set := jwksJSON(t, pubKey{kid: "ec-1", alg: jwkset.AlgES256, key: &k.ec.PublicKey})
	tok := mint(t, jwt.SigningMethodES256, k.ec, "ec-1", claimsFor())

	p := newIDP(t, set)
	p.hangUp()
	const timeout = 300 * time.Millisecond
	var v *Verifier
	var err error
	// A hang guard, ten times the Timeout: the provider never answers.
	within(t, 10*timeout, "start-up with the provider hung, past its Timeout", func() {
		v, err = buildTestJWKSVerifier(t, p, JWKSOptions{Refresh: time.Hour, MinRefresh: 100 * time.Millisecond, Timeout: timeout})
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Ready(t.Context()); !errors.Is(err, ErrNoKeys) {
		t.Errorf("Ready without keys = %v, want ErrNoKeys", err)
	}
	p.release()
	p.fail(503)
	if _, err := v.Verify(tok); !errors.Is(err, ErrUnauthenticated) {
		t.Fatalf("token with no keys cached: err = %v, want ErrUnauthenticated", err)
	}

	p.serve(set) // the provider is back
	eventually(t, 5*time.Second, "the token is still refused after the provider came back", func() bool {
		_, err := v.Verify(tok)
		return err == nil
	})
	if err := v.Ready(t.Context()); err != nil {
		t.Errorf("Ready with keys = %v", err)
	}
}

// TestJWKSBadURL: an unusable URL is an error at construction.
func TestJWKSBadURL(t *testing.T) {
	t.Parallel()
	if _, err := NewJWKSVerifier(t.Context(), "not a url", JWKSOptions{}); err == nil {
		t.Error("NewJWKSVerifier accepted a URL that is none")
	}
}
