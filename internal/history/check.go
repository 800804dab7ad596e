package history

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/flashsale-dev/flashsale/pkg/reqid"
)

// Options of a check.
type Options struct {
	// Totals are the items' total units, for the stock check; an item
	// missing here is not stock-checked (Result.Unchecked says so).
	Totals map[int64]int
	// Timeout bounds porcupine's search (0: no bound). Past it the verdict
	// is Unknown, never Ok.
	Timeout time.Duration
}

// Result is a check's verdict and what it rests on.
type Result struct {
	// Linearizable is porcupine's verdict on the buyer partitions.
	Linearizable porcupine.CheckResult
	// Oversold describes each instant at which more units were certainly
	// held than an item has.
	Oversold []string
	// Unchecked names the items whose stock was not checked (no total).
	Unchecked []int64
	Ops       int
	Buyers    int
	Took      time.Duration

	model porcupine.Model
	info  porcupine.LinearizationInfo
	parts [][]porcupine.Operation // as porcupine partitioned them
}

// Verdict combines both checks: Illegal if either found a violation,
// Unknown if porcupine timed out and the stock check found nothing, Ok
// only if both passed.
func (r Result) Verdict() porcupine.CheckResult {
	switch {
	case r.Linearizable == porcupine.Illegal || len(r.Oversold) > 0:
		return porcupine.Illegal
	case r.Linearizable == porcupine.Ok:
		return porcupine.Ok
	}
	return porcupine.Unknown
}

func (r Result) String() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "%s (per-buyer linearizability %s over %d ops of %d buyers; stock ", r.Verdict(), r.Linearizable, r.Ops, r.Buyers)
	if len(r.Oversold) == 0 {
		sb.WriteString("never oversold")
	} else {
		fmt.Fprintf(&sb, "OVERSOLD: %s", strings.Join(r.Oversold, "; "))
	}
	if len(r.Unchecked) > 0 {
		fmt.Fprintf(&sb, ", not checked for items %v", r.Unchecked)
	}
	fmt.Fprintf(&sb, "; checked in %v)", r.Took.Round(time.Millisecond))
	return sb.String()
}

// Stuck describes, for up to max buyers whose operations porcupine could
// not linearize, where it got stuck: the longest linearizable prefix, the
// model's state after it and the operation that had to come next (of those
// left, the one that returned first) and could not.
func (r Result) Stuck(max int) []string {
	var out []string
	partials := r.info.PartialLinearizations()
	for i, part := range r.parts {
		if i >= len(partials) || len(out) >= max {
			break
		}
		longest := []int{}
		for _, l := range partials[i] {
			if len(l) > len(longest) {
				longest = l
			}
		}
		if len(longest) == len(part) {
			continue
		}
		in := map[int]bool{}
		state := r.model.Init()
		for _, id := range longest {
			in[id] = true
			_, state = r.model.Step(state, part[id].Input, part[id].Output)
		}
		next := -1
		for id, op := range part {
			if !in[id] && (next < 0 || op.Return < part[next].Return) {
				next = id
			}
		}
		out = append(out, fmt.Sprintf("buyer %s: %d of %d operations linearized, state %s; then impossible: %s at [%v, %v]",
			part[0].Input.(pin).part, len(longest), len(part), r.model.DescribeState(state),
			r.model.DescribeOperation(part[next].Input, part[next].Output),
			time.Duration(part[next].Call), time.Duration(part[next].Return)))
	}
	return out
}

// Visualize writes porcupine's HTML view of the buyer partitions (the
// longest linearizable prefix of each, and where it got stuck) to path.
func (r Result) Visualize(path string) error {
	return porcupine.VisualizePath(r.model, r.info, path)
}

// pin is a porcupine input: the operation and whom it is about.
type pin struct {
	Input
	part string
}

// partKey is the buyer partition of an operation: user and item.
func partKey(in Input) string {
	item := in.Item
	if in.Kind == Status || in.Kind == Pay {
		item, _ = reqid.Item(in.RID)
	}
	return fmt.Sprintf("%d/%d", in.User, item)
}

// Model is the buyer model for porcupine, partitioned by (user, item).
func Model() porcupine.Model {
	nm := porcupine.NondeterministicModel{
		Partition: partition,
		Init:      func() []interface{} { return []interface{}{""} },
		Step: func(state, input, output interface{}) []interface{} {
			return step(decode(state.(string)), input.(pin).Input, output.(outcome))
		},
		DescribeOperation: describeOp,
		DescribeState: func(state interface{}) string {
			if state.(string) == "" {
				return "no requests"
			}
			var parts []string
			for _, r := range decode(state.(string)) {
				id := r.rid
				if id == "" {
					id = "(id unknown)"
				}
				parts = append(parts, fmt.Sprintf("%s key=%q %s", id, r.key, r.s))
			}
			return strings.Join(parts, ", ")
		},
	}
	return nm.ToModel()
}

func partition(ops []porcupine.Operation) [][]porcupine.Operation {
	by := map[string][]porcupine.Operation{}
	var keys []string
	for _, op := range ops {
		k := op.Input.(pin).part
		if _, ok := by[k]; !ok {
			keys = append(keys, k)
		}
		by[k] = append(by[k], op)
	}
	sort.Strings(keys)
	out := make([][]porcupine.Operation, 0, len(keys))
	for _, k := range keys {
		out = append(out, by[k])
	}
	return out
}

func describeOp(input, output interface{}) string {
	in, o := input.(pin).Input, output.(outcome)
	var call string
	switch in.Kind {
	case Order:
		call = fmt.Sprintf("order(user %d, qty %d, key %q)", in.User, in.Qty, in.Key)
	case Status:
		call = fmt.Sprintf("status(%s", in.RID)
		if in.Wait > 0 {
			call += fmt.Sprintf(", wait %v", in.Wait)
		}
		call += ")"
	case Pay:
		call = fmt.Sprintf("pay(%s)", in.RID)
	case Held:
		call = fmt.Sprintf("held(user %d)", in.User)
	}
	names := map[verdict]string{noInfo: "no information", accepted: "202", holder: "409 already_purchased",
		unknownRID: "503 outcome_unknown", unknownAny: "no answer", view: "200", notFound: "404",
		payOK: "200 PAID", notPayable: "409 not_payable", payUnknown: "no answer",
		transientBegin: "503 unavailable", transientEnd: "(503 unavailable answered: nothing reserved now)"}
	res := names[o.v]
	if o.rid != "" {
		res += " " + o.rid
	}
	if o.v == view {
		res += " " + o.s.String()
	}
	return call + " -> " + res
}

// Check checks a history (see the package doc for exactly what).
func Check(ops []Op, opt Options) Result {
	began := time.Now()
	res := Result{Ops: len(ops), model: Model()}
	pops := toPorcupine(ops)
	res.parts = partition(pops)
	res.Buyers = len(res.parts)
	res.Linearizable, res.info = porcupine.CheckOperationsVerbose(res.model, pops, opt.Timeout)
	res.Oversold, res.Unchecked = oversold(ops, opt.Totals)
	res.Took = time.Since(began)
	return res
}

// toPorcupine converts the history. Ambiguous operations and calls still
// in flight return at the end of the history: their effect may come at
// any time after their call. A status or pay of a request id that no
// answer of the buyer named says nothing (another buyer's id, say).
func toPorcupine(ops []Op) []porcupine.Operation {
	var end time.Duration
	learned := map[string]map[string]bool{}
	for _, op := range ops {
		end = max(end, op.Call, op.Return)
		o := classify(op.Input, op.Output, op.Done)
		if o.rid != "" {
			k := partKey(op.Input)
			if learned[k] == nil {
				learned[k] = map[string]bool{}
			}
			learned[k][o.rid] = true
		}
	}
	out := make([]porcupine.Operation, 0, len(ops))
	lanes := map[string][]time.Duration{} // per partition, when each visualization lane is free
	byCall := append([]Op(nil), ops...)
	sort.SliceStable(byCall, func(i, j int) bool { return byCall[i].Call < byCall[j].Call })
	unsurePay := map[string]bool{} // partition and request of an ambiguous pay already in
	for _, op := range byCall {
		k := partKey(op.Input)
		o := classify(op.Input, op.Output, op.Done)
		if (op.Input.Kind == Status || op.Input.Kind == Pay) && !learned[k][op.Input.RID] {
			o = outcome{v: noInfo}
		}
		if o.v == payUnknown {
			// Ambiguous pays of one request all return at the end and
			// may each make it PAID at any time after their call: the
			// first says all the others do (a pay retried through a
			// MySQL outage would otherwise make hundreds of operations
			// that porcupine must order).
			if unsurePay[k+" "+op.Input.RID] {
				continue
			}
			unsurePay[k+" "+op.Input.RID] = true
		}
		ret := op.Return
		if !op.Done || o.ambiguous() {
			ret = end + 1
		}
		if o.v == transientBegin {
			o.tag = len(out) + 1
			out = append(out, porcupine.Operation{Input: pin{Input: op.Input, part: k}, Output: outcome{v: transientEnd, tag: o.tag},
				Call: int64(ret + 1), Return: int64(ret + 1)})
		}
		out = append(out, porcupine.Operation{Input: pin{Input: op.Input, part: k}, Output: o,
			Call: int64(op.Call), Return: int64(ret)})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Call < out[j].Call })
	for i := range out {
		k := out[i].Input.(pin).part
		l := lanes[k]
		lane := -1
		for j, free := range l {
			if free < time.Duration(out[i].Call) {
				lane = j
				break
			}
		}
		if lane < 0 {
			lane = len(l)
			l = append(l, 0)
		}
		l[lane] = time.Duration(out[i].Return)
		lanes[k] = l
		out[i].ClientId = lane
	}
	return out
}
