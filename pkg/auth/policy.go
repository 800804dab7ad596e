package auth

import "time"

// DefaultAudience is the "aud" a token must carry unless configured otherwise.
const DefaultAudience = "flashsale"

// DefaultMaxTTL caps exp - iat unless configured otherwise.
const DefaultMaxTTL = 24 * time.Hour

// DefaultUserClaim holds the user id unless configured otherwise.
const DefaultUserClaim = "sub"

// DefaultRoleClaim holds the role unless configured otherwise.
const DefaultRoleClaim = "role"

// RoleAdmin is the role of operators unless configured otherwise.
const RoleAdmin = "admin"

// policy is what a token must say besides its signature, and where it says
// who it speaks for.
type policy struct {
	audience  string
	issuer    string // "" = not checked
	maxTTL    time.Duration
	userClaim string
	roleClaim string
	adminRole string
	cacheSize int // accepted tokens remembered; 0 = none
}

// Option changes the policy of a Verifier, or the claims Sign writes, so a
// verifier and the tokens signed for it are configured with the same values.
type Option func(*policy)

// WithTokenCache remembers up to 2 × size accepted tokens (by hash, until
// their exp and at most a minute) so a polling buyer's token is verified
// once, not on every request; 0 (the default) turns it off.
func WithTokenCache(size int) Option { return func(p *policy) { p.cacheSize = max(size, 0) } }

// WithAudience sets the required "aud" (default DefaultAudience); empty keeps
// the default.
func WithAudience(aud string) Option {
	return func(p *policy) {
		if aud != "" {
			p.audience = aud
		}
	}
}

// WithIssuer requires "iss" to be iss; empty (the default) does not check it.
func WithIssuer(iss string) Option { return func(p *policy) { p.issuer = iss } }

// WithMaxTTL caps exp - iat (default DefaultMaxTTL); zero or less keeps the
// default.
func WithMaxTTL(d time.Duration) Option {
	return func(p *policy) {
		if d > 0 {
			p.maxTTL = d
		}
	}
}

// WithUserClaim names the claim that holds the decimal user id (default
// "sub"). Identity providers put their own ids in "sub" (a UUID in Keycloak
// and Cognito, "auth0|…" in Auth0); they can map flashsale's numeric id into
// a claim of its own. Empty keeps the default; see lookupClaim for names.
func WithUserClaim(name string) Option {
	return func(p *policy) {
		if name != "" {
			p.userClaim = name
		}
	}
}

// WithRoleClaim names the claim that holds the role (default "role"): a
// string, or an array of strings such as Keycloak's "realm_access.roles" or
// Cognito's "cognito:groups". Empty keeps the default.
func WithRoleClaim(name string) Option {
	return func(p *policy) {
		if name != "" {
			p.roleClaim = name
		}
	}
}

// WithAdminRole sets the role value that opens the admin routes (default
// RoleAdmin). Empty keeps the default.
func WithAdminRole(role string) Option {
	return func(p *policy) {
		if role != "" {
			p.adminRole = role
		}
	}
}

func newPolicy(opts []Option) policy {
	p := policy{audience: DefaultAudience, maxTTL: DefaultMaxTTL,
		userClaim: DefaultUserClaim, roleClaim: DefaultRoleClaim, adminRole: RoleAdmin}
	for _, o := range opts {
		o(&p)
	}
	return p
}
