package history

import (
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/flashsale-dev/flashsale/pkg/reqid"
)

// held is the interval over which a request certainly held its qty.
type held struct {
	rid      string
	qty      int
	from, to time.Duration // to = math.MaxInt64: for ever (paid)
	seen     bool          // from is set
}

const forever = time.Duration(math.MaxInt64)

// oversold is the cross-buyer half of the check: for each item with a
// known total, the instants at which the requests certainly holding units
// add up to more than the total (see the package doc for what counts as
// certain). It returns a description per violation (at most a few per
// item) and the items it could not check.
func oversold(ops []Op, totals map[int64]int) (out []string, unchecked []int64) {
	reqs := map[string]*held{}
	get := func(rid string) *held {
		h := reqs[rid]
		if h == nil {
			h = &held{rid: rid, to: -1}
			reqs[rid] = h
		}
		return h
	}
	exists := func(h *held, at time.Duration) { // the request existed by at
		if !h.seen || at < h.from {
			h.from, h.seen = at, true
		}
	}
	for _, op := range ops {
		if !op.Done {
			continue
		}
		o := classify(op.Input, op.Output, true)
		switch {
		case op.Input.Kind == Order && o.v == accepted:
			h := get(o.rid)
			h.qty = max(h.qty, op.Input.Qty)
			exists(h, op.Return)
		case (op.Input.Kind == Status || op.Input.Kind == Held) && o.v == view && o.rid != "":
			h := get(o.rid)
			if op.Output.Qty > 0 && h.qty == 0 {
				h.qty = op.Output.Qty
			}
			switch o.s {
			case pending:
				exists(h, op.Return)
				h.to = max(h.to, op.Call)
			case paid:
				exists(h, op.Return)
				h.to = forever
			case unpaid, cancelled:
				exists(h, op.Return) // it existed; UNPAID may be a stale cache entry
			}
		case op.Input.Kind == Pay && o.v == payOK:
			h := get(op.Input.RID)
			exists(h, op.Return)
			h.to = forever
		}
	}
	type event struct {
		at    time.Duration
		delta int
		rid   string
	}
	byItem := map[int64][]event{}
	for _, h := range reqs {
		if !h.seen || h.to < h.from {
			continue
		}
		item, err := reqid.Item(h.rid)
		if err != nil {
			continue
		}
		q := max(h.qty, 1)
		byItem[item] = append(byItem[item], event{h.from, q, h.rid}, event{h.to, -q, h.rid})
	}
	items := make([]int64, 0, len(byItem))
	for it := range byItem {
		items = append(items, it)
	}
	sort.Slice(items, func(i, j int) bool { return items[i] < items[j] })
	for _, item := range items {
		total, ok := totals[item]
		if !ok {
			unchecked = append(unchecked, item)
			continue
		}
		ev := byItem[item]
		// Intervals are closed: at equal times, starts count before ends.
		sort.Slice(ev, func(i, j int) bool {
			if ev[i].at != ev[j].at {
				return ev[i].at < ev[j].at
			}
			return ev[i].delta > ev[j].delta
		})
		n, reported := 0, 0
		for _, e := range ev {
			n += e.delta
			if e.delta > 0 && n > total {
				if reported < 3 {
					out = append(out, fmt.Sprintf("item %d: %d units certainly held at %v (total %d), the last by %s", item, n, e.at, total, e.rid))
				}
				reported++
			}
		}
		if reported > 3 {
			out = append(out, fmt.Sprintf("item %d: %d more instants oversold", item, reported-3))
		}
	}
	return out, unchecked
}
