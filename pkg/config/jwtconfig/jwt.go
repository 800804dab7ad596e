package jwtconfig

import (
	"errors"
	"flag"
	"fmt"
	"time"

	"github.com/flashsale-dev/flashsale/pkg/auth"
	"github.com/flashsale-dev/flashsale/pkg/config/internal/envflag"
)

// JWT holds the bearer tokens' settings, FLASHSALE_JWT_*: how the ingress
// verifies a token, and so how pkg/devtoken mints one the ingress accepts.
// config.Ingress embeds it.
type JWT struct {
	// JWTSecret is the HS256 key for buyer and admin tokens. Never logged.
	// Set it or JWTJWKSURL, never both.
	JWTSecret string
	// JWTJWKSURL, when set, is an identity provider's JWK Set: tokens must be
	// signed (RS256, ES256…) with one of its keys and HS256 is refused, so
	// no one holding a shared secret can mint tokens beside the provider.
	JWTJWKSURL string
	// JWTJWKSAllowLoopbackHTTP lets JWTJWKSURL be plain http to a loopback
	// address (a sidecar, a test); otherwise it must be https.
	JWTJWKSAllowLoopbackHTTP bool
	// JWTJWKSCAFile is a PEM file of the CAs of the identity provider's
	// certificate (a private CA); empty: the system's roots.
	JWTJWKSCAFile string
	// JWTJWKSRefresh is the background refresh interval of the JWK Set.
	JWTJWKSRefresh time.Duration
	// JWTJWKSMinRefresh is the least time between two refreshes that tokens
	// with an unknown kid trigger, so made-up kids cannot hammer the
	// provider. Above JWTJWKSTimeout, so no request queues behind it.
	JWTJWKSMinRefresh time.Duration
	// JWTJWKSTimeout bounds every JWK Set fetch, the start-up one included,
	// and so the wait of a request whose unknown kid triggered a refresh.
	JWTJWKSTimeout time.Duration
	// JWTUserClaim names the claim with the decimal user id (identity
	// providers keep "sub" for ids of their own).
	JWTUserClaim string
	// JWTRoleClaim names the claim with the role, a string or an array of
	// strings; a dotted name walks nested objects (realm_access.roles).
	JWTRoleClaim string
	// JWTAdminRole is the role value that opens the admin routes.
	JWTAdminRole string
	// JWTCacheSize bounds the accepted tokens remembered (by hash, until
	// exp, at most a minute) so polls skip the signature check; 0 = off.
	JWTCacheSize int
	// JWTAudience is the "aud" every token must carry, so a token minted for
	// another service that shares the secret is refused.
	JWTAudience string
	// JWTIssuer, when set, is the "iss" every token must carry.
	JWTIssuer string
	// JWTMaxTTL caps a token's lifetime (exp - iat; iat is then required), so
	// a leaked or carelessly minted token cannot work for months.
	JWTMaxTTL time.Duration
}

// ErrInvalid is config.ErrInvalid (the same value), for a caller of FromEnv
// to mark a Validate error as a bad setting as config.Parse does.
var ErrInvalid = envflag.ErrInvalid

// RegisterFlags declares the settings (config.Ingress's RegisterFlags calls it).
func (c *JWT) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.JWTSecret, "jwt-secret", "", "HS256 secret for bearer tokens, at least 16 bytes; empty when jwt-jwks-url is set")
	fs.StringVar(&c.JWTJWKSURL, "jwt-jwks-url", "", "an identity provider's JWK Set URL: verify RS256/ES256 tokens with its keys instead of the HS256 secret")
	fs.BoolVar(&c.JWTJWKSAllowLoopbackHTTP, "jwt-jwks-allow-loopback-http", false, "let jwt-jwks-url be plain http to a loopback address (127.0.0.1, ::1, localhost); otherwise it must be https")
	fs.StringVar(&c.JWTJWKSCAFile, "jwt-jwks-ca-file", "", "PEM file of the CAs of the identity provider's certificate, empty for the system's")
	fs.DurationVar(&c.JWTJWKSRefresh, "jwt-jwks-refresh", 10*time.Minute, "background refresh interval of the JWK Set, a Go duration")
	fs.DurationVar(&c.JWTJWKSMinRefresh, "jwt-jwks-min-refresh", 30*time.Second, "least time between JWK Set refreshes triggered by an unknown kid, a Go duration above jwt-jwks-timeout")
	fs.DurationVar(&c.JWTJWKSTimeout, "jwt-jwks-timeout", 2*time.Second, "bound of a JWK Set fetch, the start-up one included, a Go duration up to 30s")
	fs.StringVar(&c.JWTUserClaim, "jwt-user-claim", "sub", "claim holding the decimal user id; a dotted name walks nested objects")
	fs.StringVar(&c.JWTRoleClaim, "jwt-role-claim", "role", "claim holding the role, a string or an array; a dotted name walks nested objects, e.g. realm_access.roles")
	fs.StringVar(&c.JWTAdminRole, "jwt-admin-role", "admin", "role value that opens the admin routes")
	fs.IntVar(&c.JWTCacheSize, "jwt-cache-size", 100_000, "accepted tokens remembered so a polling buyer's token is verified once (two generations of this many), 0 to switch off")
	fs.StringVar(&c.JWTAudience, "jwt-audience", "flashsale", "the aud claim every bearer token must carry")
	fs.StringVar(&c.JWTIssuer, "jwt-issuer", "", "the iss claim every bearer token must carry, empty to not check it")
	fs.DurationVar(&c.JWTMaxTTL, "jwt-max-ttl", 24*time.Hour, "longest accepted token lifetime exp - iat, a Go duration such as 24h")
}

// Validate checks the settings (config.Ingress's Validate calls it): the key
// source, the audience, the lifetime cap, the cache and the claims' names.
func (c *JWT) Validate() error {
	if err := c.validateKeys(); err != nil {
		return err
	}
	if c.JWTAudience == "" {
		return fmt.Errorf("FLASHSALE_JWT_AUDIENCE: empty (expected the aud claim tokens carry, e.g. flashsale)")
	}
	if c.JWTMaxTTL < time.Minute {
		return fmt.Errorf("FLASHSALE_JWT_MAX_TTL: %v (expected a duration of at least 1m)", c.JWTMaxTTL)
	}
	if c.JWTCacheSize < 0 || c.JWTCacheSize > 10_000_000 {
		return fmt.Errorf("FLASHSALE_JWT_CACHE_SIZE: %d (expected 0 to switch off, or up to 10000000)", c.JWTCacheSize)
	}
	if c.JWTUserClaim == "" || c.JWTRoleClaim == "" || c.JWTAdminRole == "" {
		return fmt.Errorf("FLASHSALE_JWT_USER_CLAIM, FLASHSALE_JWT_ROLE_CLAIM, FLASHSALE_JWT_ADMIN_ROLE: empty (expected a claim name, a claim name and a role, e.g. sub, role, admin)")
	}
	return nil
}

// validateKeys checks the one key source of tokens: the HS256 secret,
// or an identity provider's JWK Set. Both at once is refused, since with a
// JWK Set HS256 is not accepted and the secret would be silently unused (or,
// if it were used, a second way to mint tokens beside the provider). The
// JWK Set's CA file is config.Ingress.Validate's to read.
func (c *JWT) validateKeys() error {
	if c.JWTJWKSTimeout <= 0 || c.JWTJWKSTimeout > 30*time.Second {
		return fmt.Errorf("FLASHSALE_JWT_JWKS_TIMEOUT: %v (expected a duration from 1ms to 30s)", c.JWTJWKSTimeout)
	}
	if c.JWTJWKSMinRefresh <= c.JWTJWKSTimeout {
		return fmt.Errorf("FLASHSALE_JWT_JWKS_MIN_REFRESH: %v (expected a duration above FLASHSALE_JWT_JWKS_TIMEOUT, %v)", c.JWTJWKSMinRefresh, c.JWTJWKSTimeout)
	}
	if c.JWTJWKSRefresh < c.JWTJWKSMinRefresh {
		return fmt.Errorf("FLASHSALE_JWT_JWKS_REFRESH: %v (expected a duration of at least FLASHSALE_JWT_JWKS_MIN_REFRESH, %v)", c.JWTJWKSRefresh, c.JWTJWKSMinRefresh)
	}
	if c.JWTJWKSURL != "" {
		if c.JWTSecret != "" {
			return fmt.Errorf("FLASHSALE_JWT_SECRET: set together with FLASHSALE_JWT_JWKS_URL (expected one of them: the JWK Set accepts no HS256 token)")
		}
		switch err := auth.CheckJWKSURL(c.JWTJWKSURL, c.JWTJWKSAllowLoopbackHTTP); {
		case errors.Is(err, auth.ErrJWKSLoopbackHTTP):
			return fmt.Errorf("FLASHSALE_JWT_JWKS_URL: %q is plain http (expected https; for an identity provider on this host set FLASHSALE_JWT_JWKS_ALLOW_LOOPBACK_HTTP=true)", c.JWTJWKSURL)
		case errors.Is(err, auth.ErrJWKSPlainHTTP):
			return fmt.Errorf("FLASHSALE_JWT_JWKS_URL: %q is plain http to a host that is not loopback, so anyone on the path could serve keys and mint tokens (expected https, e.g. https://id.example/realms/shop/protocol/openid-connect/certs)", c.JWTJWKSURL)
		case err != nil:
			return fmt.Errorf("FLASHSALE_JWT_JWKS_URL: %q (expected an absolute https URL, e.g. https://id.example/realms/shop/protocol/openid-connect/certs)", c.JWTJWKSURL)
		}
		return nil
	}
	if len(c.JWTSecret) < 16 {
		return fmt.Errorf("FLASHSALE_JWT_SECRET: missing or shorter than 16 bytes (expected a random secret of at least 16 bytes, or FLASHSALE_JWT_JWKS_URL)")
	}
	if publicJWTSecret(c.JWTSecret) {
		return fmt.Errorf("FLASHSALE_JWT_SECRET: a default shipped in the repository or a placeholder, so anyone can mint tokens with it (expected a random secret, e.g. openssl rand -hex 32)")
	}
	return nil
}

// FromEnv reads the settings from lookup as the ingress reads them from its
// environment: the defaults, FLASHSALE_JWT_* and their _FILE variants (a
// setting given both ways is refused, wrapping ErrInvalid). It does not
// validate, so a caller can refuse a set-up for its own reason first
// (pkg/devtoken, under a JWK Set) and then call Validate.
func FromEnv(lookup func(string) (string, bool)) (JWT, error) {
	var c JWT
	fs := flag.NewFlagSet("jwt", flag.ContinueOnError)
	c.RegisterFlags(fs)
	return c, envflag.Apply(fs, lookup)
}
