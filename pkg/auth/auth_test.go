package auth

import (
	"encoding/base64"
	"errors"
	"strings"
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
	iat := time.Now().Unix()
	exp := time.Now().Add(time.Hour).Unix()
	// claims returns a well-formed payload with the given changes; a nil
	// value deletes the claim.
	claims := func(kv ...any) jwt.MapClaims {
		return changed(jwt.MapClaims{"sub": "1", "exp": exp, "iat": iat, "aud": DefaultAudience}, kv...)
	}
	hs := func(c jwt.MapClaims) string { return "Bearer " + sign(t, jwt.SigningMethodHS256, []byte(secret), c) }
	if _, err := v.FromHeader(hs(claims())); err != nil {
		t.Fatalf("well-formed token refused: %v", err)
	}
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
	none := sign(t, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, jwt.MapClaims{"sub": "1", "exp": exp, "iat": iat, "aud": DefaultAudience})
	bad := map[string]string{
		"alg none":           "Bearer " + none,
		"alg HS512":          "Bearer " + sign(t, jwt.SigningMethodHS512, []byte(secret), claims()),
		"wrong secret":       "Bearer " + sign(t, jwt.SigningMethodHS256, []byte("another-secret-0123456789"), claims()),
		"expired":            hs(claims("exp", time.Now().Add(-time.Hour).Unix(), "iat", time.Now().Add(-2*time.Hour).Unix())),
		"no exp":             hs(claims("exp", nil)),
		"sub text":           hs(claims("sub", "bob")),
		"sub number":         hs(claims("sub", 5)),
		"sub overflow":       hs(claims("sub", "9223372036854775808")),
		"sub negative":       hs(claims("sub", "-3")),
		"sub zero":           hs(claims("sub", "0")),
		"sub plus":           hs(claims("sub", "+3")),
		"sub leading zero":   hs(claims("sub", "007")),
		"no sub":             hs(claims("sub", nil)),
		"no aud":             hs(claims("aud", nil)),
		"wrong aud":          hs(claims("aud", "another-service")),
		"wrong aud list":     hs(claims("aud", []string{"a", "b"})),
		"no iat":             hs(claims("iat", nil)),
		"iat in the future":  hs(claims("iat", time.Now().Add(time.Hour).Unix(), "exp", time.Now().Add(2*time.Hour).Unix())),
		"lifetime over cap":  hs(claims("exp", time.Now().Add(DefaultMaxTTL+time.Hour).Unix())),
		"year-long token":    hs(claims("iat", time.Now().Add(-time.Hour).Unix(), "exp", time.Now().Add(365*24*time.Hour).Unix())),
		"basic scheme":       "Basic " + good,
		"empty":              "",
		"bearer only":        "Bearer ",
		"garbage":            "Bearer a.b.c",
		"tampered body":      "Bearer " + tamperedBody(t, good),
		"tampered signature": "Bearer " + tamperedSignature(good),
	}
	for name, h := range bad {
		if _, err := v.FromHeader(h); !errors.Is(err, ErrUnauthenticated) {
			t.Errorf("%s: err = %v, want ErrUnauthenticated", name, err)
		}
	}
}

// TestPolicy: a configured issuer is required, a configured audience and
// lifetime cap replace the defaults, and Sign issues tokens that pass the
// policy it is given (the default one without options).
func TestPolicy(t *testing.T) {
	t.Parallel()
	opts := []Option{WithAudience("shop-eu"), WithIssuer("https://id.example"), WithMaxTTL(time.Hour)}
	v := NewVerifier(secret, opts...)
	tok, err := Sign(secret, 9, "", 30*time.Minute, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if p, err := v.Verify(tok); err != nil || p.UserID != 9 {
		t.Fatalf("token signed for the policy: %+v %v", p, err)
	}
	def, err := Sign(secret, 9, "", 30*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewVerifier(secret).Verify(def); err != nil {
		t.Fatalf("default Sign refused by the default verifier: %v", err)
	}
	if _, err := v.Verify(def); !errors.Is(err, ErrUnauthenticated) {
		t.Errorf("token without the issuer and audience: err = %v, want refused", err)
	}
	otherIss, _ := Sign(secret, 9, "", 30*time.Minute, WithAudience("shop-eu"), WithIssuer("https://evil.example"))
	if _, err := v.Verify(otherIss); !errors.Is(err, ErrUnauthenticated) {
		t.Errorf("token of another issuer: err = %v, want refused", err)
	}
	long, _ := Sign(secret, 9, "", 2*time.Hour, WithAudience("shop-eu"), WithIssuer("https://id.example"))
	if _, err := v.Verify(long); !errors.Is(err, ErrUnauthenticated) {
		t.Errorf("2h token with a 1h cap: err = %v, want refused", err)
	}
	if _, err := Sign(secret, 9, "", 2*time.Hour, opts...); err == nil {
		t.Errorf("Sign issued a token its own policy refuses")
	}
	if _, err := Sign(secret, 9, "", DefaultMaxTTL+time.Minute); err == nil {
		t.Errorf("Sign issued a token over the default lifetime cap")
	}
}

// TestVerifyRefusesAnotherSpellingOfTheSignature: the last base64url
// character of an HS256 signature carries 4 bits and 2 padding bits, so a
// lenient decoder reads four spellings of it as the same signature. A token
// changed only in those bits is another token: the verifier refuses it
// rather than accept a string it never issued (the cache and any log of
// tokens key on the string). This is also why CI's "tampered body" case
// once passed: it wrote "xx" over a signature that ended in "xw".
func TestVerifyRefusesAnotherSpellingOfTheSignature(t *testing.T) {
	t.Parallel()
	v := NewVerifier(secret)
	good, err := Sign(secret, 42, "", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	last := strings.IndexByte(alphabet, good[len(good)-1])
	if last%4 != 0 {
		t.Fatalf("signature %q ends in padding bits set", good)
	}
	for pad := 1; pad < 4; pad++ {
		other := good[:len(good)-1] + string(alphabet[last+pad])
		if _, err := v.Verify(other); !errors.Is(err, ErrUnauthenticated) {
			t.Errorf("signature's last character %q for %q: err = %v, want ErrUnauthenticated",
				other[len(other)-1], good[len(good)-1], err)
		}
	}
}

// alphabet is base64url's, in value order.
const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

// tamperedBody returns tok with its payload's sub changed to 43 and its
// header and signature kept.
func tamperedBody(t *testing.T, tok string) string {
	t.Helper()
	parts := strings.Split(tok, ".")
	body, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	changed := strings.Replace(string(body), `"sub":"42"`, `"sub":"43"`, 1)
	if changed == string(body) {
		t.Fatalf("payload %s has no sub 42", body)
	}
	parts[1] = base64.RawURLEncoding.EncodeToString([]byte(changed))
	return strings.Join(parts, ".")
}

// tamperedSignature returns tok with one bit of its signature's first byte
// flipped: always a different signature, whatever the token.
func tamperedSignature(tok string) string {
	dot := strings.LastIndexByte(tok, '.')
	sig, _ := base64.RawURLEncoding.DecodeString(tok[dot+1:])
	sig[0] ^= 1
	return tok[:dot+1] + base64.RawURLEncoding.EncodeToString(sig)
}
