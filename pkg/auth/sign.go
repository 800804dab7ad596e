package auth

import (
	"fmt"
	"strconv"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Sign issues an HS256 token (for tests, the bench tool and operators'
// scripts) that a Verifier built by NewVerifier with the same opts accepts:
// the audience and issuer are written, the user id goes to "sub" and to the
// user claim, the role to the role claim (as a top-level claim of that exact
// name, which lookupClaim reads first), and a ttl over the lifetime cap is
// refused here rather than by every request.
func Sign(secret string, userID int64, role string, ttl time.Duration, opts ...Option) (string, error) {
	p := newPolicy(opts)
	if ttl <= 0 || ttl > p.maxTTL {
		return "", fmt.Errorf("auth: sign: ttl %v outside (0, %v], the lifetime cap", ttl, p.maxTTL)
	}
	now := time.Now()
	id := strconv.FormatInt(userID, 10)
	c := jwt.MapClaims{
		"sub": id,
		"aud": []string{p.audience},
		"iat": jwt.NewNumericDate(now),
		"exp": jwt.NewNumericDate(now.Add(ttl)),
	}
	c[p.userClaim] = id
	if p.issuer != "" {
		c["iss"] = p.issuer
	}
	if role != "" {
		c[p.roleClaim] = role
	}
	s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString([]byte(secret))
	if err != nil {
		return "", fmt.Errorf("auth: sign: %w", err)
	}
	return s, nil
}
