package reap

import (
	"context"
	"time"

	"github.com/flashsale-dev/flashsale/pkg/store"
)

// txAttempts bounds how often one batch transaction is retried within a
// pass on a transient MySQL error (deadlock with a consumer inserting a
// duplicate buyer's order, a dropped connection). Retrying is safe: the
// claim re-reads what is still UNPAID and expired, so a commit that did go
// through before an ambiguous error is never repeated. Past the bound the
// pass fails and the next interval tries again.
const txAttempts = 3

func retryTx[T any](ctx context.Context, fn func() (T, error)) (T, error) {
	backoff := 50 * time.Millisecond
	for attempt := 1; ; attempt++ {
		v, err := fn()
		if err == nil || attempt == txAttempts || !store.IsTransient(err) || ctx.Err() != nil {
			return v, err
		}
		select {
		case <-ctx.Done():
			return v, err
		case <-time.After(backoff):
		}
		backoff *= 2
	}
}
