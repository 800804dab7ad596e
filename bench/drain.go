package main

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/segmentio/kafka-go"

	"github.com/flashsale-dev/flashsale/pkg/config"
	"github.com/flashsale-dev/flashsale/pkg/migrate"
	"github.com/flashsale-dev/flashsale/pkg/orderwriter"
	"github.com/flashsale-dev/flashsale/pkg/queue"
	"github.com/flashsale-dev/flashsale/pkg/reqid"
	"github.com/flashsale-dev/flashsale/pkg/stock"
	"github.com/flashsale-dev/flashsale/pkg/store"
	"github.com/flashsale-dev/flashsale/schema"
)

// drainDB is the database the drain creates afresh each run (flashsale's
// schema and the baselines' tables), never flashsale's own.
const drainDB = "flashsale_drain"

// DrainResult is one drain run: the real consumer over N queued messages,
// then baseline (a) over a sample, with the same MySQL pool.
type DrainResult struct {
	Messages, Items, Partitions int
	Elapsed                     time.Duration
	OrdersPerSec                float64
	Sample                      int
	SampleElapsed               time.Duration
	BaselinePerSec              float64
	// CPU seconds used during the drain by this process (the consumer) and
	// by MariaDB, when its process could be found.
	ConsumerCPU, MariaDBCPU float64
}

// runDrain pre-fills a fresh topic with s.Drain admitted orders over
// s.DrainItems items (reserved in Redis by the real admission script, stock
// enough in MySQL), runs the real consumer until the group has committed
// everything, then runs baseline (a) over s.DrainSample orders with the same
// connection pool, and prints both rates and their ratio.
func runDrain(ctx context.Context, c config.Common, cc config.Consumer, s Settings, out io.Writer) error {
	log := slog.Default()
	pool := max(8, cc.ItemParallelism+2) // as consumer/main.go opens it
	if err := dropDrainDB(ctx, c.DSN()); err != nil {
		return err
	}
	db, err := OpenBaselineDB(ctx, c.DSN(), drainDB, pool)
	if err != nil {
		return err
	}
	defer db.Close()
	if _, err := migrate.Apply(ctx, db, schema.FS, slog.New(slog.NewTextHandler(io.Discard, nil))); err != nil {
		return fmt.Errorf("drain: migrate: %w", err)
	}
	rdb := stock.NewClient(c.RedisAddrs(), c.StoreTimeout, 256)
	defer rdb.Close()
	st := stock.New(rdb)

	partitions := 12
	if s.DrainItems == 1 {
		partitions = 1
	}
	suffix := fmt.Sprintf("%d", time.Now().UnixNano())
	topic, dlq, group := "flashsale.drain."+suffix, "flashsale.drain.dlq."+suffix, "flashsale-drain-"+suffix
	if _, err := queue.EnsureTopics(ctx, c.Brokers(), queue.Topics(topic, dlq, partitions), queue.Durability{}); err != nil {
		return err
	}
	defer deleteTopics(c.Brokers(), topic, dlq)

	base := 900_000_000 + rand.Int64N(90_000_000)
	items := make([]int64, s.DrainItems)
	per := int64(s.Drain/s.DrainItems + 1)
	for i := range items {
		items[i] = base + int64(i)
	}
	defer cleanRedis(rdb, items)
	if err := createDrainItems(ctx, db, st, items, per); err != nil {
		return err
	}
	log.Info("drain: admitting", "messages", s.Drain, "items", s.DrainItems)
	vals, err := admitAll(ctx, st, items, s.Drain)
	if err != nil {
		return err
	}
	log.Info("drain: producing", "topic", topic, "partitions", partitions)
	if err := produceAll(ctx, c.Brokers(), topic, vals); err != nil {
		return err
	}
	vals = nil

	res := DrainResult{Messages: s.Drain, Items: s.DrainItems, Partitions: partitions, Sample: s.DrainSample}
	log.Info("drain: consuming")
	if res.Elapsed, res.ConsumerCPU, res.MariaDBCPU, err = consumeAll(ctx, c, cc, s, db, st, topic, dlq, group); err != nil {
		return err
	}
	res.OrdersPerSec = float64(s.Drain) / res.Elapsed.Seconds()
	var n int64
	if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM orders").Scan(&n); err != nil {
		return err
	}
	if n != int64(s.Drain) {
		return fmt.Errorf("drain: %d orders written, want %d", n, s.Drain)
	}

	if s.DrainSample > 0 {
		log.Info("drain: baseline (a)", "orders", s.DrainSample, "workers", pool)
		if res.SampleElapsed, err = baselineSample(ctx, db, items, s.DrainSample, pool); err != nil {
			return err
		}
		res.BaselinePerSec = float64(s.DrainSample) / res.SampleElapsed.Seconds()
	}
	writeDrain(out, res, cc)
	return nil
}

// dropDrainDB drops the drain's database of an earlier run, so each run
// starts from empty tables.
func dropDrainDB(ctx context.Context, dsn string) error {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return fmt.Errorf("drain: dsn: %w", err)
	}
	cfg.DBName = ""
	admin, err := store.Open(ctx, cfg.FormatDSN(), 1, 5*time.Second)
	if err != nil {
		return fmt.Errorf("drain: mysql: %w", err)
	}
	defer admin.Close()
	if _, err := admin.ExecContext(ctx, "DROP DATABASE IF EXISTS "+drainDB); err != nil {
		return fmt.Errorf("drain: drop %s: %w", drainDB, err)
	}
	return nil
}

func createDrainItems(ctx context.Context, db *sql.DB, st *stock.Store, items []int64, per int64) error {
	now := time.Now()
	for _, id := range items {
		if _, err := db.ExecContext(ctx, `INSERT INTO items (id, name, price_cents, total_stock, stock, per_user_limit, starts_at, ends_at)
			VALUES (?, 'drain', 999, ?, ?, 1, NOW(3) - INTERVAL 1 HOUR, NOW(3) + INTERVAL 1 HOUR)`, id, per, per); err != nil {
			return fmt.Errorf("drain: create item: %w", err)
		}
		if err := st.Warm(ctx, stock.Snapshot{ItemID: id, Stock: per, StartsAt: now.Add(-time.Hour), EndsAt: now.Add(time.Hour), PerUserLimit: 1}); err != nil {
			return fmt.Errorf("drain: warm item: %w", err)
		}
	}
	return nil
}

// admitAll reserves n units round-robin over items through the admission
// script, as the ingress does, and returns the encoded messages it would
// publish.
func admitAll(ctx context.Context, st *stock.Store, items []int64, n int) ([][]byte, error) {
	vals := make([][]byte, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 256)
	for range 256 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(n) || ctx.Err() != nil {
					return
				}
				item, user := items[i%int64(len(items))], 1+i
				now := time.Now()
				rid := reqid.New(item, now)
				r, err := st.Admit(ctx, stock.AdmitRequest{ItemID: item, UserID: user, Qty: 1, RequestID: rid, Now: now})
				if err == nil && r.Code != stock.Admitted {
					err = fmt.Errorf("admit: %s", r.Code)
				}
				if err == nil {
					vals[i], err = queue.OrderMessage{V: queue.MessageVersion, RequestID: rid, ItemID: item, UserID: user, Qty: 1, ReservedMs: now.UnixMilli()}.Encode()
				}
				if err != nil {
					select {
					case errs <- err:
					default:
					}
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return nil, fmt.Errorf("drain: %w", err)
	}
	return vals, ctx.Err()
}

// produceAll publishes vals keyed by item as the ingress does (one item, one
// partition), acked by all in-sync replicas.
func produceAll(ctx context.Context, brokers []string, topic string, vals [][]byte) error {
	w := queue.NewBatchedWriter(brokers, topic, 30*time.Second, queue.Batching{Size: 5000, Bytes: 1 << 20, Timeout: 5 * time.Millisecond})
	defer w.Close()
	const chunk = 20_000
	var wg sync.WaitGroup
	errs := make(chan error, len(vals)/chunk+1)
	sem := make(chan struct{}, 4)
	for off := 0; off < len(vals); off += chunk {
		msgs := make([]kafka.Message, 0, chunk)
		for _, v := range vals[off:min(off+chunk, len(vals))] {
			m, err := queue.Decode(v)
			if err != nil {
				return err
			}
			msgs = append(msgs, kafka.Message{Key: m.Key(), Value: v})
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := w.WriteMessages(ctx, msgs...); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return fmt.Errorf("drain: produce: %w", err)
	}
	return nil
}

// consumeAll runs the real consumer from its start until the group has
// committed every message, and measures the CPU of this process and of
// MariaDB meanwhile.
func consumeAll(ctx context.Context, c config.Common, cc config.Consumer, s Settings, db *sql.DB, st *stock.Store, topic, dlq, group string) (time.Duration, float64, float64, error) {
	quiet := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	cons, err := orderwriter.New(orderwriter.Config{
		Brokers: c.Brokers(), Topic: topic, DLQTopic: dlq, GroupID: group,
		BatchSize: cc.BatchSize, BatchWait: cc.BatchWait, MaxBackoff: cc.MaxBackoff, GiveUpAfter: cc.GiveUpAfter,
		ItemParallelism: cc.ItemParallelism, BatchesInFlight: cc.BatchesInFlight,
		PaymentWindow: c.PaymentWindow, StoreTimeout: c.StoreTimeout, DrainTimeout: 10 * time.Second,
	}, db, st, orderwriter.NewMetrics(prometheus.NewRegistry()), quiet)
	if err != nil {
		return 0, 0, 0, err
	}
	if s.DrainCPUProfile != "" {
		f, err := os.Create(s.DrainCPUProfile)
		if err != nil {
			return 0, 0, 0, err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return 0, 0, 0, err
		}
		defer pprof.StopCPUProfile()
	}
	cpu0, mdb0 := selfCPU(), mariadbCPU()
	start := time.Now()
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- cons.Run(rctx) }()
	defer func() { cancel(); <-done }()
	for {
		select {
		case <-ctx.Done():
			return 0, 0, 0, ctx.Err()
		case err := <-done:
			return 0, 0, 0, fmt.Errorf("drain: consumer stopped: %v", err)
		case <-time.After(50 * time.Millisecond):
		}
		lag, err := queue.Lag(ctx, c.Brokers(), group, topic)
		if err != nil {
			continue
		}
		var left int64
		for _, l := range lag {
			left += l
		}
		if len(lag) > 0 && left == 0 {
			return time.Since(start), selfCPU() - cpu0, mariadbCPU() - mdb0, nil
		}
	}
}

// baselineSample runs baseline (a), one SELECT ... FOR UPDATE transaction
// per order, over n orders spread over the same items, with workers
// concurrent callers on the same pool.
func baselineSample(ctx context.Context, db *sql.DB, items []int64, n, workers int) (time.Duration, error) {
	for _, id := range items {
		if _, err := db.ExecContext(ctx, "INSERT INTO baseline_items (id, name, price_cents, total_stock, stock) VALUES (?, 'drain', 999, ?, ?)", id, n, n); err != nil {
			return 0, fmt.Errorf("drain: baseline item: %w", err)
		}
	}
	o := ForUpdateOrderer{DB: db}
	var next atomic.Int64
	var wg sync.WaitGroup
	var firstErr atomic.Value
	start := time.Now()
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(n) || ctx.Err() != nil {
					return
				}
				v, err := o.Order(ctx, items[i%int64(len(items))], 1+i, 1, "")
				if err == nil && v.Code != 202 {
					err = fmt.Errorf("baseline answered %d %s", v.Code, v.Error)
				}
				if err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err, _ := firstErr.Load().(error); err != nil {
		return 0, fmt.Errorf("drain: %w", err)
	}
	return time.Since(start), ctx.Err()
}

func writeDrain(w io.Writer, r DrainResult, cc config.Consumer) {
	fmt.Fprintf(w, "drain: %d messages, %d items, %d partitions (batch %d, item parallelism %d, batches in flight %d)\n",
		r.Messages, r.Items, r.Partitions, cc.BatchSize, cc.ItemParallelism, cc.BatchesInFlight)
	fmt.Fprintf(w, "  consumer:     %8.0f orders/s  (%v to all offsets committed)\n", r.OrdersPerSec, r.Elapsed.Round(time.Millisecond))
	fmt.Fprintf(w, "  CPU during the drain: consumer %.1f s (%.0f%% of a core), MariaDB %.1f s (%.0f%% of a core)\n",
		r.ConsumerCPU, 100*r.ConsumerCPU/r.Elapsed.Seconds(), r.MariaDBCPU, 100*r.MariaDBCPU/r.Elapsed.Seconds())
	if r.Sample > 0 {
		fmt.Fprintf(w, "  baseline (a): %8.0f orders/s  (SELECT ... FOR UPDATE, one transaction per order, sample of %d orders in %v)\n",
			r.BaselinePerSec, r.Sample, r.SampleElapsed.Round(time.Millisecond))
		fmt.Fprintf(w, "  ratio:        %8.1fx\n", r.OrdersPerSec/r.BaselinePerSec)
	}
}

func deleteTopics(brokers []string, topics ...string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	client := &kafka.Client{Addr: kafka.TCP(brokers...)}
	if _, err := client.DeleteTopics(ctx, &kafka.DeleteTopicsRequest{Topics: topics}); err != nil {
		slog.Warn("drain: delete topics", "err", err)
	}
}

// cleanRedis deletes the drain items' keys (holders of a million buyers).
func cleanRedis(rdb redis.UniversalClient, items []int64) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, id := range items {
		k := stock.KeysOf(id)
		for _, key := range []string{k.Stock, k.Meta, k.Holders, k.HolderBits, k.Reservations} {
			if err := rdb.Del(ctx, key).Err(); err != nil {
				slog.Warn("drain: clean redis", "err", err)
				return
			}
		}
	}
}
