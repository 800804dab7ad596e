package history

import (
	"fmt"
	"sort"
	"strings"
)

// request is one request of a buyer in the model. A ghost (rid "") is a
// request created by an order whose answer the client never got: its id is
// learned only from a later 409, held lookup or replay.
type request struct {
	rid string
	key string
	s   st
	tag int // the answer that said "nothing reserved" this request must be undone by (see outcome.go)
}

// buyer is the state of one (user, item) partition: the buyer's requests,
// kept sorted so that equal states encode equally.
type buyer []request

// encode is the state's canonical, comparable form (request ids and
// Idempotency-Keys contain neither ',' nor ';').
func (b buyer) encode() string {
	parts := make([]string, len(b))
	for i, r := range b {
		parts[i] = fmt.Sprintf("%s,%s,%d,%d", r.rid, r.key, r.s, r.tag)
	}
	sort.Strings(parts)
	return strings.Join(parts, ";")
}

func decode(s string) buyer {
	if s == "" {
		return nil
	}
	var b buyer
	for _, p := range strings.Split(s, ";") {
		f := strings.SplitN(p, ",", 4)
		var n, tag int
		fmt.Sscan(f[2], &n)
		fmt.Sscan(f[3], &tag)
		b = append(b, request{rid: f[0], key: f[1], s: st(n), tag: tag})
	}
	return b
}

func (b buyer) clone() buyer { return append(buyer(nil), b...) }

func (b buyer) find(rid string) int {
	for i, r := range b {
		if r.rid == rid {
			return i
		}
	}
	return -1
}

// freed returns the state with no request holding the item, moving PENDING
// holders to REJECTED (the server may do so at any time), or false when an
// order (UNPAID, PAID, CANCELLED) holds it.
func (b buyer) freed() (buyer, bool) {
	out := b.clone()
	for i, r := range out {
		switch {
		case r.s == pending:
			out[i].s = rejected
		case r.s.holds():
			return nil, false
		}
	}
	return out, true
}

// ghosts returns the indexes of ghosts that could be named rid now:
// holding ones when must hold, with the given key unless key is "*".
func (b buyer) ghosts(key string, mustHold bool) []int {
	var out []int
	for i, r := range b {
		if r.rid == "" && (key == "*" || r.key == key) && (!mustHold || r.s.holds()) {
			out = append(out, i)
		}
	}
	return out
}

func (b buyer) named(i int, rid string) buyer {
	out := b.clone()
	out[i].rid = rid
	return out
}

func (b buyer) with(r request) buyer { return append(b.clone(), r) }

// states collects distinct next states.
type states []interface{}

func (s *states) add(b buyer) { *s = append(*s, b.encode()) }

// step is the buyer model: every state the buyer can be in after the
// operation, none if the answer is impossible from b.
func step(b buyer, in Input, o outcome) []interface{} {
	var next states
	switch in.Kind {
	case Order:
		stepOrder(&next, b, in, o)
	case Status, Held:
		stepView(&next, b, in, o)
	case Pay:
		stepPay(&next, b, in, o)
	}
	return next
}

func stepOrder(next *states, b buyer, in Input, o outcome) {
	switch o.v {
	case noInfo:
		next.add(b)
		return
	case transientBegin:
		// Nothing, or a request that a concurrent call may see (a 409
		// naming it) and that is undone by the answer (transientEnd).
		next.add(b)
		if f, ok := b.fresh(in.Key); ok {
			next.add(f.with(request{key: in.Key, s: pending, tag: o.tag}))
		}
		return
	case transientEnd:
		for i, r := range b {
			if r.tag != o.tag {
				continue
			}
			if r.s != pending && r.s != rejected {
				return // it became an order: the answer was a lie
			}
			n := b.clone()
			n[i].s, n[i].tag = rejected, 0
			next.add(n)
			return
		}
		next.add(b)
		return
	case holder:
		// The buyer mark names o.rid: a holding request, or a ghost.
		if i := b.find(o.rid); i >= 0 {
			if b[i].s.holds() {
				next.add(b)
			}
			return
		}
		for _, g := range b.ghosts("*", true) {
			next.add(b.named(g, o.rid))
		}
		return
	}
	// accepted, unknownRID, unknownAny: a replay of the key's request,
	// or a new request.
	if in.Key != "" && o.v != unknownAny {
		if i := b.find(o.rid); i >= 0 && b[i].key == in.Key && b[i].s != none {
			next.add(b) // the first answer again, whatever happened since
		}
		if b.find(o.rid) < 0 {
			for _, g := range b.ghosts(in.Key, false) {
				next.add(b.named(g, o.rid))
			}
		}
	}
	switch o.v {
	case unknownAny:
		next.add(b) // nothing happened (or a replay, which changes nothing)
		if f, ok := b.fresh(in.Key); ok {
			next.add(f.with(request{key: in.Key, s: pending}))
		}
	case accepted, unknownRID:
		if b.find(o.rid) >= 0 {
			return // a new request never reuses an id
		}
		if o.v == unknownRID {
			next.add(b.with(request{rid: o.rid, key: in.Key, s: none}))
		}
		if f, ok := b.fresh(in.Key); ok {
			next.add(f.with(request{rid: o.rid, key: in.Key, s: pending}))
		}
	}
}

// fresh: the state in which a new request of key may be admitted: the
// buyer holds nothing, and no live request owns the key (REJECTED frees
// it).
func (b buyer) fresh(key string) (buyer, bool) {
	f, ok := b.freed()
	if !ok {
		return nil, false
	}
	for _, r := range f {
		if key != "" && r.key == key && r.s != rejected && r.s != none {
			return nil, false
		}
	}
	return f, true
}

func stepView(next *states, b buyer, in Input, o outcome) {
	switch o.v {
	case noInfo:
		next.add(b)
		return
	case notFound:
		if in.Kind == Held {
			// The buyer holds nothing.
			if f, ok := b.freed(); ok {
				next.add(f)
			}
			return
		}
		if i := b.find(in.RID); i < 0 || b[i].s == none {
			next.add(b)
		}
		return
	case view:
		if in.Kind == Status && o.rid != "" && o.rid != in.RID {
			return // the answer is about another request
		}
		i := b.find(o.rid)
		if i >= 0 {
			if reachable(b[i].s, o.s) {
				n := b.clone()
				n[i].s = o.s
				next.add(n)
			}
			return
		}
		if in.Kind == Held {
			for _, g := range b.ghosts("*", false) {
				if reachable(b[g].s, o.s) {
					n := b.named(g, o.rid)
					n[g].s = o.s
					next.add(n)
				}
			}
		}
	}
}

func stepPay(next *states, b buyer, in Input, o outcome) {
	i := b.find(in.RID)
	cur := none
	if i >= 0 {
		cur = b[i].s
	}
	set := func(s st) {
		n := b.clone()
		n[i].s = s
		next.add(n)
	}
	switch o.v {
	case noInfo:
		next.add(b)
	case payOK:
		if i >= 0 && (cur == pending || cur == unpaid || cur == paid) {
			set(paid)
		}
	case notPayable:
		// Not paid: pending, rejected (an outcome_unknown request that
		// reserved nothing may be decided REJECTED), or an order past its
		// deadline.
		switch {
		case i >= 0 && cur == none:
			set(rejected)
		case i >= 0 && cur != paid:
			next.add(b)
		}
	case notFound:
		if cur == none {
			next.add(b)
		}
	case payUnknown:
		next.add(b)
		if i >= 0 && (cur == pending || cur == unpaid) {
			set(paid)
		}
	}
}
