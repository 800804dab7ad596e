package httpapi

import (
	"time"

	"golang.org/x/sync/singleflight"
)

// requestCache shares the MySQL reads of status polls that miss Redis
// (singleflight per request id) and remembers briefly which well-formed
// request ids MySQL does not know, so polling an unknown id costs MySQL one
// query per TTL. Redis is asked first on every poll, so a reservation or a
// cached status always wins over a negative entry, and a decision MySQL
// makes later is hidden for at most the TTL.
type requestCache struct {
	missing *negCache[string]
	flights singleflight.Group
}

// unknownRequestTTL is how long "no such request" is answered from memory.
const unknownRequestTTL = time.Second

// maxUnknownRequests bounds the unknown request ids remembered.
const maxUnknownRequests = 10000

func newRequestCache() *requestCache {
	return &requestCache{missing: newNegCache[string](unknownRequestTTL, maxUnknownRequests)}
}
