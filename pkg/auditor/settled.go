package auditor

import "github.com/flashsale-dev/flashsale/pkg/audit"

// sale is one watched item: its id and whether its sale has ended.
type sale struct {
	id    int64
	ended bool
}

// skip reports whether s's audit is left out of this pass: its sale ended
// and an earlier pass found it settled. A sale that is live again (its
// window moved by an operator) loses the mark and is audited.
func (a *Auditor) skip(s sale) bool {
	if !s.ended {
		delete(a.settled, s.id)
		return false
	}
	_, ok := a.settled[s.id]
	return ok
}

// noteSettled marks s settled when it ended and rep shows nothing of it
// still moving: no reservation waiting for its outcome, no order waiting
// for its payment or its expiry, no transfer or stock change under way
// (an Info note), no waitlist, and every invariant holding. From then on
// nothing of the sale changes but by an operator, so the auditor stops
// reading its orders every pass (each audit reads all of them, which on
// the 2 s interval of the local pipeline was most of MySQL's work while a
// bench ran the next sale) and its gauges keep the last audit's values
// until it leaves the watched set (Settle after its end). The time bound
// alone would re-audit a settled sale for the whole payment window plus
// the orphan grace.
func (a *Auditor) noteSettled(s sale, rep audit.Report) {
	if !s.ended || !rep.OK || rep.Pending > 0 || rep.Unpaid > 0 || len(rep.Info) > 0 || rep.Waitlist != nil {
		return
	}
	if a.settled == nil {
		a.settled = map[int64]struct{}{}
	}
	a.settled[s.id] = struct{}{}
}
