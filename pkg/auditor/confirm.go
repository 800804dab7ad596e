package auditor

import (
	"context"
	"slices"
	"time"

	"github.com/flashsale-dev/flashsale/pkg/audit"
)

// confirmReads bounds the reads of one item in one pass: the first, and
// the re-reads that confirm or clear what it found.
const confirmReads = 5

// confirmPause is the wait before each re-read: long enough for an order
// in flight between the stores (reserved in Redis, committed in MySQL, not
// yet settled) to land, short enough that a pass over MaxItems stays well
// inside its interval when a real fault makes every item re-read.
const confirmPause = 50 * time.Millisecond

// confirm reads an item's audit and, when it shows a violation, reads it
// again until one read is clean or two reads in a row agree (the same
// violations, numbers included), at most confirmReads reads. The audit
// reads MySQL and Redis at different moments, so mid-sale a read can
// catch a unit between the stores and report a drift that no longer
// holds a moment later; an alert on such a read teaches an SRE to ignore
// the one alert that matters. A unit really out of place is out of place
// in every read, so it is reported within the same pass: two reads that
// agree, or every read violating (a fault under a moving sale, whose
// numbers change from read to read). transient reports that a violation
// was seen and then cleared by a clean read.
func confirm(ctx context.Context, read func(context.Context) (audit.Report, error), pause time.Duration) (rep audit.Report, transient bool, err error) {
	if rep, err = read(ctx); err != nil || rep.OK {
		return rep, false, err
	}
	t := time.NewTimer(pause)
	defer t.Stop()
	for reads := 1; reads < confirmReads; reads++ {
		t.Reset(pause)
		select {
		case <-ctx.Done():
			return rep, false, nil // what was read stands: a violation is reported, not dropped
		case <-t.C:
		}
		again, err := read(ctx)
		if err != nil {
			return audit.Report{}, false, err
		}
		if again.OK {
			return again, true, nil
		}
		if slices.Equal(again.Violations, rep.Violations) {
			return again, false, nil
		}
		rep = again
	}
	return rep, false, nil
}
