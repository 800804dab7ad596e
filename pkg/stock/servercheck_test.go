package stock_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/stock"
)

func TestCheckServerAcceptsTheStacksRedis(t *testing.T) {
	rdb := testenv.Redis(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := stock.CheckServer(ctx, rdb); err != nil {
		t.Fatalf("the local stack's Redis (7.x, noeviction) refused: %v", err)
	}
}

// TestCheckServerRefusesAnEvictingRedis: managed Redis defaults to an LRU
// policy; an evicted reservation is stock lost without a trace.
func TestCheckServerRefusesAnEvictingRedis(t *testing.T) {
	r := testenv.StartPrivateRedis(t)
	rdb := r.Client(2 * time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := rdb.ConfigSet(ctx, "maxmemory-policy", "volatile-lru").Err(); err != nil {
		t.Fatal(err)
	}
	err := stock.CheckServer(ctx, rdb)
	if !errors.Is(err, stock.ErrServerUnfit) || !strings.Contains(err.Error(), r.Addr) ||
		!strings.Contains(err.Error(), `maxmemory-policy "volatile-lru"`) {
		t.Fatalf("CheckServer on a volatile-lru Redis = %v, want ErrServerUnfit naming %s and the policy", err, r.Addr)
	}
	if err := rdb.ConfigSet(ctx, "maxmemory-policy", "noeviction").Err(); err != nil {
		t.Fatal(err)
	}
	if err := stock.CheckServer(ctx, rdb); err != nil {
		t.Fatalf("after noeviction: %v, want nil", err)
	}
}

func TestCheckServerAnswersAnUnreachableRedisWithItsError(t *testing.T) {
	r := testenv.StartPrivateRedis(t)
	rdb := r.Client(500 * time.Millisecond)
	r.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := stock.CheckServer(ctx, rdb)
	if err == nil || errors.Is(err, stock.ErrServerUnfit) {
		t.Fatalf("CheckServer on a stopped Redis = %v, want the connection error, not unfit", err)
	}
}
