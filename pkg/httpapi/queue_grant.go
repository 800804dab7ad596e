package httpapi

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/flashsale-dev/flashsale/pkg/store"
	"github.com/flashsale-dev/flashsale/pkg/waitroom"
)

// Answers to an order of a queued item whose grant does not do.
var (
	errGrantRequired = newErr(http.StatusForbidden, "admission_required",
		"this item has a waiting room: take a ticket (POST /api/v1/items/{id}/queue), wait until it is admitted, and order with its admission_grant")
	errGrantInvalid = newErr(http.StatusForbidden, "admission_invalid",
		"admission_grant is not a grant of this item for you: order with the grant your own admitted ticket shows")
	errGrantExpired = newErr(http.StatusForbidden, "admission_expired",
		"admission_grant has expired: read your ticket again (GET /api/v1/items/{id}/queue/{ticket}) for a fresh one")
	errOfferGone = newErr(http.StatusForbidden, "offer_gone",
		"your waitlist offer was claimed already or its claim window ended; nothing was reserved")
)

// grantKeys caches the items' grant keys (store.QueueGrantKey): an order's
// check is then a map read and an HMAC, never a MySQL query on the hot
// path. A key never changes while its queue exists and the queue cannot
// change once opened, so entries live a minute; "no queue" lives as long
// as the item cache's entries, so a queue turned on is seen as soon as the
// item is.
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
func (g *grantKeys) key(ctx context.Context, s *Server, id int64) ([]byte, error) {
	g.mu.Lock()
	e, ok := g.m[id]
	g.mu.Unlock()
	if ok && time.Now().Before(e.expires) {
		return e.key, nil
	}
	ch := g.flights.DoChan(strconv.FormatInt(id, 10), func() (any, error) {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.StoreTimeout)
		defer cancel()
		k, err := store.QueueGrantKey(dctx, s.db, id)
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

// grantFor signs a fresh grant of item for user, good for the configured
// FLASHSALE_QUEUE_GRANT_TTL.
func (s *Server) grantFor(ctx context.Context, item, user int64) (string, time.Time, error) {
	k, err := s.grantKeys.key(ctx, s, item)
	if err != nil || k == nil {
		s.log.WarnContext(ctx, "queue: grant key", "item_id", item, "err", err)
		return "", time.Time{}, unavailable("ticket temporarily unavailable")
	}
	exp := s.grantNow().Add(s.cfg.Ingress.QueueGrantTTL).Truncate(time.Millisecond)
	return waitroom.SignGrant(k, item, user, exp), exp, nil
}

// offerGrantFor signs the grant of user's waitlist offer of item, good
// until the offer's claim window ends.
func (s *Server) offerGrantFor(ctx context.Context, item, user int64, expires time.Time) (string, error) {
	k, err := s.grantKeys.key(ctx, s, item)
	if err != nil || k == nil {
		s.log.WarnContext(ctx, "queue: grant key", "item_id", item, "err", err)
		return "", unavailable("ticket temporarily unavailable")
	}
	return waitroom.SignOfferGrant(k, item, user, expires), nil
}

// grantKind is what an order's checked grant lets it do.
type grantKind int

const (
	noGrant    grantKind = iota // none, or an item without a queue
	admitGrant                  // an admitted ticket's: order from the stock
	offerGrant                  // a waitlist offer's: claim the unit it holds
)

// checkGrant checks an order's admission_grant g for item and user: its
// kind when it is good; noGrant with no error for an item without a queue
// (a grant sent for it is ignored, and admit.lua decides as for any item);
// an errGrant* for a bad one, 503 when the key cannot be read.
func (s *Server) checkGrant(ctx context.Context, item, user int64, g string) (grantKind, error) {
	k, err := s.grantKeys.key(ctx, s, item)
	if err != nil {
		s.log.WarnContext(ctx, "queue: grant key", "item_id", item, "err", err)
		return noGrant, unavailable("the order could not be taken; nothing was reserved, please retry")
	}
	if k == nil {
		return noGrant, nil
	}
	_, err = waitroom.VerifyGrant(k, g, item, user, s.grantNow())
	switch {
	case errors.Is(err, waitroom.ErrGrantExpired) && waitroom.IsOfferGrant(g):
		s.m.grantsRefused.WithLabelValues("offer_gone").Inc()
		return noGrant, errOfferGone
	case errors.Is(err, waitroom.ErrGrantExpired):
		s.m.grantsRefused.WithLabelValues("expired").Inc()
		return noGrant, errGrantExpired
	case err != nil:
		s.m.grantsRefused.WithLabelValues("invalid").Inc()
		return noGrant, errGrantInvalid
	case waitroom.IsOfferGrant(g):
		return offerGrant, nil
	}
	return admitGrant, nil
}
