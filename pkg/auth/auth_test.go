package auth

import (
	"errors"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

const secret = "test-secret-0123456789abcdef"

func sign(t *testing.T, method jwt.SigningMethod, key any, c jwt.MapClaims) string {
	t.Helper()
	s, err := jwt.NewWithClaims(method, c).SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestVerify(t *testing.T) {
	t.Parallel()
	v := NewVerifier(secret)
	exp := time.Now().Add(time.Hour).Unix()
	good, err := Sign(secret, 42, "", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	p, err := v.FromHeader("Bearer " + good)
	if err != nil || p.UserID != 42 || p.Admin {
		t.Fatalf("good token: %+v %v", p, err)
	}
	admin, _ := Sign(secret, 7, RoleAdmin, time.Minute)
	if p, err := v.Verify(admin); err != nil || !p.Admin {
		t.Fatalf("admin token: %+v %v", p, err)
	}
	none := sign(t, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, jwt.MapClaims{"sub": "1", "exp": exp})
	hs512 := sign(t, jwt.SigningMethodHS512, []byte(secret), jwt.MapClaims{"sub": "1", "exp": exp})
	bad := map[string]string{
		"alg none":      "Bearer " + none,
		"alg HS512":     "Bearer " + hs512,
		"wrong secret":  "Bearer " + sign(t, jwt.SigningMethodHS256, []byte("another-secret-0123456789"), jwt.MapClaims{"sub": "1", "exp": exp}),
		"expired":       "Bearer " + sign(t, jwt.SigningMethodHS256, []byte(secret), jwt.MapClaims{"sub": "1", "exp": time.Now().Add(-time.Hour).Unix()}),
		"no exp":        "Bearer " + sign(t, jwt.SigningMethodHS256, []byte(secret), jwt.MapClaims{"sub": "1"}),
		"sub text":      "Bearer " + sign(t, jwt.SigningMethodHS256, []byte(secret), jwt.MapClaims{"sub": "bob", "exp": exp}),
		"sub number":    "Bearer " + sign(t, jwt.SigningMethodHS256, []byte(secret), jwt.MapClaims{"sub": 5, "exp": exp}),
		"sub overflow":  "Bearer " + sign(t, jwt.SigningMethodHS256, []byte(secret), jwt.MapClaims{"sub": "9223372036854775808", "exp": exp}),
		"sub negative":  "Bearer " + sign(t, jwt.SigningMethodHS256, []byte(secret), jwt.MapClaims{"sub": "-3", "exp": exp}),
		"sub zero":      "Bearer " + sign(t, jwt.SigningMethodHS256, []byte(secret), jwt.MapClaims{"sub": "0", "exp": exp}),
		"sub plus":      "Bearer " + sign(t, jwt.SigningMethodHS256, []byte(secret), jwt.MapClaims{"sub": "+3", "exp": exp}),
		"no sub":        "Bearer " + sign(t, jwt.SigningMethodHS256, []byte(secret), jwt.MapClaims{"exp": exp}),
		"basic scheme":  "Basic " + good,
		"empty":         "",
		"bearer only":   "Bearer ",
		"garbage":       "Bearer a.b.c",
		"tampered body": "Bearer " + good[:len(good)-2] + "xx",
	}
	for name, h := range bad {
		if _, err := v.FromHeader(h); !errors.Is(err, ErrUnauthenticated) {
			t.Errorf("%s: err = %v, want ErrUnauthenticated", name, err)
		}
	}
}
