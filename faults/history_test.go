//go:build faults

package faults

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/flashsale-dev/flashsale/internal/history"
)

// histories holds each pipeline's history: the pipeline struct is shared
// with every fault test, so the recorder lives beside it.
var histories sync.Map // *pipeline -> *pipelineHistory

type pipelineHistory struct {
	rec *history.Recorder
	mu  sync.Mutex
	// checkedOps is the history's length at its last check.
	checkedOps int
	// noAutoCheck: the test checks the history itself (a broken build whose
	// history must be rejected).
	noAutoCheck bool
}

// historyCheckTimeout bounds porcupine's search. Partitions are one buyer
// each (a few to a few dozen operations), checked in milliseconds; a check
// that runs out of this time did not happen, and fails the test (Unknown is
// never a pass).
const historyCheckTimeout = 2 * time.Minute

// history returns the pipeline's recorder, installing it on first use:
// from then on every buyer call made through p.call (the workloads, their
// payers, settle's I4 polls, a test's own calls) is recorded, and when the
// test ends the history is checked (checkHistory) after the workloads
// stopped. The first workload started on a pipeline installs it.
func (p *pipeline) history() *history.Recorder {
	return p.historyState().rec
}

func (p *pipeline) historyState() *pipelineHistory {
	if h, ok := histories.Load(p); ok {
		return h.(*pipelineHistory)
	}
	h := &pipelineHistory{rec: history.NewRecorder()}
	histories.Store(p, h)
	p.http.Transport = &history.Transport{Base: p.http.Transport, Rec: h.rec}
	// Registered before the workloads' own cleanups, so it runs after
	// them: every call has returned by then.
	p.t.Cleanup(func() {
		defer histories.Delete(p)
		if p.t.Skipped() || h.noAutoCheck {
			return
		}
		h.mu.Lock()
		pending := h.rec.Len() > h.checkedOps
		h.mu.Unlock()
		if pending {
			p.checkHistory()
		}
	})
	return h
}

// checkHistory asks every buyer of the history for the request that holds
// the item (GET /api/v1/orders?item_id=, recorded too: a buyer told
// "nothing reserved" who holds a unit shows up here), checks the history
// with porcupine and prints the verdict. An Illegal history fails the test
// unless the test tolerates Redis forgetting acknowledged writes (I3 or
// "history" in p.tolerated: a lost reservation or buyer mark is then a
// history the model rejects, which docs/guarantees.md does not promise against);
// Unknown fails it always. It returns the result.
func (p *pipeline) checkHistory() history.Result {
	t := p.t
	t.Helper()
	res := p.historyResult()
	switch res.Verdict() {
	case porcupine.Ok:
	case porcupine.Illegal:
		why, tolerated := p.tolerated["history"]
		if !tolerated {
			why, tolerated = p.tolerated["I3"]
		}
		path := p.visualize(res)
		if tolerated {
			t.Logf("history Illegal (tolerated: %s):\n  %s\nporcupine's view: %s", why, strings.Join(res.Stuck(3), "\n  "), path)
			break
		}
		t.Errorf("history: not linearizable against the sale model (%s):\n  %s\nporcupine's view of the buyers: %s", res, strings.Join(res.Stuck(3), "\n  "), path)
	default:
		t.Errorf("history: porcupine gave no verdict within %v (%s): the history was not checked", historyCheckTimeout, res)
	}
	return res
}

// historyResult probes the holders, checks the history so far and prints
// the verdict, judging nothing.
func (p *pipeline) historyResult() history.Result {
	p.t.Helper()
	h := p.historyState()
	probed := time.Now()
	buyers := p.probeHolders(h.rec)
	probeTook := time.Since(probed)
	ops := h.rec.Ops()
	res := history.Check(ops, history.Options{Totals: map[int64]int{p.itemID: p.cfg.Units}, Timeout: historyCheckTimeout})
	h.mu.Lock()
	h.checkedOps = len(ops)
	h.mu.Unlock()
	p.t.Logf("history: porcupine %s; holders probed: %d buyers in %v", res, buyers, probeTook.Round(time.Millisecond))
	return res
}

// visualize writes porcupine's HTML view of a rejected history next to the
// test's other leftovers in the system temp dir (kept: it is what a person
// reads after the failure) and returns its path.
func (p *pipeline) visualize(res history.Result) string {
	name := strings.NewReplacer("/", "_", " ", "_").Replace(p.t.Name())
	f, err := os.CreateTemp("", "flashsale-history-"+name+"-*.html")
	if err != nil {
		return "(not written: " + err.Error() + ")"
	}
	path := f.Name()
	f.Close()
	if err := res.Visualize(path); err != nil {
		return "(not written: " + err.Error() + ")"
	}
	abs, _ := filepath.Abs(path)
	return abs
}

// probeHolders asks each buyer of the history, once, which request holds
// the item. Skipped when the ingress is down (a test that failed with it
// stopped): the history is then checked without the probe. It returns
// the number of buyers asked.
func (p *pipeline) probeHolders(rec *history.Recorder) int {
	if !p.ingress.running() {
		return 0
	}
	var users []int64
	seen := map[int64]bool{}
	for _, op := range rec.Ops() {
		if op.Input.Kind == history.Order && !seen[op.Input.User] {
			seen[op.Input.User] = true
			users = append(users, op.Input.User)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	path := "/api/v1/orders?item_id=" + strconv.FormatInt(p.itemID, 10)
	parallel(users, 16, func(u int64) {
		if ctx.Err() == nil {
			p.call(ctx, http.MethodGet, path, p.bearer(u), nil, nil)
		}
	})
	return len(users)
}

// statusWait is a long poll: GET /api/v1/orders/{rid}?wait=…
func (p *pipeline) statusWait(ctx context.Context, user int64, rid string, wait time.Duration) (view, bool) {
	q := fmt.Sprintf("%dms", wait.Milliseconds())
	code, b := p.call(ctx, http.MethodGet, "/api/v1/orders/"+rid+"?wait="+q, p.bearer(user), nil, nil)
	return decodeView(code, b)
}

func decodeView(code int, b []byte) (view, bool) {
	if code != http.StatusOK {
		return view{}, false
	}
	var v view
	if err := json.Unmarshal(b, &v); err != nil {
		return view{}, false
	}
	return v, true
}
