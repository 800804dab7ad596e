package auth

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

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

// Verifier checks tokens against one key source and a policy.
type Verifier struct {
	policy  policy
	parser  *jwt.Parser
	keyfunc jwt.Keyfunc
	// ready reports whether the verifier has keys; nil = always (a secret).
	ready func(context.Context) error
	// cache remembers accepted tokens; nil = off (see WithTokenCache).
	cache *tokenCache
}

// newParser pins methods and applies the registered-claim checks of p.
func newParser(p policy, methods []string) *jwt.Parser {
	popts := []jwt.ParserOption{
		jwt.WithValidMethods(methods),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(), // an iat in the future is refused
		jwt.WithAudience(p.audience),
		jwt.WithLeeway(leeway),
		// One spelling per token: a lenient base64 decoder ignores the
		// signature's padding bits, so four strings would verify as one.
		jwt.WithStrictDecoding(),
	}
	if p.issuer != "" {
		popts = append(popts, jwt.WithIssuer(p.issuer))
	}
	return jwt.NewParser(popts...)
}

// NewVerifier returns a Verifier of HS256 tokens signed with secret, with
// the default policy changed by opts.
func NewVerifier(secret string, opts ...Option) *Verifier {
	p := newPolicy(opts)
	key := []byte(secret)
	return &Verifier{
		policy:  p,
		parser:  newParser(p, []string{jwt.SigningMethodHS256.Alg()}),
		keyfunc: func(*jwt.Token) (any, error) { return key, nil },
		cache:   cacheFor(p),
	}
}

func cacheFor(p policy) *tokenCache {
	if p.cacheSize <= 0 {
		return nil
	}
	return newTokenCache(p.cacheSize)
}

// Ready returns nil once the verifier can accept a token: at once for a
// shared secret, once the first JWKS fetch has brought keys for a JWKS.
// Meant for a readiness probe, so no traffic reaches an ingress that can
// only answer 401.
func (v *Verifier) Ready(ctx context.Context) error {
	if v.ready == nil {
		return nil
	}
	return v.ready(ctx)
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
	if v.cache == nil {
		p, _, err := v.verify(tok)
		return p, err
	}
	k := sha256.Sum256([]byte(tok))
	if p, ok := v.cache.get(k); ok {
		return p, nil
	}
	p, exp, err := v.verify(tok)
	if err == nil {
		v.cache.put(k, p, exp)
	}
	return p, err
}

// verify checks tok's signature and claims, and returns its exp too.
func (v *Verifier) verify(tok string) (Principal, time.Time, error) {
	c := jwt.MapClaims{}
	if _, err := v.parser.ParseWithClaims(tok, c, v.keyfunc); err != nil {
		return Principal{}, time.Time{}, fmt.Errorf("%w: %w", ErrUnauthenticated, err)
	}
	// The library checks exp and a future iat; the lifetime is ours.
	iat, err := c.GetIssuedAt()
	if err != nil || iat == nil {
		return Principal{}, time.Time{}, fmt.Errorf("%w: iat is required", ErrUnauthenticated)
	}
	exp, err := c.GetExpirationTime()
	if err != nil || exp == nil {
		return Principal{}, time.Time{}, fmt.Errorf("%w: exp is required", ErrUnauthenticated)
	}
	if ttl := exp.Sub(iat.Time); ttl > v.policy.maxTTL {
		return Principal{}, time.Time{}, fmt.Errorf("%w: lifetime %v exceeds %v", ErrUnauthenticated, ttl, v.policy.maxTTL)
	}
	id, err := userID(c, v.policy.userClaim)
	if err != nil {
		return Principal{}, time.Time{}, fmt.Errorf("%w: %w", ErrUnauthenticated, err)
	}
	role, _ := lookupClaim(c, v.policy.roleClaim)
	return Principal{UserID: id, Admin: hasRole(role, v.policy.adminRole)}, exp.Time, nil
}
