package devtoken

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/flashsale-dev/flashsale/pkg/auth"
)

func env(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

// TestMintedTokenIsTheIngresss: a token minted from a set-up's
// FLASHSALE_JWT_* settings is accepted by a verifier of the same settings
// (claims renamed, issuer and audience set), with the admin role only when
// asked for.
func TestMintedTokenIsTheIngresss(t *testing.T) {
	in, err := Settings(env(map[string]string{
		"FLASHSALE_JWT_SECRET": "devtoken-test-0123456789", "FLASHSALE_JWT_AUDIENCE": "shop", "FLASHSALE_JWT_ISSUER": "https://id.example",
		"FLASHSALE_JWT_USER_CLAIM": "uid", "FLASHSALE_JWT_ROLE_CLAIM": "realm.roles", "FLASHSALE_JWT_ADMIN_ROLE": "ops", "FLASHSALE_JWT_MAX_TTL": "1h",
	}))
	if err != nil {
		t.Fatal(err)
	}
	v := auth.NewVerifier(in.JWTSecret, auth.WithAudience(in.JWTAudience), auth.WithIssuer(in.JWTIssuer), auth.WithMaxTTL(in.JWTMaxTTL),
		auth.WithUserClaim(in.JWTUserClaim), auth.WithRoleClaim(in.JWTRoleClaim), auth.WithAdminRole(in.JWTAdminRole))
	for _, admin := range []bool{false, true} {
		tok, err := Mint(in, 42, admin, 30*time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		p, err := v.Verify(tok)
		if err != nil || p.UserID != 42 || p.Admin != admin {
			t.Errorf("admin %v: principal %+v, err %v", admin, p, err)
		}
	}
	if _, err := Mint(in, 42, true, 2*time.Hour); err == nil {
		t.Error("a ttl over FLASHSALE_JWT_MAX_TTL was minted")
	}
	// Another set-up's verifier refuses it.
	tok, _ := Mint(in, 42, true, time.Minute)
	if _, err := auth.NewVerifier(in.JWTSecret).Verify(tok); err == nil {
		t.Error("a verifier with the default audience accepted a token minted for aud shop")
	}
}

// TestRefusesJWKS: with a JWK Set configured, nothing is minted, and the
// error names the setting.
func TestRefusesJWKS(t *testing.T) {
	_, err := Settings(env(map[string]string{"FLASHSALE_JWT_JWKS_URL": "https://id.example/certs"}))
	if !errors.Is(err, ErrJWKS) || !strings.Contains(err.Error(), "FLASHSALE_JWT_JWKS_URL") {
		t.Fatalf("Settings with a JWK Set: %v, want ErrJWKS naming FLASHSALE_JWT_JWKS_URL", err)
	}
	// Even a set-up that also (wrongly) carries a secret.
	_, err = Settings(env(map[string]string{"FLASHSALE_JWT_JWKS_URL": "https://id.example/certs", "FLASHSALE_JWT_SECRET": "devtoken-test-0123456789"}))
	if !errors.Is(err, ErrJWKS) {
		t.Fatalf("Settings with a JWK Set and a secret: %v, want ErrJWKS", err)
	}
	in, _ := Settings(env(map[string]string{"FLASHSALE_JWT_SECRET": "devtoken-test-0123456789"}))
	in.JWTJWKSURL = "https://id.example/certs"
	if _, err := Mint(in, 1, true, time.Minute); !errors.Is(err, ErrJWKS) {
		t.Fatalf("Mint with a JWK Set: %v, want ErrJWKS", err)
	}
	if _, err := Settings(env(nil)); !errors.Is(err, ErrNoSecret) {
		t.Fatalf("Settings without a secret: %v, want ErrNoSecret", err)
	}
}
