// Command setup prepares flashsale's stores, idempotently: it applies the
// MySQL migrations in schema/ and creates the Kafka topics. Run it before the
// deployables (make run, the compose "setup" job); running it twice, or two
// at once, is safe.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/flashsale-dev/flashsale/pkg/config"
	"github.com/flashsale-dev/flashsale/pkg/migrate"
	"github.com/flashsale-dev/flashsale/pkg/ops"
	"github.com/flashsale-dev/flashsale/pkg/orderlog"
	"github.com/flashsale-dev/flashsale/pkg/startup"
	"github.com/flashsale-dev/flashsale/pkg/store"
	"github.com/flashsale-dev/flashsale/schema"
)

func main() {
	// "setup -probe URL" is the container healthcheck of every deployable:
	// the distroless image has no curl.
	if len(os.Args) == 3 && os.Args[1] == "-probe" {
		os.Exit(probe(os.Args[2]))
	}
	var common config.Common
	var setup config.Setup
	fs := flag.NewFlagSet("setup", flag.ContinueOnError)
	if err := config.Parse(fs, os.Args[1:], &common, &setup); err != nil {
		os.Exit(config.Exit(fs, err))
	}
	log := ops.NewLogger("setup", common.LogLevel, common.LogBurst)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, common, setup, log); err != nil {
		log.Error("setup failed", "err", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, c config.Common, s config.Setup, log *slog.Logger) error {
	ctx, cancel := context.WithTimeout(ctx, s.Wait)
	defer cancel()
	// A server that would not enforce the schema's CHECK constraints is
	// refused before anything is migrated onto it.
	pool, err := store.Pool(c.DSN(), 1)
	if err != nil {
		return err
	}
	// A refused login or certificate is one line naming the setting, never
	// retried until FLASHSALE_WAIT runs out.
	if err := c.CheckMySQL(ctx, pool); err != nil {
		pool.Close()
		return err
	}
	err = startup.Checks{Timeout: c.StoreTimeout, Server: c.ServerChecks, Log: log}.MySQL(ctx, pool)
	pool.Close()
	if err != nil {
		return fmt.Errorf("mysql: %w", err)
	}
	if err := retry(ctx, log, "mysql", retryableMySQL, func() error {
		db, err := store.Open(ctx, c.DSN(), 2, c.StoreTimeout)
		if err != nil {
			return err
		}
		defer db.Close()
		applied, err := migrate.Apply(ctx, db, schema.FS, log)
		if err == nil {
			log.Info("schema up to date", "applied_now", len(applied))
		}
		return err
	}); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	var rep orderlog.TopicsReport
	// A topic below its durability is an operator's decision; too few
	// brokers may be a cluster still starting.
	// Settings the brokers refuse (config.ErrRefused) are not retried either.
	retryableKafka := func(err error) bool {
		return !errors.Is(err, orderlog.ErrUnderReplicated) && !errors.Is(err, config.ErrRefused)
	}
	kafkaSec, err := orderlog.NewSecurity(c.Kafka)
	if err != nil {
		return err
	}
	if err := retry(ctx, log, "kafka", retryableKafka, func() error {
		if err := kafkaSec.StartupCheck(ctx, c.Brokers(), c.StoreTimeout); err != nil {
			return err
		}
		var err error
		rep, err = kafkaSec.EnsureTopics(ctx, c.Brokers(), orderlog.Topics(c.OrdersTopic, c.DLQTopic, s.TopicPartitions),
			orderlog.Durability{Replication: s.TopicReplication, MinInsync: s.TopicMinInsync})
		return err
	}); err != nil {
		return fmt.Errorf("topics: %w", err)
	}
	for _, w := range rep.Warnings {
		log.Warn("topic below its configuration", "warning", w)
	}
	log.Info("topics ready", "orders", c.OrdersTopic, "partitions", s.TopicPartitions, "dlq", c.DLQTopic,
		"brokers", rep.Brokers, "replication", rep.Replication, "min_insync_replicas", rep.MinInsync, "created", rep.Created)
	return nil
}

// retry calls fn until it succeeds or ctx ends: the stores may still be
// starting when setup runs (compose starts them together).
func retry(ctx context.Context, log *slog.Logger, what string, retryable func(error) bool, fn func() error) error {
	for {
		err := fn()
		if err == nil || !retryable(err) {
			return err
		}
		log.Warn("not ready yet, retrying", "what", what, "err", err)
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last error: %w)", ctx.Err(), err)
		case <-time.After(time.Second):
		}
	}
}

// retryableMySQL: a server that is not up yet, or another migrator holding
// the lock; not a SQL error, which would only repeat, nor a migration the
// runner refuses (half applied, edited), which needs a person.
func retryableMySQL(err error) bool {
	if errors.Is(err, migrate.ErrHalfApplied) || errors.Is(err, migrate.ErrEdited) {
		return false
	}
	return errors.Is(err, migrate.ErrLocked) || store.IsTransient(err)
}

// probe GETs url and returns 0 for a 2xx answer within 3 seconds.
func probe(url string) int {
	c := http.Client{Timeout: 3 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		fmt.Fprintln(os.Stderr, "probe:", err)
		return 1
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		fmt.Fprintln(os.Stderr, "probe:", resp.Status)
		return 1
	}
	return 0
}
