package history

import (
	"sync"
	"time"
)

// Kind is the client operation.
type Kind uint8

// The operations a buyer can send.
const (
	Order  Kind = iota + 1 // POST /api/v1/orders
	Status                 // GET /api/v1/orders/{request_id} (?wait= is a long poll)
	Pay                    // POST /api/v1/orders/{request_id}/pay
	Held                   // GET /api/v1/orders?item_id=N
)

func (k Kind) String() string {
	switch k {
	case Order:
		return "order"
	case Status:
		return "status"
	case Pay:
		return "pay"
	case Held:
		return "held"
	}
	return "?"
}

// Input is what the client sent.
type Input struct {
	Kind Kind
	User int64
	Item int64         // Order and Held; Status and Pay take it from RID
	Qty  int           // Order
	Key  string        // Order: the Idempotency-Key, "" without one
	RID  string        // Status and Pay: the request polled or paid
	Wait time.Duration // Status: the ?wait= asked for
}

// Output is the answer as the client saw it.
type Output struct {
	Code   int    // HTTP status; 0 = no answer (timeout, lost connection)
	Error  string // the contract's error code, or why there was no answer
	RID    string // request_id of the body (202, 409, 503 outcome_unknown, status views)
	Status string // status views (Status, Held)
	Qty    int    // status views
}

// Op is one recorded client operation. Call and Return are durations since
// the recorder started, read from the monotonic clock.
type Op struct {
	Input  Input
	Output Output
	Call   time.Duration
	Return time.Duration
	Done   bool // false while the call is in flight
}

// Recorder collects operations from any number of goroutines.
type Recorder struct {
	start time.Time
	mu    sync.Mutex
	ops   []Op
}

// NewRecorder starts a history; its clock starts now.
func NewRecorder() *Recorder { return &Recorder{start: time.Now()} }

// Call is an operation invoked and not yet returned.
type Call struct {
	r *Recorder
	i int
}

// Invoke records that the client sends in, now.
func (r *Recorder) Invoke(in Input) Call {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ops = append(r.ops, Op{Input: in, Call: time.Since(r.start)})
	return Call{r: r, i: len(r.ops) - 1}
}

// Return records the answer of the call, now. Only the first Return of a
// call counts.
func (c Call) Return(out Output) {
	now := time.Since(c.r.start)
	c.r.mu.Lock()
	defer c.r.mu.Unlock()
	op := &c.r.ops[c.i]
	if op.Done {
		return
	}
	op.Output, op.Return, op.Done = out, now, true
}

// Ops returns a copy of the history so far (calls in flight have Done
// false).
func (r *Recorder) Ops() []Op {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Op(nil), r.ops...)
}

// Len is the number of operations invoked so far.
func (r *Recorder) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.ops)
}
