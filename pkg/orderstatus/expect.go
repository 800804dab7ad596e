package orderstatus

import (
	"context"
	"time"

	"github.com/flashsale-dev/flashsale/pkg/reqid"
)

// Expected is a wait for the status of a request registered before the
// request's message was published (Reader.Expect). No status of a request
// is stored before its message exists, so when the wait's subscription
// was already confirmed at Expect every status of the request is
// announced to it, and the wait needs no first read: an order answered
// with its status (POST /api/v1/orders?wait=) costs Redis no lookup, where
// a long poll after the 202 reads once.
type Expected struct {
	wt         *waiter
	subscribed bool
}

// Expect registers a wait for rid, an admitted request about to be
// published: call it before the publish, then Await if the request was
// accepted, else Drop. nil when no wait can be registered (the bound,
// shutdown, a malformed id): Poll then, which reads first.
func (r *Reader) Expect(rid string) *Expected {
	item, err := reqid.Item(rid)
	if err != nil {
		return nil
	}
	wt := r.waits.acquire(item, rid)
	if wt == nil {
		return nil
	}
	return &Expected{wt: wt, subscribed: wt.w.subscribed()}
}

// RequestID is the request e waits for.
func (e *Expected) RequestID() string { return e.wt.rid }

// Await answers e's request, pending as v (its id, item, qty and owner as
// the order gave them), as Poll would: as soon as its status leaves
// PENDING, or v when wait is over. A wait that was not subscribed at
// Expect reads once it is, for a status stored in between.
func (r *Reader) Await(ctx context.Context, e *Expected, v View, wait time.Duration) View {
	defer r.waits.release(e.wt)
	return r.await(ctx, e.wt, v, wait, v.UserID, e.subscribed)
}

// Drop releases e, the wait of a request that was not accepted; nil is
// nothing to release.
func (r *Reader) Drop(e *Expected) {
	if e != nil {
		r.waits.release(e.wt)
	}
}
