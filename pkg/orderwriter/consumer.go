package orderwriter

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"
	"go.opentelemetry.io/otel/trace"

	"github.com/flashsale-dev/flashsale/pkg/orderlog"
	"github.com/flashsale-dev/flashsale/pkg/stock"
	"github.com/flashsale-dev/flashsale/pkg/store"
	"github.com/flashsale-dev/flashsale/pkg/tracing"
)

// Consumer is one member of the order writers' consumer group.
type Consumer struct {
	cfg    Config
	log    *slog.Logger
	m      *Metrics
	reader *kafka.Reader
	items  *ItemWriter
	batch  *BatchWriter
	after  *afterCommit
	dlq    *dlqWriter
	// tr holds the fetched, uncommitted messages of all rounds in flight.
	tr *tracker
	// itemSlots bounds concurrent item writes (ItemParallelism).
	itemSlots chan struct{}
}

// Deps are the stores a consumer writes; the caller owns them and closes
// them after Run returns.
type Deps struct {
	DB    *sql.DB
	Stock *stock.Store
}

// New builds a consumer; Run starts it. Like every component of the
// pipeline it takes its settings, its dependencies, its metrics and its
// logger, in that order; Config.withDefaults holds the defaults.
func New(cfg Config, d Deps, m *Metrics, log *slog.Logger) (*Consumer, error) {
	db, st := d.DB, d.Stock
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
		cfg:       c,
		log:       log,
		m:         m,
		reader:    kafka.NewReader(rc),
		items:     &ItemWriter{DB: db, PaymentWindow: c.PaymentWindow, TxTimeout: 5 * c.StoreTimeout},
		batch:     &BatchWriter{DB: db, PaymentWindow: c.PaymentWindow, TxTimeout: 5 * c.StoreTimeout},
		after:     &afterCommit{stock: st},
		dlq:       newDLQWriter(c),
		tr:        newTracker(),
		itemSlots: make(chan struct{}, c.ItemParallelism),
	}, nil
}

// Run consumes until ctx is done. Then it finishes the batches in hand
// (within DrainTimeout), commits what was written, and closes the reader,
// which leaves the group so the partitions move to another replica at once.
//
// Run overlaps its work: while batches are written (their items
// concurrently, ItemParallelism at a time) the next batch is fetched, and
// offsets are committed in the background (commitLoop) as rounds finish. At
// most BatchesInFlight fetched batches are not yet covered by a committed
// offset; a batch frees its place only when it is, so a stuck item stops
// fetching after that many batches instead of piling up redelivery.
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
		sec := orderlog.SecurityOf(c.cfg.Dialer) // one transport for every poll
		w := &lagWatch{interval: c.cfg.LagInterval, m: c.m, log: c.log,
			poll: func(ctx context.Context) (map[int]int64, error) {
				return sec.Lag(ctx, c.cfg.Brokers, c.cfg.GroupID, c.cfg.Topic)
			}}
		w.run(lagCtx)
	}()
	defer func() { stopLag(); <-lagDone }()

	// Writes and the last commit outlive ctx by DrainTimeout.
	wctx, cancel := drainContext(ctx, c.cfg.DrainTimeout)
	defer cancel()
	stopCommit, commitDone := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(commitDone)
		c.commitLoop(wctx, stopCommit)
	}()
	var rounds sync.WaitGroup
	defer func() {
		rounds.Wait()
		close(stopCommit)
		<-commitDone
	}()

	places := make(chan struct{}, c.cfg.BatchesInFlight)
	bo := backoff{min: c.cfg.MinBackoff, max: c.cfg.MaxBackoff}
	for {
		select {
		case places <- struct{}{}:
		case <-ctx.Done():
			return nil
		}
		batch, err := c.fetch(ctx)
		if len(batch) > 0 {
			c.tr.add(batch, func() { <-places })
			rounds.Add(1)
			go func() {
				defer rounds.Done()
				c.round(wctx, batch)
			}()
		} else {
			<-places
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

// drainContext is not cancelled when ctx is, but d after it: the batches in
// hand get a bounded time to finish after shutdown starts.
func drainContext(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, func() { time.AfterFunc(d, cancel) })
	return wctx, func() { stop(); cancel() }
}

// round writes one batch: a batch of several stock rows in one set-based
// transaction (writeSetBased), one of a single row (a hot item) in its own
// item transaction, as before. It marks what it finished done; the commit
// loop commits it.
func (c *Consumer) round(ctx context.Context, batch []*entry) {
	start := time.Now()
	ctx, span := c.startBatch(ctx, batch)
	defer span.End()
	c.m.BatchSize.Observe(float64(len(batch)))

	// Decode; poison goes to the DLQ. Group the rest by stock row (item and
	// bucket), in offset order.
	var poison []deadLetter
	var poisonEntries []*entry
	groups := map[orderlog.StockKey][]*entry{}
	var order []orderlog.StockKey
	decoded := make(map[*entry]orderlog.OrderMessage, len(batch))
	for _, e := range batch {
		om, err := orderlog.Decode(e.msg.Value)
		if err != nil {
			poison = append(poison, deadLetter{msg: e.msg, cause: err})
			poisonEntries = append(poisonEntries, e)
			continue
		}
		decoded[e] = om
		k := om.StockKey()
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], e)
	}
	if c.deadLetter(ctx, poison) == nil {
		c.tr.markDone(poisonEntries...)
	}
	if len(order) > 1 {
		c.writeSetBased(ctx, order, groups, decoded)
	} else {
		c.writeGroups(ctx, order, groups, decoded)
	}

	last := map[int]kafka.Message{}
	for _, e := range batch {
		last[e.msg.Partition] = e.msg
	}
	for p, m := range last {
		c.m.fetchLag.set(p, float64(max(0, m.HighWaterMark-m.Offset-1)))
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
func (c *Consumer) writeGroup(ctx context.Context, item int64, es []*entry, decoded map[*entry]orderlog.OrderMessage) {
	c.writeGroupSince(ctx, item, es, decoded, time.Time{})
}

// writeGroupSince is writeGroup for a group whose permanent failures began
// at failingSince (zero: none yet). The messages of a split group inherit
// it: the group has already failed for GiveUpAfter, so a message that fails
// permanently alone is given up at once.
func (c *Consumer) writeGroupSince(ctx context.Context, item int64, es []*entry, decoded map[*entry]orderlog.OrderMessage, failingSince time.Time) {
	msgs := make([]orderlog.OrderMessage, len(es))
	for i, e := range es {
		msgs[i] = decoded[e]
	}
	bo := backoff{min: c.cfg.MinBackoff, max: c.cfg.MaxBackoff}
	for {
		tctx, span := startItemTx(ctx, item, len(msgs))
		res, err := c.items.WriteItem(tctx, item, msgs)
		endItemTx(span, res, err)
		if err == nil {
			c.settle(ctx, es, res)
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
					c.log.WarnContext(ctx, "item batch keeps failing; writing its messages one by one", "item", item, "messages", len(es), "failing", failing, "err", err)
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
		c.log.WarnContext(ctx, "write item failed; retrying", "item", item, "messages", len(es), "kind", kind, "in", d, "err", err)
		if !sleep(ctx, d) {
			return
		}
	}
}

// settle records a committed group's decisions, applies them to Redis and
// marks its messages done.
func (c *Consumer) settle(ctx context.Context, es []*entry, res ItemResult) {
	c.settleMany(ctx, es, []ItemResult{res})
}

// settleMany is settle for the groups of one committed transaction (es all
// their messages): one Redis step for them all.
func (c *Consumer) settleMany(ctx context.Context, es []*entry, rs []ItemResult) {
	for _, res := range rs {
		c.record(res)
		if n := res.New[[2]string{string(store.Rejected), store.ReasonUnknownItem}]; n > 0 {
			c.log.WarnContext(ctx, "rejected requests of an item MySQL does not have", "item", res.ItemID, "requests", n)
		}
	}
	if c.applyAfterCommit(ctx, rs) == nil {
		c.tr.markDone(es...)
	}
}

// applyAfterCommit repeats the idempotent Redis step of rs (the results of
// one transaction) until it succeeds or the round's context ends. The
// orders stay: MySQL is the truth, and a redelivery (the offset is not
// committed until this succeeds) replays it.
func (c *Consumer) applyAfterCommit(ctx context.Context, rs []ItemResult) error {
	ctx, span := tracing.Start(ctx, SpanAfterCommit, trace.SpanKindInternal)
	defer span.End()
	attrs := []any{"item", rs[0].ItemID}
	if len(rs) > 1 {
		attrs = []any{"items", len(rs)}
	}
	return c.retry(ctx, "redis", "redis after commit", attrs, func(ctx context.Context) error {
		sctx, cancel := context.WithTimeout(ctx, 10*c.cfg.StoreTimeout)
		defer cancel()
		return c.after.applyMany(sctx, rs)
	})
}

// deadLetter publishes letters to the dead-letter topic, retrying until it
// succeeds or ctx ends: their offsets are committed only after it.
func (c *Consumer) deadLetter(ctx context.Context, letters []deadLetter) error {
	if len(letters) == 0 {
		return nil
	}
	err := c.retry(ctx, "dlq", "dlq publish", nil, func(ctx context.Context) error { return c.dlq.send(ctx, letters) })
	if err != nil {
		return err
	}
	c.m.DLQ.Add(float64(len(letters)))
	for _, l := range letters {
		// The line carries the order's trace id (its message's
		// traceparent), so the letter leads to the POST that admitted it.
		lctx := ctx
		if sc := orderlog.TraceOf(l.msg); sc.IsValid() {
			lctx = trace.ContextWithRemoteSpanContext(ctx, sc)
		}
		c.log.ErrorContext(lctx, "dead-lettered message", "partition", l.msg.Partition, "offset", l.msg.Offset, "cause", l.cause)
	}
	return nil
}

// retry runs op until it succeeds or ctx ends, with the consumer's backoff
// between attempts, counting each retry under kind in
// flashsale_consumer_retries_total and logging it as what. It returns nil,
// or op's last error once ctx has ended. (writeGroupSince keeps a loop of
// its own: it treats each kind of failure differently and gives up.)
func (c *Consumer) retry(ctx context.Context, kind, what string, attrs []any, op func(context.Context) error) error {
	bo := backoff{min: c.cfg.MinBackoff, max: c.cfg.MaxBackoff}
	for {
		err := op(ctx)
		if err == nil || ctx.Err() != nil {
			return err
		}
		c.m.Retries.WithLabelValues(kind).Inc()
		d := bo.next()
		c.log.WarnContext(ctx, what+" failed; retrying", append(attrs, "in", d, "err", err)...)
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
