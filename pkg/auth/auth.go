// Package auth verifies the bearer tokens of flashsale's API: HS256 JWTs whose
// "sub" is the decimal int64 user id, "aud" names this service, "iat" and
// "exp" are required and at most a capped lifetime apart, "iss" is checked
// when one is configured, and "role": "admin" opens the admin routes.
//
// Only HS256 is accepted. Pinning the algorithm is what stops "alg": "none"
// and key-confusion tokens; the library's own default would accept any HMAC.
// The audience stops a token minted for another service that shares the
// secret; the lifetime cap stops a leaked token, or one minted by a careless
// script, from working for a year.
package auth

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// RoleAdmin is the role claim of operators.
const RoleAdmin = "admin"

// DefaultAudience is the "aud" a token must carry unless configured otherwise.
const DefaultAudience = "flashsale"

// DefaultMaxTTL caps exp - iat unless configured otherwise.
const DefaultMaxTTL = 24 * time.Hour

// leeway absorbs clock skew between the token issuer and this process.
const leeway = 5 * time.Second

// ErrUnauthenticated wraps every reason a token is refused. The reason is
// for logs; buyers only see 401.
var ErrUnauthenticated = errors.New("auth: unauthenticated")

// Principal is who a verified token speaks for.
type Principal struct {
	UserID int64
	Admin  bool
}

// claims is the token payload flashsale reads.
type claims struct {
	jwt.RegisteredClaims
	Role string `json:"role,omitempty"`
}

// policy is what a token must say besides its signature.
type policy struct {
	audience string
	issuer   string // "" = not checked
	maxTTL   time.Duration
}

// Option changes the policy of a Verifier, or the claims Sign writes, so a
// verifier and the tokens signed for it are configured with the same values.
type Option func(*policy)

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

func newPolicy(opts []Option) policy {
	p := policy{audience: DefaultAudience, maxTTL: DefaultMaxTTL}
	for _, o := range opts {
		o(&p)
	}
	return p
}

// Verifier checks tokens against one shared secret and a policy.
type Verifier struct {
	secret []byte
	policy policy
	parser *jwt.Parser
}

// NewVerifier returns a Verifier for secret with the default policy changed
// by opts.
func NewVerifier(secret string, opts ...Option) *Verifier {
	p := newPolicy(opts)
	popts := []jwt.ParserOption{
		jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(), // an iat in the future is refused
		jwt.WithAudience(p.audience),
		jwt.WithLeeway(leeway),
	}
	if p.issuer != "" {
		popts = append(popts, jwt.WithIssuer(p.issuer))
	}
	return &Verifier{secret: []byte(secret), policy: p, parser: jwt.NewParser(popts...)}
}

// FromHeader verifies an Authorization header value ("Bearer <jwt>").
func (v *Verifier) FromHeader(h string) (Principal, error) {
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || tok == "" {
		return Principal{}, fmt.Errorf("%w: missing bearer token", ErrUnauthenticated)
	}
	return v.Verify(strings.TrimSpace(tok))
}

// Verify checks one compact JWT.
func (v *Verifier) Verify(tok string) (Principal, error) {
	var c claims
	_, err := v.parser.ParseWithClaims(tok, &c, func(*jwt.Token) (any, error) { return v.secret, nil })
	if err != nil {
		return Principal{}, fmt.Errorf("%w: %w", ErrUnauthenticated, err)
	}
	// The library checks exp and a future iat; the lifetime is ours.
	if c.IssuedAt == nil {
		return Principal{}, fmt.Errorf("%w: iat is required", ErrUnauthenticated)
	}
	if ttl := c.ExpiresAt.Sub(c.IssuedAt.Time); ttl > v.policy.maxTTL {
		return Principal{}, fmt.Errorf("%w: lifetime %v exceeds %v", ErrUnauthenticated, ttl, v.policy.maxTTL)
	}
	id, err := parseUserID(c.Subject)
	if err != nil {
		return Principal{}, fmt.Errorf("%w: %w", ErrUnauthenticated, err)
	}
	return Principal{UserID: id, Admin: c.Role == RoleAdmin}, nil
}

// parseUserID accepts only the canonical decimal form of a positive int64:
// no sign, no spaces, no leading zeros, no overflow, so one user has exactly
// one spelling ("7", never "007").
func parseUserID(sub string) (int64, error) {
	if sub == "" || len(sub) > 19 {
		return 0, fmt.Errorf("sub %q: not a user id", sub)
	}
	for _, c := range sub {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("sub %q: not a decimal user id", sub)
		}
	}
	id, err := strconv.ParseInt(sub, 10, 64)
	if err != nil || id <= 0 {
		return 0, fmt.Errorf("sub %q: not a positive int64", sub)
	}
	if strconv.FormatInt(id, 10) != sub {
		return 0, fmt.Errorf("sub %q: leading zeros", sub)
	}
	return id, nil
}

// Sign issues a token (for tests, the bench tool and operators' scripts)
// that a Verifier built with the same opts accepts: the audience and issuer
// are written, and a ttl over the lifetime cap is refused here rather than
// by every request.
func Sign(secret string, userID int64, role string, ttl time.Duration, opts ...Option) (string, error) {
	p := newPolicy(opts)
	if ttl <= 0 || ttl > p.maxTTL {
		return "", fmt.Errorf("auth: sign: ttl %v outside (0, %v], the lifetime cap", ttl, p.maxTTL)
	}
	now := time.Now()
	c := claims{
		RegisteredClaims: jwt.RegisteredClaims{
			Subject:   strconv.FormatInt(userID, 10),
			Audience:  jwt.ClaimStrings{p.audience},
			Issuer:    p.issuer,
			IssuedAt:  jwt.NewNumericDate(now),
			ExpiresAt: jwt.NewNumericDate(now.Add(ttl)),
		},
		Role: role,
	}
	s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString([]byte(secret))
	if err != nil {
		return "", fmt.Errorf("auth: sign: %w", err)
	}
	return s, nil
}
