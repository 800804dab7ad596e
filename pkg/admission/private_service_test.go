package admission

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/stock"
)

// privateService is an admission service with cfg on a Redis of the
// test's own (no database, metrics on a registry of their own, no log),
// publishing to a counting publisher: the service, its Redis client and
// store, and the publisher.
func privateService(t *testing.T, cfg Config) (*Service, redis.UniversalClient, *stock.Store, *countingPublisher) {
	t.Helper()
	r := testenv.StartPrivateRedis(t)
	rdb := r.Client(5 * time.Second)
	st := stock.New(rdb)
	pub := &countingPublisher{}
	svc := New(cfg, Deps{Stock: st, Publisher: pub}, NewMetrics(prometheus.NewRegistry()), slog.New(slog.NewTextHandler(io.Discard, nil)))
	return svc, rdb, st, pub
}
