package auth

import (
	"errors"
	"testing"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/golang-jwt/jwt/v5"
)

// TestRoleAndUserClaims: the claims that carry the role and the user id are
// configurable, as identity providers put them: a nested array (Keycloak's
// realm_access.roles), a namespaced top-level claim whose name has dots
// (Auth0), a group list (Cognito), and a user id of flashsale's in a claim
// of its own beside the provider's UUID "sub".
func TestRoleAndUserClaims(t *testing.T) {
	t.Parallel()
	k := testKeys()
	p := newIDP(t, jwksJSON(t, pubKey{kid: "ec-1", alg: jwkset.AlgES256, key: &k.ec.PublicKey}))
	es := func(c jwt.MapClaims) string { return mint(t, jwt.SigningMethodES256, k.ec, "ec-1", c) }
	const uuid = "f81d4fae-7dec-11d0-a765-00a0c91e6bf6"
	cases := []struct {
		name      string
		opts      []Option
		claims    jwt.MapClaims
		wantAdmin bool
		wantUser  int64 // 0 = refused
	}{
		{"default role claim", nil, claimsFor("role", "admin"), true, 42},
		{"default, another role", nil, claimsFor("role", "buyer"), false, 42},
		{"default, role as array", nil, claimsFor("role", []any{"buyer", "admin"}), true, 42},
		{"default, role case differs", nil, claimsFor("role", "Admin"), false, 42},
		{"default, role a number", nil, claimsFor("role", 1), false, 42},
		{"keycloak realm roles", []Option{WithRoleClaim("realm_access.roles")},
			claimsFor("realm_access", map[string]any{"roles": []any{"offline_access", "admin"}}), true, 42},
		{"keycloak, not in the roles", []Option{WithRoleClaim("realm_access.roles")},
			claimsFor("realm_access", map[string]any{"roles": []any{"offline_access"}}, "role", "admin"), false, 42},
		{"keycloak, roles missing", []Option{WithRoleClaim("realm_access.roles")},
			claimsFor("realm_access", "admin"), false, 42},
		{"auth0 namespaced claim", []Option{WithRoleClaim("https://flashsale.example/roles")},
			claimsFor("https://flashsale.example/roles", []any{"admin"}), true, 42},
		{"cognito groups, own admin value", []Option{WithRoleClaim("cognito:groups"), WithAdminRole("flashsale-ops")},
			claimsFor("cognito:groups", []any{"flashsale-ops"}), true, 42},
		{"own admin value, plain admin refused", []Option{WithAdminRole("flashsale-ops")},
			claimsFor("role", "admin"), false, 42},
		{"user id claim beside a UUID sub", []Option{WithUserClaim("flashsale_user_id")},
			claimsFor("sub", uuid, "flashsale_user_id", "7"), false, 7},
		{"user id claim missing", []Option{WithUserClaim("flashsale_user_id")},
			claimsFor("sub", uuid), false, 0},
		{"user id claim a number", []Option{WithUserClaim("flashsale_user_id")},
			claimsFor("flashsale_user_id", 7), false, 0},
		{"user id claim leading zero", []Option{WithUserClaim("flashsale_user_id")},
			claimsFor("flashsale_user_id", "07"), false, 0},
		{"nested user id", []Option{WithUserClaim("ext.uid")},
			claimsFor("ext", map[string]any{"uid": "9"}), false, 9},
		{"default user claim with a UUID sub", nil, claimsFor("sub", uuid), false, 0},
	}
	for _, c := range cases {
		v := newTestJWKSVerifier(t, p, JWKSOptions{}, c.opts...)
		pr, err := v.Verify(es(c.claims))
		if c.wantUser == 0 {
			if !errors.Is(err, ErrUnauthenticated) {
				t.Errorf("%s: %+v %v, want refused", c.name, pr, err)
			}
			continue
		}
		if err != nil || pr.UserID != c.wantUser || pr.Admin != c.wantAdmin {
			t.Errorf("%s: %+v %v, want user %d admin %v", c.name, pr, err, c.wantUser, c.wantAdmin)
		}
	}
}

// TestSignHonoursClaimOptions: Sign writes the role and user id where a
// verifier with the same options reads them.
func TestSignHonoursClaimOptions(t *testing.T) {
	t.Parallel()
	opts := []Option{WithRoleClaim("realm_access.roles"), WithAdminRole("ops"), WithUserClaim("uid")}
	tok, err := Sign(secret, 5, "ops", time.Minute, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if pr, err := NewVerifier(secret, opts...).Verify(tok); err != nil || pr.UserID != 5 || !pr.Admin {
		t.Fatalf("token signed with the claim options: %+v %v", pr, err)
	}
	if pr, err := NewVerifier(secret).Verify(tok); err != nil || pr.Admin {
		t.Fatalf("default verifier: %+v %v, want user 5 and no admin (its role is elsewhere)", pr, err)
	}
}

// TestSecretVerifierRefusesProviderTokens: a shared-secret verifier accepts
// HS256 only, so an RS256 token of a real key is refused too (the two kinds
// of verifier never mix).
func TestSecretVerifierRefusesProviderTokens(t *testing.T) {
	t.Parallel()
	k := testKeys()
	c := claimsFor("iss", nil)
	if _, err := NewVerifier(secret).Verify(mint(t, jwt.SigningMethodRS256, k.rsaA, "rsa-a", c)); !errors.Is(err, ErrUnauthenticated) {
		t.Errorf("RS256 token to the HS256 verifier: err = %v, want ErrUnauthenticated", err)
	}
	if err := NewVerifier(secret).Ready(t.Context()); err != nil {
		t.Errorf("secret verifier not Ready: %v", err)
	}
}
