package httpapi

import (
	"context"
	"github.com/flashsale-dev/flashsale/pkg/stock"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/redis/go-redis/v9"
)

// ipLimiter is a fixed one-second window per client IP in Redis, shared by
// every ingress replica. It fails open: when Redis is down the admission
// itself fails closed, so letting the request through costs nothing and
// keeps status polls and the item page working.
//
// After a failure the limiter stays open for a second without asking Redis,
// so an outage costs the request one timeout (the admission's), not two.
// Its own timeout (a quarter of the store timeout) holds against a stalled
// Redis only because stock.NewClient sets ContextTimeoutEnabled: without it
// go-redis bounds the socket by the client's read timeout, not by ctx
// (TestIPLimiterBoundWhenRedisStalls).
type ipLimiter struct {
	rdb       redis.UniversalClient
	perSec    int64
	timeout   time.Duration
	downUntil atomic.Int64 // unix nanos
}

// allow counts one request of ip; INCR and EXPIRE go in one round trip.
func (l *ipLimiter) allow(ctx context.Context, ip string, now time.Time) (bool, error) {
	if now.UnixNano() < l.downUntil.Load() {
		return true, nil
	}
	ctx, cancel := context.WithTimeout(ctx, l.timeout)
	defer cancel()
	key := stock.Root() + "ip:" + ip + ":" + strconv.FormatInt(now.Unix(), 10)
	pipe := l.rdb.Pipeline()
	incr := pipe.Incr(ctx, key)
	pipe.Expire(ctx, key, 2*time.Second)
	if _, err := pipe.Exec(ctx); err != nil {
		l.downUntil.Store(now.Add(time.Second).UnixNano())
		return true, err
	}
	return incr.Val() <= l.perSec, nil
}

func (s *Server) ipLimit(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		ok, err := s.ipl.allow(c.Request().Context(), c.RealIP(), time.Now())
		if err != nil {
			s.log.WarnContext(c.Request().Context(), "ip rate limit unavailable; failing open", "err", err)
		}
		if !ok {
			return &apiError{Status: 429, Code: "rate_limited", Message: "too many requests from this address", RetryAfter: time.Second}
		}
		return next(c)
	}
}
