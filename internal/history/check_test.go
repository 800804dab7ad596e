package history

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

const testItem = 7

func rid(n int) string { return fmt.Sprintf("%d-%012x%016x", testItem, n, n) }

// hist builds a history by hand; times are in milliseconds.
type hist []Op

func (h *hist) add(in Input, out Output, call, ret int) {
	*h = append(*h, Op{Input: in, Output: out, Call: time.Duration(call) * time.Millisecond,
		Return: time.Duration(ret) * time.Millisecond, Done: true})
}

func (h *hist) order(user int64, key string, out Output, call, ret int) {
	h.add(Input{Kind: Order, User: user, Item: testItem, Qty: 1, Key: key}, out, call, ret)
}

func (h *hist) status(user int64, r string, s string, call, ret int) {
	out := Output{Code: http.StatusOK, RID: r, Status: s, Qty: 1}
	if s == "404" {
		out = Output{Code: http.StatusNotFound, Error: "not_found"}
	}
	h.add(Input{Kind: Status, User: user, RID: r}, out, call, ret)
}

func (h *hist) pay(user int64, r string, out Output, call, ret int) {
	h.add(Input{Kind: Pay, User: user, RID: r}, out, call, ret)
}

func (h *hist) held(user int64, out Output, call, ret int) {
	h.add(Input{Kind: Held, User: user, Item: testItem}, out, call, ret)
}

func ok202(r string) Output { return Output{Code: http.StatusAccepted, RID: r, Status: "PENDING"} }
func ok409(r string) Output {
	return Output{Code: http.StatusConflict, Error: "already_purchased", RID: r}
}
func unknown503(r string) Output { return Output{Code: 503, Error: "outcome_unknown", RID: r} }

var (
	unavailable503 = Output{Code: 503, Error: "unavailable"}
	soldOut410     = Output{Code: 410, Error: "sold_out"}
	noAnswer       = Output{Error: "context deadline exceeded"}
	paid200        = Output{Code: 200, Status: "PAID"}
	notPayable409  = Output{Code: 409, Error: "not_payable"}
)

var cases = []struct {
	name  string
	legal bool
	total int
	build func(h *hist)
}{
	{"order, poll, pay", true, 1, func(h *hist) {
		h.order(1, "k1", ok202(rid(1)), 0, 10)
		h.status(1, rid(1), "PENDING", 11, 12)
		h.status(1, rid(1), "UNPAID", 13, 14)
		h.pay(1, rid(1), paid200, 15, 16)
		h.status(1, rid(1), "PAID", 17, 18)
		h.pay(1, rid(1), paid200, 19, 20) // idempotent
	}},
	{"duplicate refused, replay answered the same", true, 2, func(h *hist) {
		h.order(1, "k1", ok202(rid(1)), 0, 10)
		h.order(1, "", ok409(rid(1)), 11, 12)
		h.order(1, "k1", ok202(rid(1)), 13, 14)
		h.status(1, rid(1), "UNPAID", 15, 16)
		h.order(1, "k1", ok202(rid(1)), 17, 18)
	}},
	{"duplicate answered 409 before the first 202 returned", true, 1, func(h *hist) {
		h.order(1, "", ok202(rid(1)), 0, 10)
		h.order(1, "", ok409(rid(1)), 2, 5)
	}},
	{"unavailable is a no-op", true, 1, func(h *hist) {
		h.order(1, "", unavailable503, 0, 10)
		h.held(1, Output{Code: 404, Error: "not_found"}, 11, 12)
		h.order(1, "", ok202(rid(2)), 13, 14)
		h.status(1, rid(2), "UNPAID", 15, 16)
	}},
	{"outcome_unknown that reserved nothing, then a new order", true, 1, func(h *hist) {
		h.order(1, "", unknown503(rid(1)), 0, 10)
		h.status(1, rid(1), "404", 11, 12)
		h.status(1, rid(1), "REJECTED", 13, 14) // the abort landed later
		h.order(1, "", ok202(rid(2)), 15, 16)
		h.status(1, rid(2), "UNPAID", 17, 18)
	}},
	{"outcome_unknown that reserved", true, 1, func(h *hist) {
		h.order(1, "k", unknown503(rid(1)), 0, 10)
		h.order(1, "k", unknown503(rid(1)), 11, 12) // replay, first publish unconfirmed
		h.status(1, rid(1), "PENDING", 13, 14)
		h.order(1, "", ok409(rid(1)), 15, 16)
		h.status(1, rid(1), "UNPAID", 17, 18)
	}},
	{"an order with no answer named by a later 409", true, 1, func(h *hist) {
		h.order(1, "", noAnswer, 0, 15000)
		h.order(1, "", ok409(rid(3)), 15001, 15002)
		h.status(1, rid(3), "UNPAID", 15003, 15004)
	}},
	{"a rejected first request frees the buyer", true, 2, func(h *hist) {
		h.order(1, "", ok202(rid(1)), 0, 10)
		h.status(1, rid(1), "REJECTED", 11, 12)
		h.order(1, "", ok202(rid(2)), 13, 14)
		h.status(1, rid(2), "UNPAID", 15, 16)
		h.status(1, rid(1), "REJECTED", 17, 18)
	}},
	{"a cancelled order still holds", true, 1, func(h *hist) {
		h.order(1, "", ok202(rid(1)), 0, 10)
		h.status(1, rid(1), "UNPAID", 11, 12)
		h.pay(1, rid(1), notPayable409, 13, 14) // expired, not yet cancelled
		h.status(1, rid(1), "CANCELLED", 15, 16)
		h.order(1, "", ok409(rid(1)), 17, 18)
	}},
	{"a pay with no answer that went through", true, 1, func(h *hist) {
		h.order(1, "", ok202(rid(1)), 0, 10)
		h.status(1, rid(1), "UNPAID", 11, 12)
		h.pay(1, rid(1), noAnswer, 13, 30)
		h.status(1, rid(1), "PAID", 31, 32)
	}},
	{"a unit given back is sold again", true, 1, func(h *hist) {
		h.order(1, "", ok202(rid(1)), 0, 10)
		h.status(1, rid(1), "PENDING", 11, 12)
		h.status(1, rid(1), "REJECTED", 13, 14)
		h.order(2, "", ok202(rid(2)), 15, 16)
		h.status(2, rid(2), "PENDING", 17, 18)
		h.order(3, "", soldOut410, 19, 20)
	}},
	{"unavailable after a concurrent 409 named its reservation", true, 1, func(h *hist) {
		h.order(1, "", unavailable503, 0, 100)
		h.order(1, "", ok409(rid(4)), 10, 20)
		h.status(1, rid(4), "PENDING", 21, 22)
		h.status(1, rid(4), "REJECTED", 101, 102)
		h.held(1, Output{Code: 404, Error: "not_found"}, 103, 104)
		h.order(1, "", ok202(rid(5)), 105, 106)
	}},
	{"pay of an outcome_unknown request that was aborted", true, 1, func(h *hist) {
		h.order(1, "", unknown503(rid(1)), 0, 10)
		h.pay(1, rid(1), notPayable409, 11, 12)
		h.status(1, rid(1), "REJECTED", 13, 14)
	}},
	{"unavailable whose reservation became an order", false, 1, func(h *hist) {
		h.order(1, "", unavailable503, 0, 100)
		h.order(1, "", ok409(rid(4)), 10, 20)
		h.status(1, rid(4), "UNPAID", 110, 111)
	}},
	{"status went backwards", false, 1, func(h *hist) {
		h.order(1, "", ok202(rid(1)), 0, 10)
		h.status(1, rid(1), "UNPAID", 11, 12)
		h.status(1, rid(1), "PENDING", 13, 14)
	}},
	{"paid went back to unpaid", false, 1, func(h *hist) {
		h.order(1, "", ok202(rid(1)), 0, 10)
		h.pay(1, rid(1), paid200, 11, 12)
		h.status(1, rid(1), "UNPAID", 13, 14)
	}},
	{"paid without a pay", false, 1, func(h *hist) {
		h.order(1, "", ok202(rid(1)), 0, 10)
		h.status(1, rid(1), "PAID", 11, 12)
	}},
	{"two live orders for one buyer", false, 2, func(h *hist) {
		h.order(1, "", ok202(rid(1)), 0, 10)
		h.order(1, "", ok202(rid(2)), 11, 12)
		h.status(1, rid(1), "UNPAID", 13, 14)
		h.status(1, rid(2), "UNPAID", 15, 16)
	}},
	{"a new order after a cancelled one", false, 2, func(h *hist) {
		h.order(1, "", ok202(rid(1)), 0, 10)
		h.status(1, rid(1), "CANCELLED", 11, 12)
		h.order(1, "", ok202(rid(2)), 13, 14)
	}},
	{"oversell", false, 1, func(h *hist) {
		h.order(1, "", ok202(rid(1)), 0, 10)
		h.order(2, "", ok202(rid(2)), 1, 11)
		h.status(1, rid(1), "PENDING", 12, 13)
		h.status(2, rid(2), "PENDING", 12, 14)
	}},
	{"oversell of paid units", false, 1, func(h *hist) {
		h.order(1, "", ok202(rid(1)), 0, 10)
		h.pay(1, rid(1), paid200, 11, 12)
		h.order(2, "", ok202(rid(2)), 100, 110)
		h.pay(2, rid(2), paid200, 111, 112)
	}},
	{"told unavailable, later holds the item", false, 1, func(h *hist) {
		h.order(1, "", unavailable503, 0, 10)
		h.held(1, Output{Code: 200, RID: rid(5), Status: "UNPAID", Qty: 1}, 11, 12)
	}},
	{"told unavailable, later refused as a holder", false, 1, func(h *hist) {
		h.order(1, "", unavailable503, 0, 10)
		h.order(1, "", ok409(rid(5)), 11, 12)
	}},
	{"a 202 whose request id is unknown later", false, 1, func(h *hist) {
		h.order(1, "", ok202(rid(1)), 0, 10)
		h.status(1, rid(1), "404", 11, 12)
	}},
	{"a 202 whose request cannot be paid or found", false, 1, func(h *hist) {
		h.order(1, "", ok202(rid(1)), 0, 10)
		h.pay(1, rid(1), Output{Code: 404, Error: "not_found"}, 11, 12)
	}},
	{"a replay answered with another request", false, 2, func(h *hist) {
		h.order(1, "k", ok202(rid(1)), 0, 10)
		h.status(1, rid(1), "UNPAID", 11, 12)
		h.order(1, "k", ok202(rid(2)), 13, 14)
	}},
	{"paid after rejected", false, 1, func(h *hist) {
		h.order(1, "", ok202(rid(1)), 0, 10)
		h.status(1, rid(1), "REJECTED", 11, 12)
		h.pay(1, rid(1), paid200, 13, 14)
	}},
	{"held says nothing while an order holds", false, 1, func(h *hist) {
		h.order(1, "", ok202(rid(1)), 0, 10)
		h.status(1, rid(1), "UNPAID", 11, 12)
		h.held(1, Output{Code: 404, Error: "not_found"}, 13, 14)
	}},
}

func TestCheckHandMade(t *testing.T) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var h hist
			c.build(&h)
			res := Check(h, Options{Totals: map[int64]int{testItem: c.total}, Timeout: time.Minute})
			want := porcupine.Illegal
			if c.legal {
				want = porcupine.Ok
			}
			if res.Verdict() != want {
				t.Fatalf("verdict %s, want %s: %v %v", res.Verdict(), want, res, res.Stuck(3))
			}
			if res.Linearizable == porcupine.Illegal && len(res.Stuck(3)) == 0 {
				t.Fatalf("an illegal history with no buyer stuck: %v", res)
			}
		})
	}
}

// An Unknown from porcupine (its timeout) is never Ok, whatever the
// stock check says.
func TestUnknownIsNeverOk(t *testing.T) {
	for _, r := range []Result{{Linearizable: porcupine.Unknown}, {Linearizable: porcupine.Unknown, Oversold: []string{"x"}}} {
		if r.Verdict() == porcupine.Ok {
			t.Fatalf("%+v reported Ok", r)
		}
	}
}

// An item without a total is said to be unchecked, not passed silently.
func TestStockUncheckedItemIsReported(t *testing.T) {
	var h hist
	h.order(1, "", ok202(rid(1)), 0, 10)
	h.status(1, rid(1), "PENDING", 11, 12)
	res := Check(h, Options{})
	if len(res.Unchecked) != 1 || res.Unchecked[0] != testItem {
		t.Fatalf("unchecked %v, want [%d]", res.Unchecked, testItem)
	}
}

// A call still in flight when the history is read may have taken effect.
func TestInFlightOrderMayHaveTakenEffect(t *testing.T) {
	r := NewRecorder()
	r.Invoke(Input{Kind: Order, User: 1, Item: testItem, Qty: 1})
	r.Invoke(Input{Kind: Order, User: 1, Item: testItem, Qty: 1}).Return(ok409(rid(9)))
	if res := Check(r.Ops(), Options{Totals: map[int64]int{testItem: 1}}); res.Verdict() != porcupine.Ok {
		t.Fatalf("%v", res)
	}
}

// Ambiguous pays retried through an outage do not make the search blow up:
// an illegal history behind hundreds of them is still found Illegal.
func TestManyAmbiguousPaysStillDecided(t *testing.T) {
	var h hist
	h.order(1, "", ok202(rid(1)), 0, 10)
	h.status(1, rid(1), "UNPAID", 11, 12)
	for i := range 300 {
		h.pay(1, rid(1), Output{Code: 503, Error: "unavailable"}, 20+2*i, 21+2*i)
		h.status(1, rid(1), "UNPAID", 20+2*i, 21+2*i)
	}
	h.status(1, rid(1), "PENDING", 1000, 1001)
	res := Check(h, Options{Totals: map[int64]int{testItem: 1}, Timeout: time.Minute})
	if res.Verdict() != porcupine.Illegal {
		t.Fatalf("%v", res)
	}
}

func TestStuckNamesTheImpossibleOperation(t *testing.T) {
	var h hist
	h.order(1, "", ok202(rid(1)), 0, 10)
	h.status(1, rid(1), "UNPAID", 11, 12)
	h.status(1, rid(1), "PENDING", 13, 14)
	h.order(2, "", ok202(rid(2)), 0, 10)
	res := Check(h, Options{Totals: map[int64]int{testItem: 2}})
	st := res.Stuck(3)
	if len(st) != 1 || !strings.Contains(st[0], "buyer 1/7") || !strings.Contains(st[0], "-> 200 "+rid(1)+" PENDING") || !strings.Contains(st[0], "UNPAID") {
		t.Fatalf("%q", st)
	}
	t.Log(st[0])
}
