package orderwriter

import (
	"context"
)

// commitLoop commits offsets in the background: each time a round marks
// messages done it commits, per partition, the done prefix the tracker
// yields (never past a message still being written), then frees the
// batches that commit completes. Rounds never wait for a commit. A failed
// commit is retried with backoff; until it succeeds the batches it covers
// keep their places, so fetching pauses instead of running ahead. After stop
// is closed (every round has returned) it tries one last commit and returns;
// it also returns when ctx ends.
func (c *Consumer) commitLoop(ctx context.Context, stop <-chan struct{}) {
	bo := backoff{min: c.cfg.MinBackoff, max: c.cfg.MaxBackoff}
	for {
		final := false
		select {
		case <-c.tr.wake:
		case <-stop:
			final = true
		case <-ctx.Done():
			return
		}
		ps := c.tr.committable()
		if len(ps) == 0 {
			if final {
				return
			}
			continue
		}
		if err := c.reader.CommitMessages(ctx, messages(ps)...); err != nil {
			// Uncommitted messages are redelivered (to us or to the
			// partition's new owner after a rebalance) and absorbed by the
			// arbiter.
			c.m.CommitErrors.Inc()
			c.log.Warn("commit offsets", "err", err, "partitions", len(ps))
			if final || !sleep(ctx, bo.next()) {
				return
			}
			c.tr.notify()
			continue
		}
		bo.reset()
		c.tr.committed(ps)
		if final {
			return
		}
	}
}

// acquire takes a place in sem, or reports false once ctx is done.
func acquire(ctx context.Context, sem chan struct{}) bool {
	select {
	case sem <- struct{}{}:
		return true
	case <-ctx.Done():
		return false
	}
}
