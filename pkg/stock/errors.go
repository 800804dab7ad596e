package stock

import (
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/redis/go-redis/v9"
)

// ErrUnavailable wraps every failure to reach Redis, so callers can answer 503
// with errors.Is without knowing go-redis' error types.
var ErrUnavailable = errors.New("stock: redis unavailable")

// Unavailable wraps err, a failure of op to reach Redis, in ErrUnavailable:
// the one wrap of every store over the ledger's client (pkg/orderstatus,
// pkg/stockchange, pkg/bucketview, the reaper's sweeps), so their callers
// answer or stop on one error.
func Unavailable(op string, err error) error {
	return fmt.Errorf("%s: %w: %w", op, ErrUnavailable, err)
}

// ErrPending is returned by Warm while reservations of the item are still
// waiting for their outcome.
var ErrPending = errors.New("stock: reservations pending")

// poolTimeout is go-redis' internal pool.ErrPoolTimeout, which the package
// does not export: no connection was free, so nothing was sent.
const poolTimeout = "redis: connection pool timeout"

// NotSent reports whether a failed call certainly never ran on Redis: the
// connection could not be made, no pooled connection was free, the client
// is closed, the call left the Coalescer's queue unsent, or a Redis Cluster
// node refused the command before running it (clusterRefused). Any other
// failure (a timeout or a reset after the command was written) is
// ambiguous: the command may have run and only its reply was lost.
//
// go-redis returns the last attempt's error only, so a "not sent" last
// error after an attempt that was written (EOF or a reset after the write,
// then a refused dial) would be wrong. The hot path's scripts are therefore
// sent once per attempt by go-redis and attempted again by sendRetried,
// which marks such an error (writtenError): NotSent is false for it. A
// timed-out call is not attempted again: ContextTimeoutEnabled ends a read
// at the call's deadline (the store timeout, as ReadTimeout), and a further
// attempt would fail with the context's error, which is ambiguous.
func NotSent(err error) bool {
	var we *writtenError
	if err == nil || errors.As(err, &we) {
		return false
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	if errors.Is(err, redis.ErrClosed) || errors.Is(err, ErrNotSent) {
		return true
	}
	return strings.Contains(err.Error(), poolTimeout) || clusterRefused(err)
}

// clusterRefused reports a Cluster node's refusal to run a command, which
// it decides before running anything (the cluster spec's redirections): a
// slot move's (slotMoved: TRYAGAIN, or MOVED or ASK once go-redis has
// followed MaxRedirects of them) or CLUSTERDOWN. The hot path's scripts are
// attempted again after each of these (sendRetried, with go-redis'
// backoff; go-redis' own retries took 69-234 ms in all before the caller
// saw TRYAGAIN in reshard_cluster_test.go), so the caller sees one only
// when a migration or an outage outlasts that; a migration the admission
// then waits out (WaitOutMove).
func clusterRefused(err error) bool {
	return slotMoved(err) || redis.IsClusterDownError(err)
}
