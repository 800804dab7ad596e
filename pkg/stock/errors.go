package stock

import "errors"

// ErrUnavailable wraps every failure to reach Redis, so callers can answer 503
// with errors.Is without knowing go-redis' error types.
var ErrUnavailable = errors.New("stock: redis unavailable")

// ErrPending is returned by Warm while reservations of the item are still
// waiting for their outcome.
var ErrPending = errors.New("stock: reservations pending")
