package history

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"pgregory.net/rapid"
)

// sim is a correct sale, run one operation at a time: what the real
// pipeline promises, written as a plain program (not as the model), with
// its failures: answers lost after or before the effect, outcome_unknown
// either way, unavailable with nothing done, the server deciding,
// cancelling and rejecting on its own.
type sim struct {
	stock   int
	holders map[int64]string
	reqs    map[string]*simReq
	idem    map[string]string
	next    int
}

type simReq struct {
	user   int64
	key    string
	status string
}

// TestCorrectSalesAreAccepted: every history of a correct sale, with
// operations overlapping around their linearization points, is Ok.
func TestCorrectSalesAreAccepted(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		total := rapid.IntRange(1, 3).Draw(t, "total")
		users := rapid.Int64Range(1, 4).Draw(t, "users")
		s := &sim{stock: total, holders: map[int64]string{}, reqs: map[string]*simReq{}, idem: map[string]string{}}
		known := map[int64][]string{} // request ids each user learned
		var h hist
		// Orders that reserved and will be released and answered 503
		// unavailable at a later step (a failed publish): a concurrent call
		// of the buyer may see them meanwhile.
		type open struct {
			user int64
			key  string
			rid  string
			call int
		}
		var opened []open
		steps := rapid.IntRange(1, 60).Draw(t, "steps")
		for i := range steps {
			lin := i*20 + 20
			call := lin - rapid.IntRange(0, 15).Draw(t, "before")
			ret := lin + rapid.IntRange(0, 15).Draw(t, "after")
			u := rapid.Int64Range(1, users).Draw(t, "user")
			switch rapid.IntRange(0, 7).Draw(t, "what") {
			case 6:
				key := rapid.SampledFrom([]string{"", "a"}).Draw(t, "key")
				before := s.next
				out := s.order(u, key, 9)
				if out.Code == http.StatusAccepted && s.next > before {
					opened = append(opened, open{u, key, out.RID, call}) // answered later
					continue
				}
				if out.RID != "" {
					known[u] = append(known[u], out.RID)
				}
				h.order(u, key, out, call, ret)
			case 7:
				if len(opened) == 0 {
					continue
				}
				o := opened[0]
				opened = opened[1:]
				if s.reqs[o.rid].status != "PENDING" {
					// The consumer decided first: the buyer gets the 202.
					h.order(o.user, o.key, ok202(o.rid), o.call, ret)
					known[o.user] = append(known[o.user], o.rid)
					continue
				}
				s.release(o.rid)
				h.order(o.user, o.key, unavailable503, o.call, ret)
			case 0, 1:
				key := rapid.SampledFrom([]string{"", "a", "b"}).Draw(t, "key")
				fail := rapid.IntRange(0, 9).Draw(t, "fail")
				out := s.order(u, key, fail)
				if out.RID != "" {
					known[u] = append(known[u], out.RID)
				}
				h.order(u, key, out, call, ret)
			case 2:
				s.internal(rapid.IntRange(0, 2).Draw(t, "move"), rapid.IntRange(0, 100).Draw(t, "pick"))
			case 3, 4:
				if len(known[u]) == 0 {
					continue
				}
				r := rapid.SampledFrom(known[u]).Draw(t, "rid")
				if rapid.Bool().Draw(t, "pay") {
					h.pay(u, r, s.pay(u, r, rapid.IntRange(0, 5).Draw(t, "payfail")), call, ret)
				} else {
					h.add(Input{Kind: Status, User: u, RID: r}, s.status(u, r), call, ret)
				}
			case 5:
				out := s.held(u)
				if out.RID != "" {
					known[u] = append(known[u], out.RID)
				}
				h.held(u, out, call, ret)
			}
		}
		for _, o := range opened { // still in flight when the history is read
			h = append(h, Op{Input: Input{Kind: Order, User: o.user, Item: testItem, Qty: 1, Key: o.key}, Call: time.Duration(o.call) * time.Millisecond})
		}
		res := Check(h, Options{Totals: map[int64]int{testItem: total}, Timeout: time.Minute})
		if res.Verdict() != porcupine.Ok {
			for _, op := range h {
				t.Logf("%v [%v, %v] %+v -> %+v", op.Input.Kind, op.Call, op.Return, op.Input, op.Output)
			}
			t.Fatalf("a correct sale rejected: %v", res)
		}
	})
}

// order: fail 0 unavailable, 1 outcome_unknown without effect, 2
// outcome_unknown with effect, 3 no answer without effect, 4 no answer
// with effect, else answered.
func (s *sim) order(u int64, key string, fail int) Output {
	if fail == 0 {
		return unavailable503
	}
	ik := fmt.Sprint(u, "/", key)
	if r, ok := s.idem[ik]; ok && key != "" {
		if fail == 3 || fail == 4 {
			return noAnswer
		}
		return ok202(r)
	}
	if r, ok := s.holders[u]; ok {
		if fail == 3 || fail == 4 {
			return noAnswer
		}
		return ok409(r)
	}
	if s.stock < 1 {
		return soldOut410
	}
	s.next++
	r := rid(s.next)
	switch fail {
	case 1:
		return unknown503(r)
	case 3:
		return noAnswer
	}
	s.stock--
	s.holders[u] = r
	s.reqs[r] = &simReq{user: u, key: key, status: "PENDING"}
	if key != "" {
		s.idem[ik] = r
	}
	switch fail {
	case 2:
		return unknown503(r)
	case 4:
		return noAnswer
	}
	return ok202(r)
}

// internal: the server's own moves on the pick'th request: 0 decide
// ORDERED, 1 reject (released: stock, mark and key back), 2 cancel.
func (s *sim) internal(move, pick int) {
	var cands []string
	for r, q := range s.reqs {
		if (move < 2 && q.status == "PENDING") || (move == 2 && q.status == "UNPAID") {
			cands = append(cands, r)
		}
	}
	if len(cands) == 0 {
		return
	}
	// Map iteration order is random: sort for a reproducible pick.
	for i := range cands {
		for j := i + 1; j < len(cands); j++ {
			if cands[j] < cands[i] {
				cands[i], cands[j] = cands[j], cands[i]
			}
		}
	}
	r := cands[pick%len(cands)]
	q := s.reqs[r]
	switch move {
	case 0:
		q.status = "UNPAID"
	case 1:
		s.release(r)
	case 2:
		q.status = "CANCELLED"
		s.stock++
	}
}

// release rejects a pending request: stock, buyer mark and key back.
func (s *sim) release(r string) {
	q := s.reqs[r]
	if q.status != "PENDING" {
		return
	}
	q.status = "REJECTED"
	s.stock++
	if s.holders[q.user] == r {
		delete(s.holders, q.user)
	}
	delete(s.idem, fmt.Sprint(q.user, "/", q.key))
}

func (s *sim) status(u int64, r string) Output {
	q, ok := s.reqs[r]
	if !ok || q.user != u {
		return Output{Code: http.StatusNotFound, Error: "not_found"}
	}
	return Output{Code: http.StatusOK, RID: r, Status: q.status, Qty: 1}
}

// pay: fail 0 no answer without effect, 1 no answer with effect.
func (s *sim) pay(u int64, r string, fail int) Output {
	q, ok := s.reqs[r]
	if !ok || q.user != u {
		if fail <= 1 {
			return noAnswer
		}
		return Output{Code: http.StatusNotFound, Error: "not_found"}
	}
	if fail == 0 {
		return noAnswer
	}
	switch q.status {
	case "UNPAID", "PAID":
		q.status = "PAID"
		if fail == 1 {
			return noAnswer
		}
		return paid200
	}
	if fail == 1 {
		return noAnswer
	}
	return notPayable409
}

func (s *sim) held(u int64) Output {
	r, ok := s.holders[u]
	if !ok {
		return Output{Code: http.StatusNotFound, Error: "not_found"}
	}
	return s.status(u, r)
}
