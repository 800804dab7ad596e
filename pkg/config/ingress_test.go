package config

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const jwksURL = "https://id.example/realms/shop/protocol/openid-connect/certs"

// TestJWKSSettings: a JWK Set URL replaces the HS256 secret (which is then
// not required), the two are never set together, and the identity-provider
// settings have defaults that work and bad values that name the setting.
func TestJWKSSettings(t *testing.T) {
	_, in, err := parse(t, map[string]string{"FLASHSALE_JWT_SECRET": "0123456789abcdef"})
	if err != nil {
		t.Fatal(err)
	}
	if in.JWTJWKSURL != "" || in.JWTJWKSRefresh != 10*time.Minute || in.JWTJWKSMinRefresh != 30*time.Second ||
		in.JWTJWKSTimeout != 2*time.Second || in.JWTUserClaim != "sub" || in.JWTRoleClaim != "role" || in.JWTAdminRole != "admin" {
		t.Fatalf("defaults: %+v", in)
	}

	_, in, err = parse(t, map[string]string{"FLASHSALE_JWT_JWKS_URL": jwksURL,
		"FLASHSALE_JWT_ROLE_CLAIM": "realm_access.roles", "FLASHSALE_JWT_ADMIN_ROLE": "flashsale-admin",
		"FLASHSALE_JWT_USER_CLAIM": "flashsale_user_id", "FLASHSALE_JWT_JWKS_REFRESH": "1h",
		"FLASHSALE_JWT_JWKS_MIN_REFRESH": "1m", "FLASHSALE_JWT_JWKS_TIMEOUT": "5s"})
	if err != nil {
		t.Fatalf("JWK Set without a secret: %v", err)
	}
	if in.JWTJWKSURL != jwksURL || in.JWTRoleClaim != "realm_access.roles" || in.JWTAdminRole != "flashsale-admin" ||
		in.JWTUserClaim != "flashsale_user_id" || in.JWTJWKSRefresh != time.Hour || in.JWTJWKSMinRefresh != time.Minute ||
		in.JWTJWKSTimeout != 5*time.Second {
		t.Fatalf("set: %+v", in)
	}
	// Plain http only to a loopback address, and only when asked for: anyone
	// on the path to the provider could otherwise serve keys and mint tokens.
	for _, u := range []string{"http://127.0.0.1:8080/certs", "http://localhost:8080/certs", "http://[::1]:8080/certs"} {
		_, in, err := parse(t, map[string]string{"FLASHSALE_JWT_JWKS_URL": u, "FLASHSALE_JWT_JWKS_ALLOW_LOOPBACK_HTTP": "true"})
		if err != nil || !in.JWTJWKSAllowLoopbackHTTP {
			t.Errorf("%s with FLASHSALE_JWT_JWKS_ALLOW_LOOPBACK_HTTP=true: %v", u, err)
		}
	}

	for name, c := range map[string]struct {
		env  map[string]string
		want string
	}{
		"neither key source":     {map[string]string{}, "FLASHSALE_JWT_SECRET"},
		"secret and JWK Set":     {map[string]string{"FLASHSALE_JWT_SECRET": "0123456789abcdef", "FLASHSALE_JWT_JWKS_URL": jwksURL}, "FLASHSALE_JWT_JWKS_URL"},
		"relative URL":           {map[string]string{"FLASHSALE_JWT_JWKS_URL": "/certs"}, "FLASHSALE_JWT_JWKS_URL"},
		"not http":               {map[string]string{"FLASHSALE_JWT_JWKS_URL": "file:///etc/jwks.json"}, "FLASHSALE_JWT_JWKS_URL"},
		"no host":                {map[string]string{"FLASHSALE_JWT_JWKS_URL": "https:///certs"}, "FLASHSALE_JWT_JWKS_URL"},
		"no URL at all":          {map[string]string{"FLASHSALE_JWT_JWKS_URL": "keycloak"}, "FLASHSALE_JWT_JWKS_URL"},
		"plain http":             {map[string]string{"FLASHSALE_JWT_JWKS_URL": "http://keycloak:8080/realms/shop/protocol/openid-connect/certs"}, "FLASHSALE_JWT_JWKS_URL"},
		"plain http, allowed":    {map[string]string{"FLASHSALE_JWT_JWKS_URL": "http://10.0.0.7/certs", "FLASHSALE_JWT_JWKS_ALLOW_LOOPBACK_HTTP": "true"}, "FLASHSALE_JWT_JWKS_URL"},
		"loopback http, not set": {map[string]string{"FLASHSALE_JWT_JWKS_URL": "http://127.0.0.1:8080/certs"}, "FLASHSALE_JWT_JWKS_ALLOW_LOOPBACK_HTTP"},
		"loopback-ish name":      {map[string]string{"FLASHSALE_JWT_JWKS_URL": "http://127.0.0.1.evil.example/certs", "FLASHSALE_JWT_JWKS_ALLOW_LOOPBACK_HTTP": "true"}, "FLASHSALE_JWT_JWKS_URL"},
		"zero timeout":           {map[string]string{"FLASHSALE_JWT_JWKS_URL": jwksURL, "FLASHSALE_JWT_JWKS_TIMEOUT": "0s"}, "FLASHSALE_JWT_JWKS_TIMEOUT"},
		"long timeout":           {map[string]string{"FLASHSALE_JWT_JWKS_URL": jwksURL, "FLASHSALE_JWT_JWKS_TIMEOUT": "1m"}, "FLASHSALE_JWT_JWKS_TIMEOUT"},
		"min refresh <= timeout": {map[string]string{"FLASHSALE_JWT_JWKS_URL": jwksURL, "FLASHSALE_JWT_JWKS_MIN_REFRESH": "2s"}, "FLASHSALE_JWT_JWKS_MIN_REFRESH"},
		"refresh < min refresh":  {map[string]string{"FLASHSALE_JWT_JWKS_URL": jwksURL, "FLASHSALE_JWT_JWKS_REFRESH": "10s"}, "FLASHSALE_JWT_JWKS_REFRESH"},
		"refresh not a duration": {map[string]string{"FLASHSALE_JWT_JWKS_URL": jwksURL, "FLASHSALE_JWT_JWKS_REFRESH": "hourly"}, "FLASHSALE_JWT_JWKS_REFRESH"},
		"empty role claim":       {map[string]string{"FLASHSALE_JWT_JWKS_URL": jwksURL, "FLASHSALE_JWT_ROLE_CLAIM": ""}, "FLASHSALE_JWT_ROLE_CLAIM"},
		"empty admin role":       {map[string]string{"FLASHSALE_JWT_JWKS_URL": jwksURL, "FLASHSALE_JWT_ADMIN_ROLE": ""}, "FLASHSALE_JWT_ADMIN_ROLE"},
		"empty user claim":       {map[string]string{"FLASHSALE_JWT_SECRET": "0123456789abcdef", "FLASHSALE_JWT_USER_CLAIM": ""}, "FLASHSALE_JWT_USER_CLAIM"},
	} {
		_, _, err := parse(t, c.env)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want it to name %s", name, err, c.want)
		}
		if s := c.env["FLASHSALE_JWT_SECRET"]; err != nil && s != "" && strings.Contains(err.Error(), s) {
			t.Errorf("%s: the secret leaked into the error: %v", name, err)
		}
	}
}

// TestJWKSCAFile: a private CA for the identity provider is read at
// start-up; a missing or non-PEM file stops it naming the setting.
func TestJWKSCAFile(t *testing.T) {
	dir := t.TempDir()
	ca, _ := writeCA(t, dir)
	_, in, err := parse(t, map[string]string{"FLASHSALE_JWT_JWKS_URL": jwksURL, "FLASHSALE_JWT_JWKS_CA_FILE": ca})
	if err != nil {
		t.Fatal(err)
	}
	if roots, err := in.JWKSRootCAs(); err != nil || roots == nil {
		t.Fatalf("JWKSRootCAs = %v, %v", roots, err)
	}
	notPEM := filepath.Join(dir, "not.pem")
	write(t, notPEM, "hello")
	for _, f := range []string{filepath.Join(dir, "missing.pem"), notPEM} {
		_, _, err := parse(t, map[string]string{"FLASHSALE_JWT_JWKS_URL": jwksURL, "FLASHSALE_JWT_JWKS_CA_FILE": f})
		if err == nil || !strings.Contains(err.Error(), "FLASHSALE_JWT_JWKS_CA_FILE") {
			t.Errorf("CA file %s: err = %v, want it to name FLASHSALE_JWT_JWKS_CA_FILE", f, err)
		}
	}
}
