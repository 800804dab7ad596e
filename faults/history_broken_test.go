//go:build faults

package faults

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/flashsale-dev/flashsale/pkg/reqid"
)

// TestHistoryCatchesBrokenBuild: the history check rejects a pipeline that
// breaks the buyer's contract, and passes the same run of the real one.
// The broken builds are the real binaries behind a misbehaving HTTP proxy
// run by the test, so no broken code ships in (or is built into) the
// binaries:
//
//   - ack before Kafka: one order in five is answered 202 with a fresh
//     request id and never forwarded (the "202 before the Kafka ack" bug
//     in its worst form: the request never reaches Kafka);
//   - stale status: every status answer is remembered, and one poll in
//     three of a request is answered with its first answer (a status cache
//     that can go backwards: UNPAID after PAID, PENDING after UNPAID).
func TestHistoryCatchesBrokenBuild(t *testing.T) {
	run := func(t *testing.T, fault func(p *pipeline) http.Handler) {
		p := newPipeline(t, defaultSettings())
		p.startAll()
		honest := fault == nil
		if !honest {
			srv := httptest.NewServer(fault(p))
			t.Cleanup(srv.Close)
			p.base = srv.URL
			p.historyState().noAutoCheck = true
		}
		w := p.start(spec{FirstUser: 10_000, Buyers: pick(200, 400), Rate: 100, Concurrency: 16, DupFrac: 0.1, ReplayFrac: 0.1, PayFrac: 0.5})
		if honest {
			p.settle("none (the control run of the history check)", time.Now(), w)
			if res := p.checkHistory(); res.Verdict() != porcupine.Ok {
				t.Fatalf("the real pipeline's history was not accepted: %s", res)
			}
			return
		}
		// The burst, then its payers for a payment window (a payer of a
		// fabricated request would poll its 404 for half a minute).
		<-w.done
		paid := make(chan struct{})
		go func() { w.payers.Wait(); close(paid) }()
		select {
		case <-paid:
		case <-time.After(p.cfg.PaymentWindow + 2*time.Second):
			w.cancel()
			<-paid
		}
		_, acc, _, _ := w.snapshot()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		// Poll every 202 until it is terminal, as settle's I4 phase does,
		// for about a payment window: the real requests are decided and
		// paid or cancelled by then, a fabricated one never is.
		left := p.pollTerminal(ctx, acc, p.cfg.PaymentWindow+3*time.Second)
		t.Logf("%d of %d accepted requests never terminal through the proxy", len(left), len(acc))
		res := p.historyResult()
		if res.Linearizable != porcupine.Illegal {
			t.Fatalf("porcupine did not reject the broken build's history: %s", res)
		}
		t.Logf("rejected, as it must be; where porcupine got stuck:\n  %s", strings.Join(res.Stuck(2), "\n  "))
	}
	t.Run("real pipeline", func(t *testing.T) { run(t, nil) })
	t.Run("202 before the Kafka ack", func(t *testing.T) { run(t, ackBeforeKafka) })
	t.Run("status cache going backwards", func(t *testing.T) { run(t, staleStatus) })
}

// forward is a reverse proxy to the pipeline's ingress.
func forward(p *pipeline) *httputil.ReverseProxy {
	u, err := url.Parse(p.base)
	if err != nil {
		p.t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.ErrorLog = log.New(io.Discard, "", 0) // a client gone (a payer stopped) is no news
	return rp
}

// ackBeforeKafka answers one order in five 202 without forwarding it.
func ackBeforeKafka(p *pipeline) http.Handler {
	fw := forward(p)
	var n atomic.Int64
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.URL.Path == "/api/v1/orders" && n.Add(1)%5 == 0 {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusAccepted)
			_ = json.NewEncoder(w).Encode(map[string]string{"request_id": reqid.New(p.itemID, time.Now()), "status": "PENDING"})
			return
		}
		fw.ServeHTTP(w, r)
	})
}

// staleStatus answers one status poll in three of a request with the first
// answer it saw for that request.
func staleStatus(p *pipeline) http.Handler {
	fw := forward(p)
	var mu sync.Mutex
	first := map[string][]byte{}
	polls := map[string]int{}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rid, isStatus := strings.CutPrefix(r.URL.Path, "/api/v1/orders/")
		if r.Method != http.MethodGet || !isStatus || strings.Contains(rid, "/") {
			fw.ServeHTTP(w, r)
			return
		}
		mu.Lock()
		polls[rid]++
		cached, stale := first[rid], polls[rid]%3 == 0
		mu.Unlock()
		if stale && cached != nil {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write(cached)
			return
		}
		rec := httptest.NewRecorder()
		fw.ServeHTTP(rec, r)
		body := rec.Body.Bytes()
		if rec.Code == http.StatusOK {
			mu.Lock()
			if first[rid] == nil {
				first[rid] = bytes.Clone(body)
			}
			mu.Unlock()
		}
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		_, _ = io.Copy(w, bytes.NewReader(body))
	})
}
