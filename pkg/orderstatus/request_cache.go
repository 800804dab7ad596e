package orderstatus

import (
	"context"
	"errors"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/flashsale-dev/flashsale/internal/negcache"
	"github.com/flashsale-dev/flashsale/pkg/store"
)

// requestCache shares the MySQL reads of status polls that miss Redis
// (singleflight per request id) and remembers briefly which well-formed
// request ids MySQL does not know, so polling an unknown id costs MySQL one
// query per TTL. Redis is asked first on every poll, so a reservation or a
// cached status always wins over a negative entry, and a decision MySQL
// makes later is hidden for at most the TTL.
type requestCache struct {
	missing *negcache.Cache[string]
	flights singleflight.Group
	now     func() time.Time
}

// unknownRequestTTL is how long "no such request" is answered from memory.
const unknownRequestTTL = time.Second

// maxUnknownRequests bounds the unknown request ids remembered.
const maxUnknownRequests = 10000

func newRequestCache() *requestCache {
	return &requestCache{missing: negcache.New[string](unknownRequestTTL, maxUnknownRequests), now: time.Now}
}

// read returns rid's state from load, one call shared by the concurrent
// callers of rid, or store.ErrNotFound from memory while MySQL's "no such
// request" is fresh. The negative entry is checked again inside the flight:
// a caller whose first check ran just before another flight recorded the
// miss (its check and its DoChan can straddle that whole flight on a busy
// machine) would otherwise start a second query within the TTL. load runs
// detached from ctx, since the callers sharing it outlive the one that
// started it if that client hangs up; ctx bounds only this caller's wait.
func (c *requestCache) read(ctx context.Context, rid string, load func(context.Context) (store.RequestState, error)) (store.RequestState, error) {
	if c.missing.Has(rid, c.now()) {
		return store.RequestState{}, store.ErrNotFound
	}
	ch := c.flights.DoChan(rid, func() (any, error) {
		asked := c.now()
		if c.missing.Has(rid, asked) {
			return store.RequestState{}, store.ErrNotFound
		}
		st, err := load(context.WithoutCancel(ctx))
		if errors.Is(err, store.ErrNotFound) {
			c.missing.Add(rid, asked)
		}
		return st, err
	})
	select {
	case res := <-ch:
		if res.Err != nil {
			return store.RequestState{}, res.Err
		}
		return res.Val.(store.RequestState), nil
	case <-ctx.Done():
		return store.RequestState{}, ctx.Err()
	}
}
