package stock

import (
	"errors"
	"net"
	"strings"

	"github.com/redis/go-redis/v9"
)

// ErrUnavailable wraps every failure to reach Redis, so callers can answer 503
// with errors.Is without knowing go-redis' error types.
var ErrUnavailable = errors.New("stock: redis unavailable")

// ErrPending is returned by Warm while reservations of the item are still
// waiting for their outcome.
var ErrPending = errors.New("stock: reservations pending")

// poolTimeout is go-redis' internal pool.ErrPoolTimeout, which the package
// does not export: no connection was free, so nothing was sent.
const poolTimeout = "redis: connection pool timeout"

// NotSent reports whether a failed call certainly never reached Redis: the
// connection could not be made, no pooled connection was free, the client
// is closed, or the call left the Coalescer's queue unsent. Any other failure (a timeout or a reset after the command was
// written) is ambiguous: the command may have run and only its reply was lost.
func NotSent(err error) bool {
	if err == nil {
		return false
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	if errors.Is(err, redis.ErrClosed) || errors.Is(err, ErrNotSent) {
		return true
	}
	return strings.Contains(err.Error(), poolTimeout)
}
