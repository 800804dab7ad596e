package startup

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flashsale-dev/flashsale/pkg/config"
	"github.com/flashsale-dev/flashsale/pkg/migrate"
	"github.com/flashsale-dev/flashsale/pkg/ops"
	"github.com/flashsale-dev/flashsale/pkg/stock"
	"github.com/flashsale-dev/flashsale/pkg/store"
)

// RetryEvery is how often a dependency that does not answer is asked again.
const RetryEvery = 2 * time.Second

// Checks is how one deployable treats its stores at start-up.
type Checks struct {
	// Timeout bounds each single call (FLASHSALE_STORE_TIMEOUT).
	Timeout time.Duration
	// Server is FLASHSALE_SERVER_CHECKS: refuse an unfit server, or warn.
	Server config.ServerChecks
	// Schema is the schema the binary was built with (schema.FS); nil
	// skips the schema check.
	Schema fs.FS
	Log    *slog.Logger
}

// MySQL waits until db answers, then checks the server (store.CheckServer)
// and that every migration of c.Schema is applied (migrate.RequireCurrent).
// It returns an error only when ctx ends or a check refuses; the error of
// a schema behind the binary wraps migrate.ErrSchemaBehind and says to run
// setup.
func (c Checks) MySQL(ctx context.Context, db *sql.DB) error {
	if err := ops.WaitFor(ctx, "mysql", db.PingContext, c.Timeout, RetryEvery, c.Log); err != nil {
		return err
	}
	if err := c.server("mysql", store.CheckServer(ctx, db)); err != nil {
		return err
	}
	if c.Schema == nil {
		return nil
	}
	qctx, cancel := context.WithTimeout(ctx, c.Timeout)
	defer cancel()
	if err := migrate.RequireCurrent(qctx, db, c.Schema); err != nil {
		return fmt.Errorf("schema: %w", err)
	}
	return nil
}

// Redis waits until rdb answers, then checks every primary's version and
// eviction policy (stock.CheckServer).
func (c Checks) Redis(ctx context.Context, rdb redis.UniversalClient) error {
	ping := func(ctx context.Context) error { return rdb.Ping(ctx).Err() }
	if err := ops.WaitFor(ctx, "redis", ping, c.Timeout, RetryEvery, c.Log); err != nil {
		return err
	}
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		cctx, cancel := context.WithTimeout(ctx, c.Timeout)
		err = stock.CheckServer(cctx, rdb)
		cancel()
		if err == nil || errors.Is(err, stock.ErrServerUnfit) {
			break
		}
		// A Cluster still settling (a node answered PING, another not
		// yet): ask again rather than refuse.
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(RetryEvery):
		}
	}
	if err != nil && !errors.Is(err, stock.ErrServerUnfit) {
		return fmt.Errorf("redis: server check: %w", err)
	}
	return c.server("redis", err)
}

// server applies FLASHSALE_SERVER_CHECKS to a check's finding.
func (c Checks) server(name string, err error) error {
	if err == nil {
		return nil
	}
	if !errors.Is(err, stock.ErrServerUnfit) && !errors.Is(err, store.ErrServerUnfit) {
		return fmt.Errorf("%s: server check: %w", name, err)
	}
	if c.Server.Enforce() {
		return fmt.Errorf("%w (FLASHSALE_SERVER_CHECKS=warn starts anyway)", err)
	}
	c.Log.Warn("server unfit, starting anyway (FLASHSALE_SERVER_CHECKS=warn)", "dependency", name, "err", err)
	return nil
}
