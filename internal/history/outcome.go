package history

import "net/http"

// st is a request's status in the model. none is a request id the server
// does not know: an outcome_unknown request that reserved nothing.
type st uint8

const (
	none st = iota
	pending
	unpaid
	paid
	cancelled
	rejected
	badStatus // an answer with a status outside the contract
)

var stNames = [...]string{"none", "PENDING", "UNPAID", "PAID", "CANCELLED", "REJECTED", "?"}

func (s st) String() string { return stNames[s] }

func parseStatus(s string) st {
	switch s {
	case "PENDING":
		return pending
	case "UNPAID":
		return unpaid
	case "PAID":
		return paid
	case "CANCELLED":
		return cancelled
	case "REJECTED":
		return rejected
	}
	return badStatus
}

// holds: the buyer mark names this request (a cancelled order keeps it).
func (s st) holds() bool { return s == pending || s == unpaid || s == paid || s == cancelled }

// reachable: the server may move a request from one status to the other
// without a client operation. PAID needs a pay.
func reachable(from, to st) bool {
	if from == to {
		return true
	}
	switch from {
	case none:
		return to == rejected
	case pending:
		return to == unpaid || to == cancelled || to == rejected
	case unpaid:
		return to == cancelled
	}
	return false
}

// verdict is an answer classified for the model.
type verdict uint8

const (
	noInfo     verdict = iota // says nothing about the state (a refused or failed read, a no-op order)
	accepted                  // order 202 rid
	holder                    // order 409 already_purchased rid
	unknownRID                // order 503 outcome_unknown rid: reserved or not
	unknownAny                // order with no answer: may have created a request of unknown id
	view                      // status/held 200 rid status
	notFound                  // status/pay 404, held 404
	payOK                     // pay 200
	notPayable                // pay 409
	payUnknown                // pay with no answer or 5xx: paid or not
	// An order answered 503 unavailable ("nothing is reserved") is two
	// steps of the model: the ingress may have reserved during the call
	// and released before answering (a publish that failed, its ABORTED
	// won), and a concurrent call of the buyer may have seen that request
	// (a 409 naming it); by the answer it must be REJECTED. transientBegin
	// spans the call, transientEnd is the instant after its answer.
	transientBegin
	transientEnd
)

// outcome is the model's output of one operation.
type outcome struct {
	v   verdict
	rid string
	s   st
	tag int // transientBegin/End: which call
}

// ambiguous outcomes may take effect after the client saw the answer (a
// timeout, a MySQL commit after its context ended): their return is moved
// to the end of the history.
func (o outcome) ambiguous() bool { return o.v == unknownAny || o.v == payUnknown }

// classify maps an answer of the contract (ingress/openapi.yaml) to the
// model; done false is a call still in flight when the history was read.
func classify(in Input, out Output, done bool) outcome {
	switch in.Kind {
	case Order:
		if !done {
			return outcome{v: unknownAny}
		}
		switch {
		case out.Code == http.StatusAccepted && out.RID != "":
			return outcome{v: accepted, rid: out.RID}
		case out.Code == http.StatusConflict && out.Error == "already_purchased" && out.RID != "":
			return outcome{v: holder, rid: out.RID}
		case out.Code == http.StatusServiceUnavailable && out.Error == "outcome_unknown" && out.RID != "":
			return outcome{v: unknownRID, rid: out.RID}
		case out.Code == http.StatusServiceUnavailable && out.Error == "unavailable":
			return outcome{v: transientBegin} // nothing reserved by the answer
		case out.Code == http.StatusServiceUnavailable && out.Error == "stock_moving":
			return outcome{v: noInfo} // nothing reserved, ever
		case out.Code >= 400 && out.Code < 500 && out.Error != "":
			return outcome{v: noInfo} // 404 unknown_item, 409 sale_not_active, 410, 429, 400, 401, 415
		}
		return outcome{v: unknownAny} // no answer, 5xx without a contract code, a body we cannot read
	case Status, Held:
		if !done {
			return outcome{v: noInfo}
		}
		switch out.Code {
		case http.StatusOK:
			return outcome{v: view, rid: out.RID, s: parseStatus(out.Status)}
		case http.StatusNotFound:
			if out.Error == "not_found" {
				return outcome{v: notFound}
			}
		}
		return outcome{v: noInfo}
	case Pay:
		if !done {
			return outcome{v: payUnknown}
		}
		switch {
		case out.Code == http.StatusOK:
			return outcome{v: payOK}
		case out.Code == http.StatusConflict && out.Error == "not_payable":
			return outcome{v: notPayable}
		case out.Code == http.StatusNotFound && out.Error == "not_found":
			return outcome{v: notFound}
		case out.Code >= 400 && out.Code < 500 && out.Error != "":
			return outcome{v: noInfo} // 429, 401: the handler did not run
		}
		return outcome{v: payUnknown}
	}
	return outcome{v: noInfo}
}
