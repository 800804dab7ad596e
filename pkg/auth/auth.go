// Package auth verifies the bearer tokens of flashsale's API: HS256 JWTs whose
// "sub" is the decimal int64 user id, "exp" is required, and "role": "admin"
// opens the admin routes.
//
// Only HS256 is accepted. Pinning the algorithm is what stops "alg": "none"
// and key-confusion tokens; the library's own default would accept any HMAC.
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

// Verifier checks tokens against one shared secret.
type Verifier struct {
	secret []byte
	parser *jwt.Parser
}

// NewVerifier returns a Verifier for secret. A small leeway absorbs clock skew
// between the token issuer and this process.
func NewVerifier(secret string) *Verifier {
	return &Verifier{
		secret: []byte(secret),
		parser: jwt.NewParser(
			jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
			jwt.WithExpirationRequired(),
			jwt.WithLeeway(5*time.Second),
		),
	}
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
	id, err := parseUserID(c.Subject)
	if err != nil {
		return Principal{}, fmt.Errorf("%w: %w", ErrUnauthenticated, err)
	}
	return Principal{UserID: id, Admin: c.Role == RoleAdmin}, nil
}

// parseUserID accepts only plain positive decimal int64s: no sign, no
// spaces, no overflow, so one user has exactly one spelling.
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
	return id, nil
}

// Sign issues a token (for tests, the bench tool and operators' scripts).
func Sign(secret string, userID int64, role string, ttl time.Duration) (string, error) {
	now := time.Now()
	c := claims{
		RegisteredClaims: jwt.RegisteredClaims{
			Subject:   strconv.FormatInt(userID, 10),
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
