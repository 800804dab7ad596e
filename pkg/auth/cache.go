package auth

import (
	"crypto/sha256"
	"sync"
	"time"
)

// tokenCache remembers tokens this verifier accepted, so a buyer who polls
// a request ten times a second does not pay for the signature check (HMAC,
// or RSA/ECDSA with a JWKS) and the JSON decode each time. It is keyed by
// the SHA-256 of the token (no token is kept in memory) and only holds
// successes: a refused token is checked again every time, so a flood of
// bad tokens cannot fill it.
//
// An entry lives until the token's own exp and at most maxAge: a key the
// identity provider revoked stops a cached token within maxAge, as a
// policy change would. Bounded by two generations of size entries: when the
// current one fills up, it becomes the old one and the old one is dropped,
// which keeps the hot tokens without any per-entry bookkeeping.
type tokenCache struct {
	size   int
	maxAge time.Duration
	now    func() time.Time

	mu       sync.Mutex
	cur, old map[[sha256.Size]byte]cachedToken
}

type cachedToken struct {
	p     Principal
	until time.Time
}

// tokenCacheMaxAge bounds how long a cached token outlives a revoked key.
const tokenCacheMaxAge = time.Minute

func newTokenCache(size int) *tokenCache {
	return &tokenCache{size: size, maxAge: tokenCacheMaxAge, now: time.Now,
		cur: make(map[[sha256.Size]byte]cachedToken), old: map[[sha256.Size]byte]cachedToken{}}
}

func (c *tokenCache) get(k [sha256.Size]byte) (Principal, bool) {
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.cur[k]
	if !ok {
		if e, ok = c.old[k]; ok {
			c.putLocked(k, e)
		}
	}
	if !ok || !now.Before(e.until) {
		return Principal{}, false
	}
	return e.p, true
}

func (c *tokenCache) put(k [sha256.Size]byte, p Principal, exp time.Time) {
	until := earlier(exp, c.now().Add(c.maxAge))
	c.mu.Lock()
	defer c.mu.Unlock()
	c.putLocked(k, cachedToken{p: p, until: until})
}

func (c *tokenCache) putLocked(k [sha256.Size]byte, e cachedToken) {
	if len(c.cur) >= c.size {
		c.old, c.cur = c.cur, make(map[[sha256.Size]byte]cachedToken, c.size)
	}
	c.cur[k] = e
}

// earlier of two times.
func earlier(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
