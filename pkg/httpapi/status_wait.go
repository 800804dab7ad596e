package httpapi

import (
	"context"
	"net/http"
	"regexp"
	"strconv"
	"time"

	"github.com/flashsale-dev/flashsale/pkg/orderstatus"
)

// waitPattern is the wait query parameter as ingress/openapi.yaml declares
// it: whole milliseconds or seconds. Exactly what the schema accepts is
// accepted (longer waits are cut to the cap), so the contract fuzzer's
// valid values always succeed and its invalid ones are always a 400.
var waitPattern = regexp.MustCompile(`^([0-9]{1,6})(ms|s)$`)

// parseWait reads ?wait=, cut to max; absent (sent false) is 0, answer at
// once. Present but empty does not match the pattern and is a 400, as the
// description says.
func parseWait(raw string, sent bool, max time.Duration) (time.Duration, error) {
	if !sent {
		return 0, nil
	}
	m := waitPattern.FindStringSubmatch(raw)
	if m == nil {
		return 0, newErr(http.StatusBadRequest, "invalid_wait", "wait must be whole milliseconds or seconds, e.g. 10s or 500ms")
	}
	n, _ := strconv.Atoi(m[1]) // at most 6 digits
	d := time.Duration(n) * time.Millisecond
	if m[2] == "s" {
		d = time.Duration(n) * time.Second
	}
	return min(d, max), nil
}

// testHookBeforeWait, when set by a test, runs after a poll's first read
// and before its waiter is registered: the window in which a status stored
// would be missed without the read that follows the registration.
var testHookBeforeWait func()

// awaitView answers a poll that asked to wait: v (the first read, PENDING)
// unless the status leaves PENDING within wait. The waiter is registered
// and subscribed BEFORE the status is read again, so a status stored between
// the first read and the subscription is seen by that read (no lost
// wake-up). Waiting holds no MySQL connection: requestView is only called
// again when an announcement for rid came (or a subscription gap), and is
// then answered by Redis' status cache. A poll that cannot wait (the bound,
// shutdown, Redis refusing the subscription) answers v at once, like a plain
// poll.
func (s *Server) awaitView(ctx context.Context, v orderstatus.View, wait time.Duration, user int64) orderstatus.View {
	if h := testHookBeforeWait; h != nil {
		h()
	}
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	wt := s.waits.acquire(v.ItemID, v.RequestID)
	if wt == nil {
		return v
	}
	defer s.waits.release(wt)
	select {
	case <-wt.w.ready:
	case <-deadline.C:
		return v
	case <-ctx.Done():
		return v
	case <-s.waits.done:
		return v
	}
	if !wt.w.ok {
		return v
	}
	// The re-read without an announcement (FLASHSALE_STATUS_RECHECK): an
	// announcement lost on the way (a slot migrating, a failover) costs at
	// most one interval, not the whole wait.
	var recheck <-chan time.Time
	if every := s.cfg.Ingress.StatusRecheck; every > 0 {
		tk := time.NewTicker(every)
		defer tk.Stop()
		recheck = tk.C
	}
	for {
		nv, err := s.requestView(ctx, v.RequestID, user)
		switch {
		case err != nil && recheck == nil:
			// A failed re-read with nothing to try again: the last
			// answer still holds.
			return v
		case err == nil && nv.Status != orderstatus.Pending:
			return nv
		case err == nil:
			v = nv
		}
		// A failed re-read (a slot just handed over, Redis busy) is tried
		// again at the next wake-up or recheck; the deadline answers the
		// last view.
		select {
		case <-wt.wake:
		case <-recheck:
		case <-deadline.C:
			return v
		case <-ctx.Done():
			return v
		case <-s.waits.done:
			return v
		}
	}
}
