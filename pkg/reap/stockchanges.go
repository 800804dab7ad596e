package reap

import "context"

// finishStockChanges finishes the restocks and withdraws left PENDING (an
// ingress killed, or a store lost, between a change's MySQL and Redis
// writes): the change's guards make a Redis step that already ran a no-op
// and its MySQL steps are CASes on the row's state, so any number of
// reapers and a retrying caller may finish the same one at once
// (pkg/stockchange). A page of BatchSize per pass: changes are operator
// calls, a handful at a time.
func (r *Reaper) finishStockChanges(ctx context.Context) error {
	n, err := r.changes.Repair(ctx, r.cfg.BatchSize)
	if n > 0 {
		r.log.Info("finished pending stock changes", "count", n)
	}
	return err
}
