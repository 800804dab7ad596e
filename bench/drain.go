package main

import (
	"cmp"
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
	"github.com/redis/go-redis/v9"
	"github.com/segmentio/kafka-go"

	"github.com/flashsale-dev/flashsale/pkg/config"
	"github.com/flashsale-dev/flashsale/pkg/migrate"
	"github.com/flashsale-dev/flashsale/pkg/orderlog"
	"github.com/flashsale-dev/flashsale/pkg/stock"
	"github.com/flashsale-dev/flashsale/pkg/store"
	"github.com/flashsale-dev/flashsale/schema"
)

// drainDB is the database the drain creates afresh each run (flashsale's
// schema and the baselines' tables), never flashsale's own; -drain-db
// names another.
const drainDB = "flashsale_drain"

// The drain's bounds: FLASHSALE_MAX_BUCKETS' default, and more replicas
// than a 2-core machine can tell apart.
const (
	maxDrainBuckets  = 64
	maxDrainReplicas = 16
)

// DrainResult is one drain run: the real consumer's replicas over N queued
// messages, then baseline (a) over a sample, with the same MySQL pool.
type DrainResult struct {
	Messages, Items, Buckets, Replicas, Partitions int
	// Elapsed is from the replicas' start to every offset committed.
	Elapsed      time.Duration
	OrdersPerSec float64
	// Whole is when the group first held every replica (each with a
	// partition); SteadyMessages were not committed yet then, and
	// SteadyElapsed is from then to every offset committed. SteadyPerSec is
	// the write rate of the whole group, without the joins and rebalances
	// of replicas started one after the other.
	Whole          time.Duration
	SteadyMessages int64
	SteadyElapsed  time.Duration
	SteadyPerSec   float64
	// PartitionMsgs is [partition, messages] of each partition that got
	// any (the Kafka keys' spread); Shares is each replica's part.
	PartitionMsgs [][2]int64
	Shares        []replicaShare
	Sample        int
	SampleElapsed time.Duration
	// BaselinePerSec is baseline (a)'s rate.
	BaselinePerSec float64
	// CPU seconds used from Whole to the end by this process (the
	// replicas) and by MariaDB, when its process could be found; Split adds
	// Kafka, Redis and the machine.
	ConsumerCPU, MariaDBCPU float64
	Split                   cpuSplit
}

// drainShape is the drain's layout from its settings: 0 stands for 1
// bucket and 1 replica, so settings built in code without them are today's
// drain.
func drainShape(s Settings) (buckets, replicas, partitions int) {
	buckets, replicas, partitions = max(s.DrainBuckets, 1), max(s.DrainReplicas, 1), s.DrainPartitions
	if partitions == 0 {
		switch {
		case s.DrainItems > 1:
			partitions = 12
		case buckets == 1 && replicas == 1:
			partitions = 1
		default:
			partitions = max(8, 2*replicas, buckets)
		}
	}
	return buckets, replicas, partitions
}

// runDrain runs the drain (drain) and prints its rates.
func runDrain(ctx context.Context, c config.Common, cc config.Consumer, s Settings, out io.Writer) error {
	res, err := drain(ctx, c, cc, s)
	if err != nil {
		return err
	}
	writeDrain(out, res, cc)
	return nil
}

// drain pre-fills a fresh topic with s.Drain admitted orders over
// s.DrainItems items of s.DrainBuckets stock buckets each (reserved in
// Redis by the real admission script in each buyer's home bucket, the
// buckets' stock just enough in MySQL), runs s.DrainReplicas real order
// writers in one group until it has committed everything, then runs
// baseline (a) over s.DrainSample orders with the same connection pool. The
// database is left for inspection until the next run drops it.
func drain(ctx context.Context, c config.Common, cc config.Consumer, s Settings) (DrainResult, error) {
	log := slog.Default()
	buckets, replicas, partitions := drainShape(s)
	dbName := cmp.Or(s.DrainDB, drainDB)
	pool := max(8, cc.ItemParallelism+2) // as consumer/main.go opens it
	if err := dropDrainDB(ctx, c.DSN(), dbName); err != nil {
		return DrainResult{}, err
	}
	db, err := OpenBaselineDB(ctx, c.DSN(), dbName, pool)
	if err != nil {
		return DrainResult{}, err
	}
	defer db.Close()
	if _, err := migrate.Apply(ctx, db, schema.FS, slog.New(slog.NewTextHandler(io.Discard, nil))); err != nil {
		return DrainResult{}, fmt.Errorf("drain: migrate: %w", err)
	}
	rdb := stock.NewClientFrom(c.RedisConn(), c.StoreTimeout, 256)
	defer rdb.Close()
	st := stock.New(rdb)

	suffix := fmt.Sprintf("%d", time.Now().UnixNano())
	topic, dlq, group := "flashsale.drain."+suffix, "flashsale.drain.dlq."+suffix, "flashsale-drain-"+suffix
	if _, err := kafkaSec.EnsureTopics(ctx, c.Brokers(), orderlog.Topics(topic, dlq, partitions), orderlog.Durability{}); err != nil {
		return DrainResult{}, err
	}
	defer deleteTopics(c.Brokers(), topic, dlq)

	base := 900_000_000 + rand.Int64N(90_000_000)
	items := make([]int64, s.DrainItems)
	per := int64((s.Drain + s.DrainItems - 1) / s.DrainItems)
	for i := range items {
		items[i] = base + int64(i)
	}
	defer cleanRedis(rdb, items, buckets)
	quotas, err := createDrainItems(ctx, db, st, items, per, buckets)
	if err != nil {
		return DrainResult{}, err
	}
	log.Info("drain: admitting", "messages", s.Drain, "items", s.DrainItems, "buckets", buckets)
	vals, err := admitAll(ctx, st, planBuyers(items, quotas, s.Drain), buckets)
	if err != nil {
		return DrainResult{}, err
	}
	log.Info("drain: producing", "topic", topic, "partitions", partitions)
	if err := produceAll(ctx, c.Brokers(), topic, vals); err != nil {
		return DrainResult{}, err
	}
	vals = nil

	res := DrainResult{Messages: s.Drain, Items: s.DrainItems, Buckets: buckets, Replicas: replicas, Partitions: partitions, Sample: s.DrainSample}
	if lag, err := kafkaSec.Lag(ctx, c.Brokers(), group, topic); err == nil {
		res.PartitionMsgs = partitionCounts(lag)
	}
	log.Info("drain: consuming", "replicas", replicas)
	if err := consumeAll(ctx, c, cc, s, drainDSN(c.DSN(), dbName), replicas, partitions, topic, dlq, group, &res); err != nil {
		return DrainResult{}, err
	}
	if err := checkDrain(ctx, db, s.Drain); err != nil {
		return DrainResult{}, err
	}

	if s.DrainSample > 0 {
		log.Info("drain: baseline (a)", "orders", s.DrainSample, "workers", pool)
		if res.SampleElapsed, err = baselineSample(ctx, db, items, s.DrainSample, pool); err != nil {
			return res, err
		}
		res.BaselinePerSec = float64(s.DrainSample) / res.SampleElapsed.Seconds()
	}
	return res, nil
}

// checkDrain: every message became an order, and each bucket's row plus
// its orders is still the bucket's total.
func checkDrain(ctx context.Context, db *sql.DB, want int) error {
	var n int64
	if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM orders").Scan(&n); err != nil {
		return err
	}
	if n != int64(want) {
		return fmt.Errorf("drain: %d orders written, want %d", n, want)
	}
	var bad int64
	if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM item_buckets b WHERE b.stock +
		(SELECT COUNT(*) FROM orders o WHERE o.item_id = b.item_id AND o.bucket = b.bucket) <> b.total_stock`).Scan(&bad); err != nil {
		return err
	}
	if bad > 0 {
		return fmt.Errorf("drain: %d bucket rows whose stock and orders do not add up to their total", bad)
	}
	return nil
}

// drainDSN is dsn on database dbName.
func drainDSN(dsn, dbName string) string {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return dsn
	}
	cfg.DBName = dbName
	return cfg.FormatDSN()
}

// dropDrainDB drops the drain's database of an earlier run, so each run
// starts from empty tables.
func dropDrainDB(ctx context.Context, dsn, dbName string) error {
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
	if _, err := admin.ExecContext(ctx, "DROP DATABASE IF EXISTS "+dbName); err != nil {
		return fmt.Errorf("drain: drop %s: %w", dbName, err)
	}
	return nil
}

// produceAll publishes vals keyed by item as the ingress does (one item, one
// partition), acked by all in-sync replicas.
func produceAll(ctx context.Context, brokers []string, topic string, vals [][]byte) error {
	w := kafkaSec.NewBatchedWriter(brokers, topic, 30*time.Second, orderlog.Batching{Size: 5000, Bytes: 1 << 20, Timeout: 5 * time.Millisecond})
	defer w.Close()
	const chunk = 20_000
	var wg sync.WaitGroup
	errs := make(chan error, len(vals)/chunk+1)
	sem := make(chan struct{}, 4)
	for off := 0; off < len(vals); off += chunk {
		msgs := make([]kafka.Message, 0, chunk)
		for _, v := range vals[off:min(off+chunk, len(vals))] {
			m, err := orderlog.Decode(v)
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

// consumeAll runs replicas real order writers of one group from their
// start until the group has committed every message, and records in res
// when the group was whole, the rates, each replica's share and the CPU of
// this process and of MariaDB from then on.
func consumeAll(ctx context.Context, c config.Common, cc config.Consumer, s Settings, dsn string, replicas, partitions int, topic, dlq, group string, res *DrainResult) error {
	rs, err := newReplicas(ctx, c, cc, dsn, replicas, topic, dlq, group)
	if err != nil {
		return err
	}
	defer func() {
		for _, r := range rs {
			r.close()
		}
	}()
	if s.DrainCPUProfile != "" {
		f, err := os.Create(s.DrainCPUProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	start := time.Now()
	rctx, cancel := context.WithCancel(ctx)
	stopped := make(chan error, len(rs))
	var wg sync.WaitGroup
	for i, r := range rs {
		wg.Go(func() {
			if err := r.cons.Run(rctx); rctx.Err() == nil {
				stopped <- fmt.Errorf("drain: replica %d stopped: %v", i, err)
			}
		})
	}
	defer func() {
		cancel()
		wg.Wait()
	}()
	var held map[string][]int
	var cpu0 cpuSplit
	redisAddr := c.RedisAddrs()[0]
	whole, counted := false, false
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-stopped:
			return err
		case <-time.After(20 * time.Millisecond):
		}
		if !whole {
			h, ok, err := groupWhole(ctx, c.Brokers(), group, topic, replicas, partitions)
			if err != nil || !ok {
				continue
			}
			held, whole = h, true
			res.Whole = time.Since(start)
			cpu0 = readCPUSplit(redisAddr)
		}
		lag, err := kafkaSec.Lag(ctx, c.Brokers(), group, topic)
		if err != nil || len(lag) == 0 {
			continue
		}
		var left int64
		for _, l := range lag {
			left += l
		}
		if !counted {
			res.SteadyMessages, counted = left, true
		}
		if left == 0 {
			res.Elapsed = time.Since(start)
			res.SteadyElapsed = res.Elapsed - res.Whole
			res.OrdersPerSec = float64(res.Messages) / res.Elapsed.Seconds()
			if res.SteadyMessages > 0 {
				res.SteadyPerSec = float64(res.SteadyMessages) / res.SteadyElapsed.Seconds()
			}
			res.Split = readCPUSplit(redisAddr).minus(cpu0)
			res.ConsumerCPU, res.MariaDBCPU = res.Split.Bench, res.Split.MariaDB
			res.Shares = shares(rs, held)
			return nil
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
	fmt.Fprintf(w, "drain: %d messages, %d items of %d buckets, %d partitions, %d replicas (batch %d, item parallelism %d, batches in flight %d)\n",
		r.Messages, r.Items, r.Buckets, r.Partitions, r.Replicas, cc.BatchSize, cc.ItemParallelism, cc.BatchesInFlight)
	fmt.Fprintf(w, "  consumer:     %8.0f orders/s  (%d messages in %v once the group held every replica, %v after the start)\n",
		r.SteadyPerSec, r.SteadyMessages, r.SteadyElapsed.Round(time.Millisecond), r.Whole.Round(time.Millisecond))
	fmt.Fprintf(w, "  from start:   %8.0f orders/s  (%v to all offsets committed)\n", r.OrdersPerSec, r.Elapsed.Round(time.Millisecond))
	fmt.Fprintf(w, "  CPU while whole: replicas %.1f s (%.0f%% of a core), MariaDB %.1f s (%.0f%% of a core)\n",
		r.ConsumerCPU, 100*r.ConsumerCPU/r.SteadyElapsed.Seconds(), r.MariaDBCPU, 100*r.MariaDBCPU/r.SteadyElapsed.Seconds())
	r.Split.write(w, r.SteadyElapsed.Seconds())
	if len(r.PartitionMsgs) > 0 {
		fmt.Fprintf(w, "  messages by partition:")
		for _, p := range r.PartitionMsgs {
			fmt.Fprintf(w, " p%d=%d", p[0], p[1])
		}
		fmt.Fprintln(w)
	}
	for _, sh := range r.Shares {
		fmt.Fprintf(w, "  replica %s: partitions %v, %d orders (%.0f%%)\n", sh.ClientID, sh.Partitions, sh.Orders, 100*float64(sh.Orders)/float64(r.Messages))
	}
	if r.Sample > 0 {
		fmt.Fprintf(w, "  baseline (a): %8.0f orders/s  (SELECT ... FOR UPDATE, one transaction per order, sample of %d orders in %v)\n",
			r.BaselinePerSec, r.Sample, r.SampleElapsed.Round(time.Millisecond))
		fmt.Fprintf(w, "  ratio:        %8.1fx\n", r.SteadyPerSec/r.BaselinePerSec)
	}
}

func deleteTopics(brokers []string, topics ...string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	client := kafkaSec.Client(brokers)
	if _, err := client.DeleteTopics(ctx, &kafka.DeleteTopicsRequest{Topics: topics}); err != nil {
		slog.Warn("drain: delete topics", "err", err)
	}
}

// cleanRedis deletes the drain items' keys (holders of a million buyers),
// bucket by bucket, and takes the items out of the registry of warmed items.
func cleanRedis(rdb redis.UniversalClient, items []int64, buckets int) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, id := range items {
		for b := range buckets {
			k := stock.BucketKeys(id, b)
			for _, key := range []string{k.Stock, k.Meta, k.Holders, k.HolderBits, k.Reservations, k.Want} {
				if err := rdb.Del(ctx, key).Err(); err != nil {
					slog.Warn("drain: clean redis", "err", err)
					return
				}
			}
		}
		if err := rdb.SRem(ctx, stock.WarmedItems(), id).Err(); err != nil {
			slog.Warn("drain: clean redis", "err", err)
			return
		}
	}
}
