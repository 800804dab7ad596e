package devtoken

import (
	"cmp"
	"errors"
	"fmt"
	"time"

	"github.com/flashsale-dev/flashsale/pkg/auth"
	"github.com/flashsale-dev/flashsale/pkg/config/jwtconfig"
)

// ErrJWKS is Mint's refusal when the set-up verifies tokens with an
// identity provider's JWK Set: an HS256 token would be refused by every
// ingress, and minting the provider's tokens is not ours to do.
var ErrJWKS = errors.New("FLASHSALE_JWT_JWKS_URL is set: this set-up verifies tokens with an identity provider's JWK Set, " +
	"so tokens are the provider's to mint (an HS256 token signed here would be refused); get one from the provider")

// ErrNoSecret is Mint's refusal when no HS256 secret is configured.
var ErrNoSecret = errors.New("FLASHSALE_JWT_SECRET is not set (the local stack's: eval \"$(deploy/local/stack.sh env)\")")

// Settings reads the ingress's token settings (FLASHSALE_JWT_*,
// pkg/config/jwtconfig) from lookup, the environment as the ingress would
// read it, _FILE variants included, and validates them as the ingress does.
// A JWK Set set-up is refused with ErrJWKS before anything else is checked,
// so the refusal says why.
func Settings(lookup func(string) (string, bool)) (jwtconfig.JWT, error) {
	in, err := jwtconfig.FromEnv(lookup)
	if err != nil {
		return in, err
	}
	if in.JWTJWKSURL != "" {
		return in, ErrJWKS
	}
	if in.JWTSecret == "" {
		return in, ErrNoSecret
	}
	if err := in.Validate(); err != nil {
		return in, fmt.Errorf("%w: %v", jwtconfig.ErrInvalid, err)
	}
	return in, nil
}

// Mint signs a token of user sub, with the admin role when admin, valid for
// ttl (at most FLASHSALE_JWT_MAX_TTL), with in's secret and claims.
func Mint(in jwtconfig.JWT, sub int64, admin bool, ttl time.Duration) (string, error) {
	if in.JWTJWKSURL != "" {
		return "", ErrJWKS
	}
	if in.JWTSecret == "" {
		return "", ErrNoSecret
	}
	if sub <= 0 {
		return "", fmt.Errorf("devtoken: user id %d (expected a positive integer)", sub)
	}
	role := ""
	if admin {
		role = cmp.Or(in.JWTAdminRole, auth.RoleAdmin)
	}
	s, err := auth.Sign(in.JWTSecret, sub, role, ttl,
		auth.WithAudience(in.JWTAudience), auth.WithIssuer(in.JWTIssuer), auth.WithMaxTTL(in.JWTMaxTTL),
		auth.WithUserClaim(in.JWTUserClaim), auth.WithRoleClaim(in.JWTRoleClaim), auth.WithAdminRole(in.JWTAdminRole))
	if err != nil {
		return "", fmt.Errorf("devtoken: %w", err)
	}
	return s, nil
}
