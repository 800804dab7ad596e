package waitroom

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/flashsale-dev/flashsale/pkg/store"
)

// grantKeys caches the items' grant keys (QueueGrantKey): an order's
// check is then a map read and an HMAC, never a MySQL query on the hot
// path. A key never changes while its queue exists and the queue cannot
// change once opened, so entries live a minute; "no queue" lives a second,
// as long as the Room's item views (itemTTL), so a queue turned on is seen
// as soon as the item is.
type grantKeys struct {
	flights singleflight.Group
	mu      sync.Mutex
	m       map[int64]grantKey
}

type grantKey struct {
	key     []byte // nil: the item has no queue
	expires time.Time
}

const (
	grantKeyTTL   = time.Minute
	noGrantKeyTTL = time.Second
)

func newGrantKeys() *grantKeys { return &grantKeys{m: map[int64]grantKey{}} }

// key returns item id's grant key, nil when it has no queue.
func (g *grantKeys) key(ctx context.Context, db store.Querier, timeout time.Duration, id int64) ([]byte, error) {
	g.mu.Lock()
	e, ok := g.m[id]
	g.mu.Unlock()
	if ok && time.Now().Before(e.expires) {
		return e.key, nil
	}
	ch := g.flights.DoChan(strconv.FormatInt(id, 10), func() (any, error) {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
		defer cancel()
		k, err := QueueGrantKey(dctx, db, id)
		e := grantKey{key: k, expires: time.Now().Add(grantKeyTTL)}
		switch {
		case errors.Is(err, store.ErrNotFound):
			e = grantKey{expires: time.Now().Add(noGrantKeyTTL)}
		case err != nil:
			return nil, err
		}
		g.mu.Lock()
		g.m[id] = e
		g.mu.Unlock()
		return e.key, nil
	})
	select {
	case res := <-ch:
		if res.Err != nil {
			return nil, res.Err
		}
		return res.Val.([]byte), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// grantKey is item's grant key for signing: ErrUnavailable when it cannot
// be read, or when the item has no queue (a ticket's item had one when the
// ticket was read: it was turned off since, and no grant can be signed).
func (r *Room) grantKey(ctx context.Context, item int64) ([]byte, error) {
	k, err := r.grants.key(ctx, r.db, r.cfg.StoreTimeout, item)
	if err != nil || k == nil {
		r.log.WarnContext(ctx, "queue: grant key", "item_id", item, "err", err)
		return nil, fmt.Errorf("grant key of item %d: %w", item, ErrUnavailable)
	}
	return k, nil
}

// Grant signs a fresh grant of item for user, good for the configured
// GrantTTL, and says when it expires.
func (r *Room) Grant(ctx context.Context, item, user int64) (string, time.Time, error) {
	k, err := r.grantKey(ctx, item)
	if err != nil {
		return "", time.Time{}, err
	}
	exp := r.now().Add(r.cfg.GrantTTL).Truncate(time.Millisecond)
	return SignGrant(k, item, user, exp), exp, nil
}

// offerGrant signs the grant of user's waitlist offer of item, good until
// the offer's claim window ends.
func (r *Room) offerGrant(ctx context.Context, item, user int64, expires time.Time) (string, error) {
	k, err := r.grantKey(ctx, item)
	if err != nil {
		return "", err
	}
	return SignOfferGrant(k, item, user, expires), nil
}

// GrantKind is what an order's checked grant lets it do.
type GrantKind int

const (
	NoGrant    GrantKind = iota // none, or an item without a queue
	AdmitGrant                  // an admitted ticket's: order from the stock
	OfferGrant                  // a waitlist offer's: claim the unit it holds
)

// CheckGrant checks an order's admission grant g for item and user: its
// kind when it is good; NoGrant with no error for an item without a queue
// (a grant sent for it is ignored, and the ledger decides as for any
// item); ErrGrantExpired, ErrGrantInvalid or ErrOfferGone for a bad one
// (counted), ErrUnavailable when the key cannot be read.
func (r *Room) CheckGrant(ctx context.Context, item, user int64, g string) (GrantKind, error) {
	k, err := r.grants.key(ctx, r.db, r.cfg.StoreTimeout, item)
	if err != nil {
		r.log.WarnContext(ctx, "queue: grant key", "item_id", item, "err", err)
		return NoGrant, fmt.Errorf("grant key of item %d: %w", item, ErrUnavailable)
	}
	if k == nil {
		return NoGrant, nil
	}
	_, err = VerifyGrant(k, g, item, user, r.now())
	switch {
	case errors.Is(err, ErrGrantExpired) && IsOfferGrant(g):
		r.CountRefusal(RefusedOfferGone)
		return NoGrant, ErrOfferGone
	case errors.Is(err, ErrGrantExpired):
		r.CountRefusal(RefusedExpired)
		return NoGrant, err
	case err != nil:
		r.CountRefusal(RefusedInvalid)
		return NoGrant, err
	case IsOfferGrant(g):
		return OfferGrant, nil
	}
	return AdmitGrant, nil
}
