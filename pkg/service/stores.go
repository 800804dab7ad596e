package service

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"

	"github.com/redis/go-redis/v9"

	"github.com/flashsale-dev/flashsale/pkg/config"
	"github.com/flashsale-dev/flashsale/pkg/ops"
	"github.com/flashsale-dev/flashsale/pkg/orderlog"
	"github.com/flashsale-dev/flashsale/pkg/orderstatus"
	"github.com/flashsale-dev/flashsale/pkg/startup"
	"github.com/flashsale-dev/flashsale/pkg/stock"
	"github.com/flashsale-dev/flashsale/pkg/stockchange"
	"github.com/flashsale-dev/flashsale/pkg/store"
	"github.com/flashsale-dev/flashsale/pkg/waitroom"
	"github.com/flashsale-dev/flashsale/schema"
)

// Needs is what a deployable opens of the stores.
type Needs struct {
	// MySQLConns and RedisConns size the two pools.
	MySQLConns, RedisConns int
	// Kafka builds the brokers' TLS and SASL (orderlog.Security) and checks
	// them; Scripts preloads the Lua scripts of pkg/stock, pkg/waitroom,
	// pkg/orderstatus and pkg/stockchange (an optimisation: a failure is a
	// warning, each script loads on its first use).
	Kafka, Scripts bool
}

// Stores are a deployable's store clients, closed by the shutdown after
// everything deferred after Open.
type Stores struct {
	DB    *sql.DB
	Redis redis.UniversalClient
	Kafka *orderlog.Security // nil unless Needs.Kafka

	c   config.Common
	log *slog.Logger
}

// Open opens the MySQL pool and the Redis client (and the Kafka security)
// from the FLASHSALE_* settings. Nothing is waited for here: a refused
// login or certificate stops start-up with one line naming the setting; a
// store that is merely down is waited for by Checks, with the listeners up.
func (p *Process) Open(ctx context.Context, n Needs) (*Stores, error) {
	c := p.c
	db, err := store.Pool(c.DSN(), n.MySQLConns)
	if err != nil {
		return nil, err
	}
	p.Defer(func() error { _ = db.Close(); return nil })
	if err := c.CheckMySQL(ctx, db); err != nil {
		return nil, err
	}
	rdb := stock.NewClientFrom(c.RedisConn(), c.StoreTimeout, n.RedisConns)
	p.Defer(func() error { _ = rdb.Close(); return nil })
	if err := stock.StartupCheck(ctx, rdb, c.RedisConn(), c.StoreTimeout); err != nil {
		return nil, err
	}
	s := &Stores{DB: db, Redis: rdb, c: c, log: p.Log}
	if n.Kafka {
		if s.Kafka, err = orderlog.NewSecurity(c.Kafka); err != nil {
			return nil, err
		}
		if err := s.Kafka.StartupCheck(ctx, c.Brokers(), c.StoreTimeout); err != nil {
			return nil, err
		}
	}
	if n.Scripts {
		if err := errors.Join(stock.LoadScripts(ctx, rdb), waitroom.LoadScripts(ctx, rdb), orderstatus.LoadScripts(ctx, rdb),
			stockchange.LoadScripts(ctx, rdb)); err != nil {
			p.Log.Warn("lua scripts not preloaded; they load on first use", "err", err)
		}
	}
	return s, nil
}

// Readiness is /readyz over the stores: mysql, redis and, when opened,
// kafka, each within FLASHSALE_STORE_TIMEOUT.
func (s *Stores) Readiness() ops.Readiness {
	r := ops.Readiness{Timeout: s.c.StoreTimeout, Checks: map[string]ops.Check{
		"mysql": s.DB.PingContext,
		"redis": func(ctx context.Context) error { return s.Redis.Ping(ctx).Err() },
	}}
	if s.Kafka != nil {
		r.Checks["kafka"] = func(ctx context.Context) error { return s.Kafka.Ping(ctx, s.c.Brokers()) }
	}
	return r
}

// Checks are the start-up checks of MySQL and Redis (pkg/startup), for
// Await: each waits for its store, then refuses an unfit server
// (FLASHSALE_SERVER_CHECKS) or a schema behind this binary.
func (s *Stores) Checks() []Check {
	checks := startup.Checks{Timeout: s.c.StoreTimeout, Server: s.c.ServerChecks, Schema: schema.FS, Log: s.log}
	return []Check{
		func(ctx context.Context) error { return checks.MySQL(ctx, s.DB) },
		func(ctx context.Context) error { return checks.Redis(ctx, s.Redis) },
	}
}
