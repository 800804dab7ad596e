package auth

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

const cacheSecret = "cache-test-secret-0123456789"

// countKeys makes v count how often it checks a signature.
func countKeys(v *Verifier) *atomic.Int64 {
	var n atomic.Int64
	kf := v.keyfunc
	v.keyfunc = func(t *jwt.Token) (any, error) { n.Add(1); return kf(t) }
	return &n
}

// An accepted token is verified once; a refused one every time, and never
// stored.
func TestTokenCacheVerifiesOnce(t *testing.T) {
	v := NewVerifier(cacheSecret, WithTokenCache(100))
	checks := countKeys(v)
	tok, err := Sign(cacheSecret, 42, "admin", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	for range 10 {
		p, err := v.Verify(tok)
		if err != nil || p.UserID != 42 || !p.Admin {
			t.Fatalf("cached verify: %+v %v", p, err)
		}
	}
	if n := checks.Load(); n != 1 {
		t.Fatalf("10 verifications of one token checked its signature %d times, want 1", n)
	}
	bad := tamperedSignature(tok)
	for range 3 {
		if _, err := v.Verify(bad); !errors.Is(err, ErrUnauthenticated) {
			t.Fatalf("tampered token: %v", err)
		}
	}
	if n := checks.Load(); n != 4 {
		t.Fatalf("a refused token must be checked every time: %d checks, want 4", n)
	}
	if len(v.cache.cur)+len(v.cache.old) != 1 {
		t.Fatalf("cache holds %d entries, want only the good token", len(v.cache.cur)+len(v.cache.old))
	}
	// Off by default.
	plain := NewVerifier(cacheSecret)
	pc := countKeys(plain)
	for range 3 {
		if _, err := plain.Verify(tok); err != nil {
			t.Fatal(err)
		}
	}
	if pc.Load() != 3 || plain.cache != nil {
		t.Fatalf("without WithTokenCache every verification checks: %d", pc.Load())
	}
}

// An entry ends at the token's exp, and at most maxAge after it was stored
// (a revoked key stops a cached token soon enough).
func TestTokenCacheHonoursExpAndMaxAge(t *testing.T) {
	now := time.Unix(1000, 0)
	c := newTokenCache(10)
	c.now = func() time.Time { return now }
	k1, k2 := sha256.Sum256([]byte("a")), sha256.Sum256([]byte("b"))
	c.put(k1, Principal{UserID: 1}, now.Add(10*time.Second))
	c.put(k2, Principal{UserID: 2}, now.Add(time.Hour))
	now = now.Add(9 * time.Second)
	if _, ok := c.get(k1); !ok {
		t.Fatal("entry gone before its exp")
	}
	now = now.Add(time.Second)
	if _, ok := c.get(k1); ok {
		t.Fatal("entry served at its exp")
	}
	now = now.Add(tokenCacheMaxAge)
	if _, ok := c.get(k2); ok {
		t.Fatal("entry served past maxAge")
	}
}

// The cache never holds more than two generations of its size.
func TestTokenCacheBounded(t *testing.T) {
	c := newTokenCache(100)
	exp := time.Now().Add(time.Hour)
	for i := range 10_000 {
		c.put(sha256.Sum256([]byte(fmt.Sprint(i))), Principal{UserID: int64(i)}, exp)
	}
	if n := len(c.cur) + len(c.old); n > 200 {
		t.Fatalf("%d entries for a cache of 100", n)
	}
	// The newest are kept.
	if _, ok := c.get(sha256.Sum256([]byte("9999"))); !ok {
		t.Fatal("the newest entry is gone")
	}
}

// BenchmarkVerify: a polling buyer's token, with and without the cache.
func BenchmarkVerify(b *testing.B) {
	tok, err := Sign(cacheSecret, 42, "", time.Hour)
	if err != nil {
		b.Fatal(err)
	}
	for _, size := range []int{0, 100_000} {
		v := NewVerifier(cacheSecret, WithTokenCache(size))
		b.Run(fmt.Sprintf("cache=%d", size), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := v.Verify(tok); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
