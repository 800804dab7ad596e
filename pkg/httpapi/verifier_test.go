package httpapi

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/golang-jwt/jwt/v5"

	"github.com/flashsale-dev/flashsale/pkg/auth"
	"github.com/flashsale-dev/flashsale/pkg/config"
	"github.com/flashsale-dev/flashsale/pkg/config/jwtconfig"
)

// TestNewVerifierFromSettings: the ingress's settings choose the key source
// and claim names: with FLASHSALE_JWT_JWKS_URL an ES256 token of the JWK Set
// passes, with its role read from the configured claim, and an HS256 token
// does not even with the secret also at hand; without it, HS256 passes.
// Needs no stack.
func TestNewVerifierFromSettings(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	jwk, err := jwkset.NewJWKFromKey(&key.PublicKey, jwkset.JWKOptions{
		Metadata: jwkset.JWKMetadataOptions{KID: "k1", ALG: jwkset.AlgES256, USE: jwkset.UseSig}})
	if err != nil {
		t.Fatal(err)
	}
	set := jwkset.NewMemoryStorage()
	if err := set.KeyWrite(context.Background(), jwk); err != nil {
		t.Fatal(err)
	}
	body, err := set.JSONPublic(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(body) }))
	defer srv.Close()

	const secret = "0123456789abcdef0123"
	in := config.Ingress{JWT: jwtconfig.JWT{JWTJWKSURL: srv.URL, JWTJWKSAllowLoopbackHTTP: true, JWTAudience: "shop", JWTIssuer: "https://id.test",
		JWTMaxTTL: time.Hour, JWTJWKSRefresh: time.Hour, JWTJWKSMinRefresh: time.Minute, JWTJWKSTimeout: time.Second,
		JWTUserClaim: "uid", JWTRoleClaim: "realm_access.roles", JWTAdminRole: "ops"}}
	now := time.Now()
	tok := jwt.NewWithClaims(jwt.SigningMethodES256, jwt.MapClaims{"sub": "a-uuid", "uid": "3", "aud": "shop",
		"iss": "https://id.test", "iat": now.Unix(), "exp": now.Add(time.Minute).Unix(),
		"realm_access": map[string]any{"roles": []string{"ops"}}})
	tok.Header["kid"] = "k1"
	es, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	v := newVerifier(in, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if p, err := v.Verify(es); err != nil || p.UserID != 3 || !p.Admin {
		t.Fatalf("ES256 token of the JWK Set: %+v %v, want user 3, admin", p, err)
	}
	hs, err := auth.Sign(secret, 3, "ops", time.Minute, auth.WithAudience("shop"), auth.WithIssuer("https://id.test"),
		auth.WithUserClaim("uid"), auth.WithRoleClaim("realm_access.roles"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.Verify(hs); !errors.Is(err, auth.ErrUnauthenticated) {
		t.Errorf("HS256 token with a JWK Set configured: err = %v, want refused", err)
	}
	in.JWTJWKSURL, in.JWTSecret = "", secret
	if p, err := newVerifier(in, slog.New(slog.NewTextHandler(io.Discard, nil))).Verify(hs); err != nil || p.UserID != 3 || !p.Admin {
		t.Errorf("HS256 token without a JWK Set: %+v %v", p, err)
	}
	if _, err := newVerifier(in, slog.New(slog.NewTextHandler(io.Discard, nil))).Verify(es); !errors.Is(err, auth.ErrUnauthenticated) {
		t.Errorf("ES256 token to the HS256 verifier: err = %v, want refused", err)
	}
}
