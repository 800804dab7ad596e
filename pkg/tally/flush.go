package tally

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flashsale-dev/flashsale/pkg/stock"
)

// TTL is how long an item's tally outlives its last flush: long enough to
// read a sale's answers back the days after it, short enough that tallies of
// test and forgotten items do not pile up in Redis.
const TTL = 7 * 24 * time.Hour

// Hash fields: answerField+outcome counts answers, latField+i the 202s of
// latency bucket i (not cumulative, so replicas' counts add), latSumField
// their latency sum in microseconds.
const (
	answerField = "a:"
	latField    = "l:"
	latSumField = "l:sum_us"
)

// field is one counter to add to an item's hash, and the atomic it was
// taken from, to give the count back if the add fails.
type field struct {
	name string
	n    int64
	from *atomic.Int64
}

// Start runs the flusher until Close.
func (t *Tally) Start() {
	t.startOnce.Do(func() { go t.run() })
}

func (t *Tally) run() {
	defer close(t.done)
	tick := time.NewTicker(t.every)
	defer tick.Stop()
	for {
		select {
		case <-t.stop:
			return
		case <-tick.C:
			ctx, cancel := context.WithTimeout(context.Background(), t.timeout)
			_ = t.Flush(ctx) // logged by Flush; the counts wait for the next tick
			cancel()
		}
	}
}

// Close stops the flusher and flushes what is left, within ctx: call it
// once the HTTP server has drained, so the last answers are counted too.
func (t *Tally) Close(ctx context.Context) error {
	t.closeOnce.Do(func() {
		close(t.stop)
		t.startOnce.Do(func() { close(t.done) }) // never started: nothing to wait for
	})
	<-t.done
	return t.Flush(ctx)
}

// Flush adds every count taken since the last flush to Redis in one
// pipelined call (go-redis splits it by node on a Cluster; one item's
// fields are in one slot). An add that fails gives its count back to
// memory for the next flush. An add whose answer was lost (a timeout after
// Redis applied it) is given back too and so counted twice: the tallies are
// for a console, and over-counting one flush's answers in an outage is
// better than dropping them.
func (t *Tally) Flush(ctx context.Context) error {
	t.flushMu.Lock()
	defer t.flushMu.Unlock()
	pipe := t.rdb.Pipeline()
	var adds []field
	var cmds []*redis.IntCmd
	t.items.Range(func(k, v any) bool {
		id, c := k.(int64), v.(*counts)
		fs := c.take()
		if len(fs) == 0 {
			t.idle(id, c)
			return true
		}
		c.idle = 0
		key := stock.TallyKey(id)
		for _, f := range fs {
			adds = append(adds, f)
			cmds = append(cmds, pipe.HIncrBy(ctx, key, f.name, f.n))
		}
		pipe.Expire(ctx, key, TTL)
		return true
	})
	if len(adds) == 0 {
		return nil
	}
	_, err := pipe.Exec(ctx)
	if err != nil {
		var failed int
		for i, cmd := range cmds {
			if cmd.Err() != nil {
				adds[i].from.Add(adds[i].n)
				failed++
			}
		}
		err = fmt.Errorf("tally: flush: %d of %d adds failed, kept for the next flush: %w", failed, len(adds), err)
	}
	t.logChange(err)
	return err
}

// logChange logs when flushes start and stop failing, not every failure:
// at one flush a second an outage would otherwise log forever.
func (t *Tally) logChange(err error) {
	switch {
	case err != nil && !t.failing:
		t.log.Warn("tally flush failing; answers are still counted in memory", "err", err)
	case err == nil && t.failing:
		t.log.Info("tally flush recovered")
	}
	t.failing = err != nil
}

// idle counts a flush with nothing to add, and evicts c after idleAfter.
func (t *Tally) idle(id int64, c *counts) {
	c.idle++
	if time.Duration(c.idle)*t.every < t.idleAfter {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.any() { // counted since take: keep it
		c.idle = 0
		return
	}
	c.dead = true
	t.items.Delete(id)
	t.n.Add(-1)
}

// take moves c's counts out (to zero) as fields to add.
func (c *counts) take() []field {
	var fs []field
	c.answers.Range(func(k, v any) bool {
		a := v.(*atomic.Int64)
		if n := a.Swap(0); n != 0 {
			fs = append(fs, field{name: answerField + k.(string), n: n, from: a})
		}
		return true
	})
	for i := range c.lat {
		if n := c.lat[i].Swap(0); n != 0 {
			fs = append(fs, field{name: latField + strconv.Itoa(i), n: n, from: &c.lat[i]})
		}
	}
	if n := c.sumUS.Swap(0); n != 0 {
		fs = append(fs, field{name: latSumField, n: n, from: &c.sumUS})
	}
	return fs
}

// any reports whether c holds a count (called under c.mu).
func (c *counts) any() bool {
	found := c.sumUS.Load() != 0
	for i := range c.lat {
		found = found || c.lat[i].Load() != 0
	}
	c.answers.Range(func(_, v any) bool {
		found = found || v.(*atomic.Int64).Load() != 0
		return !found
	})
	return found
}
