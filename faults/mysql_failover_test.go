//go:build faults && galera

package faults

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// maxWriterLoss bounds, generously, how long after the writer's SIGKILL each
// part of the pipeline may wait for MySQL again. What it takes: Galera's
// survivors cannot commit until they evict the dead node from the view
// (evs.suspect_timeout 3 s, inactive 5 s in galera.sh), HAProxy marks it down
// after 2 failed checks 500 ms apart (a connect refused meanwhile is
// redispatched), and a consumer retries with its backoff.
const maxWriterLoss = 30 * time.Second

// TestGaleraWriterKilled: the MariaDB Galera node that HAProxy writes to is
// SIGKILLed mid-sale, while consumers are writing, and started again 15 s
// later. Through the proxy the pipeline (ingress, two consumers, reaper)
// carries on on a survivor: no 202 is lost (every one is ORDERED or
// REJECTED in MySQL, none VOIDED for want of a writer), none is written
// twice (a transaction whose COMMIT was sent as the node died may have
// committed on the survivors: the consumer's retry finds it decided), I1–I7
// hold, and the killed node rejoins and holds the same rows as the others.
func TestGaleraWriterKilled(t *testing.T) {
	start := time.Now()
	g := newGalera(t)
	cfg := defaultSettings()
	// More units than buyers: the consumers write during the whole burst,
	// so the kill lands in their transactions, not after a sell-out.
	cfg.Units = 3000
	cfg.PaymentWindow = 6 * time.Second
	// A MySQL outage holds the consumers back; the reaper must not void
	// requests whose messages wait in Kafka.
	cfg.OrphanGrace = 30 * time.Second
	p := newPipeline(t, cfg)
	g.waitSynced(p.dsn, 2*time.Minute)
	p.startAll()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr := startProbe(ctx, t, p.dsn, cfg.StoreTimeout)
	pp := p.startPayProbe(ctx, 5_000_000)
	w := p.start(burst(pick(1500, 2500), 40))
	waitAccepted(t, w, 40)
	victim, err := writer(ctx, p.dsn)
	if err != nil {
		t.Fatalf("writer: %v", err)
	}
	if !waitLag(p, 10*time.Second) {
		t.Logf("no consumer lag seen before the kill")
	}
	var before int64
	_ = p.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM orders WHERE item_id = ?", p.itemID).Scan(&before)
	called := time.Now()
	g.run("kill", "--galera", victim)
	killed := time.Now()
	t.Logf("SIGKILL %s, the writer, with %d orders written and consumers writing (stack.sh kill took %v)", victim, before, killed.Sub(called).Round(10*time.Millisecond))

	hold(15 * time.Second)
	o := pr.since(killed)
	newWriter, werr := writer(ctx, p.dsn)
	restarted := time.Now()
	g.run("start", "--galera", victim)
	rejoin := time.Since(restarted)
	g.waitSynced(p.dsn, 2*time.Minute)
	hold(4 * time.Second) // HAProxy's checks see it up (rise 2, each second)
	rejoinedWriter, rerr := writer(ctx, p.dsn)
	failBack := pr.errorsSince(restarted)
	waitAccepted(t, w, w.nAccept.Load()+20)
	// The probes stop before settling: the pay probe's buyers would keep
	// the item from ever being quiet.
	pays := pp.stop()
	cancel()
	ctx = context.Background()
	// What each part of the pipeline saw, from the kill's return (the
	// process gone): until then the node still committed.
	firstOrder := p.firstAfter(ctx, "created_at", killed)
	firstCancel := p.firstAfter(ctx, "cancelled_at", killed)
	payOK, payCodes := pays.since(killed)
	orders503 := codes(w.answersBetween(killed, killed.Add(maxWriterLoss)))
	unknown := 0
	for _, c := range p.consumers {
		unknown += c.grepLog("store: commit: ")
	}
	t.Logf("\n==== galera writer loss (%s) ====\n"+
		"writer after the kill: %s (%v); %s rejoined and synced in %v after its start; writer after the rejoin: %s (%v), proxy writes refused from the restart on (the fail-back shuts the backup's sessions): %s\n"+
		"proxy writes (probe every 100 ms): refused for %v after the kill (ok %v); errors meanwhile: %s\n"+
		"consumers: first order written %v after the kill; commits whose outcome was unknown (COMMIT errors in the consumers' logs): %d\n"+
		"reaper: first cancellation %v after the kill\n"+
		"ingress: first pay answered 200 %v after the kill; pay answers until then: %s\n"+
		"POST /orders answers in the %v after the kill: %s",
		victim, newWriter, werr, victim, rejoin.Round(100*time.Millisecond), rejoinedWriter, rerr, countsString(failBack),
		o.firstOK.Round(10*time.Millisecond), o.ok, countsString(o.errs),
		firstOrder, unknown, firstCancel, payOK, countsString(payCodes),
		maxWriterLoss, orders503)

	// Measured before settling, so a run that fails to settle still reports them.
	rep := p.settle(fmt.Sprintf("galera writer %s SIGKILLed mid-sale, restarted after 15s", victim), start, w)
	t.Logf("202s %d; outcomes %v", rep.accepted, rep.outcomes)

	if newWriter == victim || werr != nil {
		t.Errorf("the proxy still writes to %s after its SIGKILL (or does not answer: %v)", newWriter, werr)
	}
	if rejoinedWriter != g.names[0] {
		t.Errorf("new connections went to %s once %s rejoined, want %s: the proxy writes to node-1 whenever it is up (%v)", rejoinedWriter, victim, g.names[0], rerr)
	}
	if !o.ok || o.firstOK > maxWriterLoss {
		t.Errorf("writes through the proxy refused for %v after the writer's SIGKILL (ok %v), want at most %v", o.firstOK, o.ok, maxWriterLoss)
	}
	for what, d := range map[string]time.Duration{"consumers' first order": firstOrder, "reaper's first cancellation": firstCancel, "ingress' first paid order": payOK} {
		if d < 0 || d > maxWriterLoss {
			t.Errorf("%s after the kill: %v, want within %v (negative: none at all)", what, d, maxWriterLoss)
		}
	}
	p.checkNothingLost(ctx, w, pp)
	p.checkNodesAgree(ctx, g)
}

// firstAfter is how long after at the item's first order had col (created_at,
// cancelled_at) set, by MySQL's clock (this host's); -1 when none did.
func (p *pipeline) firstAfter(ctx context.Context, col string, at time.Time) time.Duration {
	p.t.Helper()
	var first *time.Time
	q := "SELECT MIN(" + col + ") FROM orders WHERE item_id = ? AND " + col + " > ?"
	if err := p.db.QueryRowContext(ctx, q, p.itemID, at.UTC()).Scan(&first); err != nil {
		p.t.Fatalf("%s: %v", q, err)
	}
	if first == nil {
		return -1
	}
	return first.Sub(at).Round(10 * time.Millisecond)
}

// checkNothingLost: every 202 (the burst's and the pay probe's) is decided
// ORDERED or REJECTED in MySQL, none VOIDED (the reaper's answer to a
// request no consumer wrote in time) or missing, and no request or buyer
// holds two orders.
func (p *pipeline) checkNothingLost(ctx context.Context, w *workload, pp *payProbe) {
	t := p.t
	t.Helper()
	_, acc, _, _ := w.snapshot()
	rids := make([]string, 0, len(acc))
	for _, a := range acc {
		rids = append(rids, a.rid)
	}
	rids = append(rids, pp.accepted()...)
	got := map[string]string{}
	for i := 0; i < len(rids); i += 500 {
		chunk := rids[i:min(i+500, len(rids))]
		q := "SELECT request_id, outcome FROM request_outcomes WHERE request_id IN (?" + strings.Repeat(",?", len(chunk)-1) + ")"
		args := make([]any, len(chunk))
		for j, r := range chunk {
			args[j] = r
		}
		rows, err := p.db.QueryContext(ctx, q, args...)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var r, o string
			if err := rows.Scan(&r, &o); err != nil {
				t.Fatal(err)
			}
			got[r] = o
		}
		rows.Close()
	}
	bad := map[string]int{}
	for _, r := range rids {
		if o := got[r]; o != "ORDERED" && o != "REJECTED" {
			bad[fmt.Sprintf("%q", o)]++
		}
	}
	if len(bad) > 0 {
		t.Errorf("of %d requests answered 202, these ended other than ORDERED or REJECTED: %s", len(rids), countsString(bad))
	}
	var dupReq, dupBuyer int64
	if err := p.db.QueryRowContext(ctx, "SELECT COUNT(*) - COUNT(DISTINCT request_id), COUNT(*) - COUNT(DISTINCT user_id) FROM orders WHERE item_id = ?", p.itemID).Scan(&dupReq, &dupBuyer); err != nil {
		t.Fatal(err)
	}
	if dupReq != 0 || dupBuyer != 0 {
		t.Errorf("orders written twice: %d extra by request id, %d by buyer", dupReq, dupBuyer)
	}
	t.Logf("%d requests answered 202, every one ORDERED or REJECTED; no order written twice", len(rids))
}

// checkNodesAgree reads the item's rows on every node itself (causal
// reads: the nodes run with wsrep_sync_wait=1) and fails when the rejoined
// node, or any, differs.
func (p *pipeline) checkNodesAgree(ctx context.Context, g *galera) {
	t := p.t
	t.Helper()
	const q = `SELECT (SELECT stock FROM items WHERE id = ?),
  (SELECT COUNT(*) FROM orders WHERE item_id = ?),
  (SELECT COALESCE(SUM(status = 'PAID'), 0) FROM orders WHERE item_id = ?),
  (SELECT COALESCE(SUM(status = 'CANCELLED'), 0) FROM orders WHERE item_id = ?),
  (SELECT COUNT(*) FROM request_outcomes WHERE item_id = ?),
  (SELECT COUNT(*) FROM stock_restores WHERE item_id = ?)`
	seen := map[string][]string{}
	for _, n := range g.names {
		db := g.nodeDB(p.dsn, n)
		var stock, orders, paid, cancelled, outcomes, restores int64
		id := p.itemID
		if err := db.QueryRowContext(ctx, q, id, id, id, id, id, id).Scan(&stock, &orders, &paid, &cancelled, &outcomes, &restores); err != nil {
			t.Errorf("%s: %v", n, err)
			continue
		}
		k := fmt.Sprintf("stock %d, orders %d (paid %d, cancelled %d), outcomes %d, restores %d", stock, orders, paid, cancelled, outcomes, restores)
		seen[k] = append(seen[k], n)
	}
	if len(seen) != 1 {
		t.Errorf("the Galera nodes disagree on item %d: %v", p.itemID, seen)
		return
	}
	for k, ns := range seen {
		t.Logf("every node (%s) holds: %s", strings.Join(ns, ", "), k)
	}
}

// payProbe is one buyer after another, each ordering, waiting for UNPAID
// and paying (retrying a 5xx every 100 ms): when the ingress pays again
// after a MySQL fault is read from it.
type payProbe struct {
	p      *pipeline
	done   chan struct{}
	stopFn context.CancelFunc

	mu    sync.Mutex
	rids  []string
	tries []payTry
}

type payTry struct {
	at, done time.Time
	code     int
	errKey   string
}

func (p *pipeline) startPayProbe(ctx context.Context, firstUser int64) *payProbe {
	ctx, cancel := context.WithCancel(ctx)
	pp := &payProbe{p: p, done: make(chan struct{}), stopFn: cancel}
	p.t.Cleanup(func() { pp.stop() })
	go func() {
		defer close(pp.done)
		for u := firstUser; ctx.Err() == nil; u++ {
			pp.buy(ctx, u)
		}
	}()
	return pp
}

func (pp *payProbe) stop() *payProbe {
	pp.stopFn()
	<-pp.done
	return pp
}

func (pp *payProbe) buy(ctx context.Context, user int64) {
	p := pp.p
	code, b := p.call(ctx, http.MethodPost, "/api/v1/orders", p.bearer(user), map[string]any{"item_id": p.itemID, "qty": 1}, nil)
	var body struct {
		RequestID string `json:"request_id"`
	}
	if code != http.StatusAccepted || json.Unmarshal(b, &body) != nil {
		sleepCtx(ctx, 200*time.Millisecond)
		return
	}
	pp.mu.Lock()
	pp.rids = append(pp.rids, body.RequestID)
	pp.mu.Unlock()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if v, ok := p.status(ctx, user, body.RequestID); ok && v.Status != "PENDING" {
			if v.Status != "UNPAID" {
				return
			}
			break
		}
		sleepCtx(ctx, 100*time.Millisecond)
	}
	for time.Now().Before(deadline) && ctx.Err() == nil {
		at := time.Now()
		code, b := p.call(ctx, http.MethodPost, "/api/v1/orders/"+body.RequestID+"/pay", p.bearer(user), nil, nil)
		var e struct {
			Error string `json:"error"`
		}
		_ = json.Unmarshal(b, &e)
		if ctx.Err() != nil {
			return
		}
		pp.mu.Lock()
		pp.tries = append(pp.tries, payTry{at: at, done: time.Now(), code: code, errKey: e.Error})
		pp.mu.Unlock()
		if code != 0 && code < 500 {
			return
		}
		sleepCtx(ctx, 100*time.Millisecond)
	}
}

// since is the time from at to the first pay answered 200 that was sent
// after it (-1: none), and the answers before it by code.
func (pp *payProbe) since(at time.Time) (time.Duration, map[string]int) {
	pp.mu.Lock()
	defer pp.mu.Unlock()
	m := map[string]int{}
	for _, tr := range pp.tries {
		if tr.at.Before(at) {
			continue
		}
		if tr.code == http.StatusOK {
			return tr.done.Sub(at).Round(10 * time.Millisecond), m
		}
		m[strings.TrimSpace(fmt.Sprintf("%d %s", tr.code, tr.errKey))]++
	}
	return -1, m
}

func (pp *payProbe) accepted() []string {
	pp.mu.Lock()
	defer pp.mu.Unlock()
	return append([]string(nil), pp.rids...)
}

func sleepCtx(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
