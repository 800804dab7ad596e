package orderwriter

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/flashsale-dev/flashsale/pkg/queue"
	"github.com/flashsale-dev/flashsale/pkg/stock"
	"github.com/flashsale-dev/flashsale/pkg/store"
)

// Consumer is one member of the order writers' consumer group.
type Consumer struct {
	cfg    Config
	log    *slog.Logger
	m      *Metrics
	reader *kafka.Reader
	items  *ItemWriter
	after  *afterCommit
	dlq    *dlqWriter
}

// New builds a consumer; Run starts it. db and st are shared with the caller,
// who closes them after Run returns.
func New(cfg Config, db *sql.DB, st *stock.Store, m *Metrics, log *slog.Logger) (*Consumer, error) {
	c, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	rc := kafka.ReaderConfig{
		Brokers: c.Brokers,
		GroupID: c.GroupID,
		Topic:   c.Topic,
		// Commit only explicitly, synchronously, and see commit errors.
		CommitInterval: 0,
		// A new group starts at the beginning: requests queued before the
		// first consumer started are orders too.
		StartOffset:       kafka.FirstOffset,
		QueueCapacity:     max(100, 2*c.BatchSize),
		MinBytes:          1,
		MaxBytes:          10 << 20,
		MaxWait:           250 * time.Millisecond,
		HeartbeatInterval: c.HeartbeatInterval,
		SessionTimeout:    c.SessionTimeout,
		RebalanceTimeout:  c.RebalanceTimeout,
		Dialer:            c.Dialer,
		ErrorLogger:       kafka.LoggerFunc(func(f string, a ...any) { log.Warn("kafka reader", "msg", fmt.Sprintf(f, a...)) }),
	}
	if err := rc.Validate(); err != nil {
		return nil, fmt.Errorf("orderwriter: reader config: %w", err)
	}
	return &Consumer{
		cfg:    c,
		log:    log,
		m:      m,
		reader: kafka.NewReader(rc),
		items:  &ItemWriter{DB: db, PaymentWindow: c.PaymentWindow, TxTimeout: 5 * c.StoreTimeout},
		after:  &afterCommit{stock: st},
		dlq:    newDLQWriter(c),
	}, nil
}

// Run consumes until ctx is done. Then it finishes the round in hand (within
// DrainTimeout), commits what was written, and closes the reader, which leaves
// the group so the partitions move to another replica at once.
func (c *Consumer) Run(ctx context.Context) error {
	defer func() {
		if err := c.reader.Close(); err != nil {
			c.log.Warn("close reader", "err", err)
		}
		if err := c.dlq.close(); err != nil {
			c.log.Warn("close dlq writer", "err", err)
		}
	}()
	statsDone := make(chan struct{})
	go c.statsLoop(ctx, statsDone)
	defer func() { <-statsDone }()
	// The lag watch has its own context and ticker: it must keep reading
	// the broker while a round is stuck, and stop when Run returns.
	lagCtx, stopLag := context.WithCancel(ctx)
	lagDone := make(chan struct{})
	go func() {
		defer close(lagDone)
		w := &lagWatch{interval: c.cfg.LagInterval, m: c.m, log: c.log,
			poll: func(ctx context.Context) (map[int]int64, error) {
				return queue.Lag(ctx, c.cfg.Brokers, c.cfg.GroupID, c.cfg.Topic)
			}}
		w.run(lagCtx)
	}()
	defer func() { stopLag(); <-lagDone }()

	bo := backoff{min: c.cfg.MinBackoff, max: c.cfg.MaxBackoff}
	for {
		batch, err := c.fetch(ctx)
		if len(batch) > 0 {
			c.round(ctx, batch)
		}
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			c.log.Warn("fetch", "err", err)
			if !sleep(ctx, bo.next()) {
				return nil
			}
			continue
		}
		bo.reset()
	}
}

// fetch gathers one round: it blocks for the first message, then takes what
// arrives within BatchWait, up to BatchSize. A message not taken before the
// deadline stays in the reader's queue for the next round.
func (c *Consumer) fetch(ctx context.Context) ([]*entry, error) {
	m, err := c.reader.FetchMessage(ctx)
	if err != nil {
		return nil, err
	}
	batch := []*entry{{msg: m}}
	bctx, cancel := context.WithTimeout(ctx, c.cfg.BatchWait)
	defer cancel()
	for len(batch) < c.cfg.BatchSize {
		m, err := c.reader.FetchMessage(bctx)
		if err != nil {
			break
		}
		batch = append(batch, &entry{msg: m})
	}
	return batch, nil
}

// drainContext is not cancelled when ctx is, but d after it: the round in hand
// gets a bounded time to finish after shutdown starts.
func drainContext(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, func() { time.AfterFunc(d, cancel) })
	return wctx, func() { stop(); cancel() }
}

// round writes one batch and commits the offsets of what is done.
func (c *Consumer) round(ctx context.Context, batch []*entry) {
	start := time.Now()
	wctx, cancel := drainContext(ctx, c.cfg.DrainTimeout)
	defer cancel()
	c.m.BatchSize.Observe(float64(len(batch)))

	// Decode; poison goes to the DLQ. Group the rest by item, in offset order.
	var poison []deadLetter
	var poisonEntries []*entry
	groups := map[int64][]*entry{}
	var order []int64
	decoded := make(map[*entry]queue.OrderMessage, len(batch))
	for _, e := range batch {
		om, err := queue.Decode(e.msg.Value)
		if err != nil {
			poison = append(poison, deadLetter{msg: e.msg, cause: err})
			poisonEntries = append(poisonEntries, e)
			continue
		}
		decoded[e] = om
		if _, ok := groups[om.ItemID]; !ok {
			order = append(order, om.ItemID)
		}
		groups[om.ItemID] = append(groups[om.ItemID], e)
	}
	if c.deadLetter(wctx, poison) == nil {
		for _, e := range poisonEntries {
			e.done = true
		}
	}
	for _, item := range order {
		if wctx.Err() != nil {
			break
		}
		c.writeGroup(wctx, item, groups[item], decoded)
	}

	offs := newOffsets(batch)
	if msgs := offs.committable(); len(msgs) > 0 {
		if err := c.reader.CommitMessages(wctx, msgs...); err != nil {
			// The messages will be redelivered (to us or to the partition's new
			// owner after a rebalance) and absorbed by the arbiter.
			c.m.CommitErrors.Inc()
			c.log.Warn("commit offsets", "err", err, "messages", len(batch))
		}
	}
	for p, es := range offs.parts {
		last := es[len(es)-1].msg
		c.m.fetchLag.set(p, float64(max(0, last.HighWaterMark-last.Offset-1)))
	}
	c.m.BatchDuration.Observe(time.Since(start).Seconds())
}

// writeGroup writes one item's messages until they are done, given up or the
// round's context ends. Lost races and transient errors (store.IsTransient:
// nearly everything, a read-only or failing-over server included) are
// retried without bound: an outage pauses consumption, it never rejects a
// good order. Other errors (data that does not fit, a code bug) are retried
// with backoff too, until the group has been failing with them for
// GiveUpAfter; then its messages are written one by one, so one bad message
// cannot take its neighbours down, and one that still fails alone is given
// up (giveUp).
func (c *Consumer) writeGroup(ctx context.Context, item int64, es []*entry, decoded map[*entry]queue.OrderMessage) {
	c.writeGroupSince(ctx, item, es, decoded, time.Time{})
}

// writeGroupSince is writeGroup for a group whose permanent failures began
// at failingSince (zero: none yet). The messages of a split group inherit
// it: the group has already failed for GiveUpAfter, so a message that fails
// permanently alone is given up at once.
func (c *Consumer) writeGroupSince(ctx context.Context, item int64, es []*entry, decoded map[*entry]queue.OrderMessage, failingSince time.Time) {
	msgs := make([]queue.OrderMessage, len(es))
	for i, e := range es {
		msgs[i] = decoded[e]
	}
	bo := backoff{min: c.cfg.MinBackoff, max: c.cfg.MaxBackoff}
	for {
		res, err := c.items.WriteItem(ctx, item, msgs)
		if err == nil {
			c.record(res)
			if n := res.New[[2]string{string(store.Rejected), store.ReasonUnknownItem}]; n > 0 {
				c.log.Warn("rejected requests of an item MySQL does not have", "item", item, "requests", n)
			}
			if c.applyAfterCommit(ctx, res) == nil {
				for _, e := range es {
					e.done = true
				}
			}
			return
		}
		var kind string
		switch {
		case ctx.Err() != nil:
			return
		case errors.Is(err, errRace):
			kind = "race"
		case store.IsTransient(err):
			kind = "transient"
		default:
			kind = "failure"
			if failingSince.IsZero() {
				failingSince = time.Now()
			}
			if failing := time.Since(failingSince); failing >= c.cfg.GiveUpAfter {
				if len(es) > 1 {
					c.log.Warn("item batch keeps failing; writing its messages one by one", "item", item, "messages", len(es), "failing", failing, "err", err)
					for _, e := range es {
						if ctx.Err() != nil {
							return
						}
						c.writeGroupSince(ctx, item, []*entry{e}, decoded, failingSince)
					}
					return
				}
				c.giveUp(ctx, es[0], msgs[0], fmt.Errorf("failing for %v: %w", failing.Round(time.Millisecond), err))
				return
			}
		}
		c.m.Retries.WithLabelValues(kind).Inc()
		d := bo.next()
		if kind == "race" {
			d = min(d, c.cfg.MinBackoff) // the winner has committed: retry soon
		}
		c.log.Warn("write item failed; retrying", "item", item, "messages", len(es), "kind", kind, "in", d, "err", err)
		if !sleep(ctx, d) {
			return
		}
	}
}

// applyAfterCommit repeats the idempotent Redis step until it succeeds or the
// round's context ends. The order stays: MySQL is the truth, and a
// redelivery (the offset is not committed until this succeeds) replays it.
func (c *Consumer) applyAfterCommit(ctx context.Context, res ItemResult) error {
	bo := backoff{min: c.cfg.MinBackoff, max: c.cfg.MaxBackoff}
	for {
		sctx, cancel := context.WithTimeout(ctx, 10*c.cfg.StoreTimeout)
		err := c.after.apply(sctx, res)
		cancel()
		if err == nil || ctx.Err() != nil {
			return err
		}
		c.m.Retries.WithLabelValues("redis").Inc()
		d := bo.next()
		c.log.Warn("redis after commit failed; retrying", "item", res.ItemID, "in", d, "err", err)
		if !sleep(ctx, d) {
			return ctx.Err()
		}
	}
}

func (c *Consumer) deadLetter(ctx context.Context, letters []deadLetter) error {
	if len(letters) == 0 {
		return nil
	}
	bo := backoff{min: c.cfg.MinBackoff, max: c.cfg.MaxBackoff}
	for {
		err := c.dlq.send(ctx, letters)
		if err == nil {
			c.m.DLQ.Add(float64(len(letters)))
			for _, l := range letters {
				c.log.Error("dead-lettered message", "partition", l.msg.Partition, "offset", l.msg.Offset, "cause", l.cause)
			}
			return nil
		}
		if ctx.Err() != nil {
			return err
		}
		c.m.Retries.WithLabelValues("dlq").Inc()
		d := bo.next()
		c.log.Warn("dlq publish failed; retrying", "in", d, "err", err)
		if !sleep(ctx, d) {
			return err
		}
	}
}

func (c *Consumer) record(res ItemResult) {
	for k, n := range res.New {
		c.m.Outcomes.WithLabelValues(k[0], k[1]).Add(float64(n))
	}
}

// statsLoop turns the reader's stats into metrics. kafka-go's Stats resets
// its counters on each call, so the rebalance count is added as a delta.
func (c *Consumer) statsLoop(ctx context.Context, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(2 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			c.m.Rebalances.Add(float64(c.reader.Stats().Rebalances))
			return
		case <-t.C:
			c.m.Rebalances.Add(float64(c.reader.Stats().Rebalances))
		}
	}
}
