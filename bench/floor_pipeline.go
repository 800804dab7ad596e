package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/flashsale-dev/flashsale/pkg/config"
	"github.com/flashsale-dev/flashsale/pkg/orderlog"
	"github.com/flashsale-dev/flashsale/pkg/reqid"
	"github.com/flashsale-dev/flashsale/pkg/stock"
)

// floorPartitions is the throwaway topic's partition count, the drain's:
// an unbucketed item's messages all go to one partition anyway.
const floorPartitions = 12

// MeasurePipelineFloor is the order path without HTTP: concurrency workers,
// each running the admission script (through the ingress's coalescer when
// FLASHSALE_REDIS_BATCH_MAX > 0) and then the durable Kafka produce of the
// same message (orderlog.OrderMessage, acks from all in-sync replicas, the
// ingress's Publisher and batching), for orders distinct buyers with an
// Idempotency-Key each, as the sale's first attempts carry. Order i goes to
// throwaway item i mod items (the sale's -items spread, itemOf), each item
// with stock for every order over buckets stock buckets; the topic is
// created for the run and deleted after it, as are the items' keys (the
// Idempotency-Keys expire with FLASHSALE_IDEMPOTENCY_TTL). What it leaves
// out of the ingress's order path: HTTP, the token check, the sold-out
// memory, the per-request Ack of the Idempotency-Key after the publish.
func MeasurePipelineFloor(ctx context.Context, c config.Common, in config.Ingress, concurrency, orders, buckets, items int) (FloorFigure, error) {
	buckets, items = max(buckets, 1), max(items, 1)
	fig := FloorFigure{Path: "pipeline", Concurrency: concurrency}
	if orders <= 0 || concurrency <= 0 {
		return fig, fmt.Errorf("bench: pipeline floor: %d orders at concurrency %d", orders, concurrency)
	}
	rdb := stock.NewClientFrom(c.RedisConn(), c.StoreTimeout, 512) // the ingress's pool
	defer rdb.Close()
	st := stock.New(rdb)
	if b := in.RedisBatch; b.MaxBatch > 0 {
		co := stock.NewCoalescer(rdb, stock.CoalesceConfig{MaxBatch: b.MaxBatch, Window: b.Window, Flushers: b.Flushers})
		defer co.Close() // before rdb.Close
		st = st.WithCoalescer(co)
	}
	ids := saleItems(0, items)
	defer cleanRedis(rdb, ids, buckets)
	now := time.Now()
	for _, id := range ids {
		snap := stock.Snapshot{ItemID: id, Stock: int64(orders), StartsAt: now.Add(-time.Minute), EndsAt: now.Add(time.Hour), PerUserLimit: 1}
		if buckets > 1 {
			// Each bucket could take every order: buyers' home buckets
			// are uneven, and the floor must not turn into a refill.
			snap.Stock, snap.BucketStock = 0, make([]int64, buckets)
			for i := range snap.BucketStock {
				snap.BucketStock[i] = int64(orders)
			}
		}
		if err := st.Warm(ctx, snap); err != nil {
			return fig, fmt.Errorf("bench: pipeline floor warm: %w", err)
		}
	}

	suffix := strconv.FormatInt(time.Now().UnixNano(), 10)
	topic, dlq := "flashsale.floor."+suffix, "flashsale.floor.dlq."+suffix
	if _, err := kafkaSec.EnsureTopics(ctx, c.Brokers(), orderlog.Topics(topic, dlq, floorPartitions), orderlog.Durability{}); err != nil {
		return fig, fmt.Errorf("bench: pipeline floor topic: %w", err)
	}
	defer deleteTopics(c.Brokers(), topic, dlq)
	codec, err := orderlog.ParseCompression(in.PublishCompression)
	if err != nil {
		return fig, err
	}
	pub := kafkaSec.NewPublisher(c.Brokers(), topic, in.PublishTimeout, orderlog.Batching{
		Size: in.PublishBatchSize, Bytes: int64(in.PublishBatchBytes), Timeout: in.PublishBatchTimeout, Compression: codec})
	defer func() {
		if err := pub.Close(); err != nil {
			slog.Warn("pipeline floor: close publisher", "err", err)
		}
	}()
	wctx, cancel := context.WithTimeout(ctx, in.PublishTimeout)
	if err := pub.Warm(wctx); err != nil {
		slog.Warn("pipeline floor: kafka writer not warmed", "err", err)
	}
	cancel()

	var next, done, failed atomic.Int64
	var firstErr atomic.Value
	var mu sync.Mutex
	var last time.Time
	var wg sync.WaitGroup
	start := time.Now()
	for range concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= orders {
					return
				}
				if err := floorOrder(ctx, st, pub, in, c.StoreTimeout, ids[itemOf(i, items)], buckets, i); err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err)
					continue
				}
				end := time.Now()
				done.Add(1)
				mu.Lock()
				if end.After(last) {
					last = end
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	fig.Count, fig.Failed = int(done.Load()), int(failed.Load())
	if fig.Count == 0 {
		err, _ := firstErr.Load().(error)
		return fig, fmt.Errorf("bench: pipeline floor: none of %d orders went through: %w", orders, err)
	}
	if err, _ := firstErr.Load().(error); err != nil {
		slog.Warn("pipeline floor: some orders failed", "failed", fig.Failed, "first", err)
	}
	fig.Seconds = last.Sub(start).Seconds()
	if fig.Seconds > 0 {
		fig.PerSec = float64(fig.Count) / fig.Seconds
	}
	return fig, ctx.Err()
}

// errFloorVerdict is an admission the floor's item should have admitted.
var errFloorVerdict = errors.New("bench: pipeline floor: not admitted")

// floorOrder is one buyer's order as the ingress takes it (pkg/admission
// reserve and publish): the script in the buyer's home bucket with the
// ingress's deadline, limits and Idempotency-Key, then the produce.
func floorOrder(ctx context.Context, st *stock.Store, pub *orderlog.Publisher, in config.Ingress, storeTimeout time.Duration, item int64, buckets, i int) error {
	user := UserID(i)
	bucket := stock.HomeBucket(user, buckets)
	now := time.Now()
	rid := reqid.NewIn(item, bucket, now)
	deadline := now.Add(storeTimeout)
	rctx, cancel := context.WithDeadline(ctx, deadline)
	ar, err := st.Admit(rctx, stock.AdmitRequest{ItemID: item, Buckets: buckets, Bucket: bucket, UserID: user, Qty: 1, RequestID: rid,
		Now: now, Deadline: deadline, UserRatePerSec: in.UserRateLimit, IdempotencyKey: "floor-" + strconv.Itoa(i),
		IdempotencyTTL: in.IdempotencyTTL, WaitReplicas: in.RedisWaitReplicas, WaitTimeout: in.RedisWaitTimeout})
	cancel()
	if err != nil {
		return fmt.Errorf("bench: pipeline floor admit: %w", err)
	}
	if ar.Code != stock.Admitted {
		return fmt.Errorf("%w: verdict %q", errFloorVerdict, ar.Code)
	}
	msg := orderlog.OrderMessage{RequestID: rid, ItemID: item, UserID: user, Qty: 1, ReservedMs: now.UnixMilli()}
	val, err := msg.Encode()
	if err != nil {
		return fmt.Errorf("bench: pipeline floor encode: %w", err)
	}
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), in.PublishTimeout)
	defer cancel()
	if err := pub.WriteMessages(pctx, kafka.Message{Key: msg.Key(), Value: val}); err != nil {
		return fmt.Errorf("bench: pipeline floor publish: %w", err)
	}
	return nil
}
