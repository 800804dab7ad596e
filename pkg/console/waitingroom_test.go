package console_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/console"
)

// readRoom returns the waiting-room card as the page shows it: every
// figure (data-k key to text), and _shown ("true" when the card is
// visible), _stale (its stale line, "" when hidden) and _warn (the gate
// warning's class). Null while the page has no such card.
const readRoom = `(() => {
	const c = document.getElementById("waiting-room");
	if (!c) return null;
	const stale = document.getElementById("queue-stale");
	const w = c.querySelector('[data-k="queue.gate_warning"]');
	const o = { _shown: String(!c.hidden && !document.getElementById("live").hidden), _stale: stale && !stale.hidden ? stale.textContent : "",
		_warn: w ? w.className : "" };
	for (const el of c.querySelectorAll("[data-k]")) o[el.dataset.k] = el.textContent;
	return o;
})()`

// roomWhen polls the card until cond (a JS expression on o, the card as
// readRoom reads it) holds, and returns it.
func roomWhen(t *testing.T, ctx context.Context, what, cond string, timeout time.Duration) map[string]string {
	t.Helper()
	return poll[map[string]string](t, ctx, what, `(() => { const o = `+readRoom+`; return o && (`+cond+`) ? o : null; })()`, timeout)
}

// roomHidden fails t unless the page shows no waiting-room card.
func roomHidden(t *testing.T, ctx context.Context, what string) {
	t.Helper()
	if eval[bool](t, ctx, `(() => { const c = document.getElementById("waiting-room"); return c !== null && !c.hidden; })()`) {
		t.Errorf("%s: the waiting-room card is shown", what)
	}
}

// adminQueue is the parts of GET .../queue the page shows.
type adminQueue struct {
	Rate            int64            `json:"rate"`
	Tickets         int64            `json:"tickets"`
	ServingPosition int64            `json:"serving_position"`
	Waiting         int64            `json:"waiting"`
	GateHolder      *string          `json:"gate_holder"`
	Waitlist        map[string]int64 `json:"waitlist"`
}

// roomFigures maps an answer of GET .../queue to the card's keys.
func (q adminQueue) figures() map[string]int64 {
	w := q.Waitlist
	return map[string]int64{"queue.tickets": q.Tickets, "queue.serving_position": q.ServingPosition, "queue.waiting": q.Waiting,
		"queue.rate": q.Rate, "queue.waitlist.in": w["in"], "queue.waitlist.held": w["pool"] + w["offers"],
		"queue.waitlist.offers": w["offers"], "queue.waitlist.offered": w["offered"], "queue.waitlist.claimed": w["claimed"],
		"queue.waitlist.lapsed": w["lapsed"], "queue.waitlist.returned": w["returned"]}
}

// roomAgrees checks every figure of q on the card.
func roomAgrees(t *testing.T, what string, card map[string]string, q adminQueue) {
	t.Helper()
	for k, want := range q.figures() {
		if v, ok := number(card[k]); !ok || v != want {
			t.Errorf("%s: %s is %q on the page, the API's %d", what, k, card[k], want)
		}
	}
}

// putQueuedItem creates an item with a waiting room, open an hour ago
// (its queue two), admitting rate tickets a second.
func (p *pipeline) putQueuedItem(t *testing.T, admin string, id int64, name string, stockQty int64, rate int) {
	t.Helper()
	now := time.Now().UTC()
	body := fmt.Sprintf(`{"name":%q,"price_cents":1299,"stock":%d,"per_user_limit":1,"starts_at":%q,"ends_at":%q,"queue":true,"queue_opens_at":%q,"queue_rate":%d}`,
		name, stockQty, now.Add(-time.Hour).Format(time.RFC3339), now.Add(time.Hour).Format(time.RFC3339), now.Add(-2*time.Hour).Format(time.RFC3339), rate)
	p.mustCall(t, http.MethodPut, fmt.Sprintf("/api/v1/admin/items/%d", id), admin, body, http.StatusOK)
}

func (p *pipeline) readQueue(t *testing.T, admin string, id int64) adminQueue {
	t.Helper()
	b := p.mustCall(t, http.MethodGet, fmt.Sprintf("/api/v1/admin/items/%d/queue", id), admin, "", http.StatusOK)
	var q adminQueue
	if err := json.Unmarshal(b, &q); err != nil {
		t.Fatalf("queue: %v: %s", err, b)
	}
	return q
}

// TestConsoleShowsTheWaitingRoom drives the console against a real ingress
// on the stack: a sale without a queue has no waiting-room card (and the
// page never asks for its queue); a sale with one shows a card with the
// figures of GET .../queue (three tickets taken, nobody admitted: no gate
// runs in this test, so unless another test's reaper holds the shared
// gate lease the holder is none and the card warns that nobody is being
// admitted); watching the first sale again hides the card.
func TestConsoleShowsTheWaitingRoom(t *testing.T) {
	p := startPipeline(t)
	admin := token(t, 1, true)
	plain, queued := testenv.ItemID(), testenv.ItemID()
	plainName, queuedName := "no queue "+testenv.Suffix(), "queued tickets "+testenv.Suffix()
	p.putItem(t, admin, plain, plainName, 100, 1, -time.Hour)
	p.putQueuedItem(t, admin, queued, queuedName, 100, 7)
	for u := range int64(3) {
		p.mustCall(t, http.MethodPost, fmt.Sprintf("/api/v1/items/%d/queue", queued), token(t, 900+u, false), "", http.StatusCreated)
	}

	b := newBrowser(t, 2*time.Minute)
	do(t, b.ctx, "open the console", chromedp.Navigate(p.url+console.Path),
		chromedp.SetValue(chromedp.ID("token"), admin), chromedp.Click(chromedp.ID("token-use")))
	watch := func(id int64) {
		t.Helper()
		row := fmt.Sprintf(`#sales-rows tr[data-id="%d"]`, id)
		poll[bool](t, b.ctx, "the sale's row", fmt.Sprintf(`document.querySelector(%q) !== null`, row), 10*time.Second)
		do(t, b.ctx, "watch the sale", chromedp.Click(chromedp.CSS(row+" button.watch")))
	}

	// Without a queue: no card, and no read of a queue there is not.
	watch(plain)
	page := poll[map[string]string](t, b.ctx, "the live view", `(() => { const o = `+readPage(0)+`; return o && o["item.name"] === `+strconv.Quote(plainName)+` ? o : null; })()`, 10*time.Second)
	// Two more refreshes.
	lives := b.requests(fmt.Sprintf("/items/%d/live", plain))
	testenv.Eventually(t, 15*time.Second, 50*time.Millisecond, func() bool {
		return b.requests(fmt.Sprintf("/items/%d/live", plain)) >= lives+2
	}, "the live view of a sale without a queue not refreshed twice")
	roomHidden(t, b.ctx, "a sale without a queue")
	if n := b.requests(fmt.Sprintf("/items/%d/queue", plain)); n != 0 {
		t.Errorf("the page read the queue of a sale without one %d times", n)
	}

	// With one: the card, with the endpoint's figures.
	watch(queued)
	card := roomWhen(t, b.ctx, "the waiting-room card", `o._shown === "true" && o["queue.tickets"] === "3"`, 10*time.Second)
	before := p.readQueue(t, admin, queued)
	card = roomWhen(t, b.ctx, "the card again", `o._shown === "true"`, 5*time.Second)
	after := p.readQueue(t, admin, queued)
	roomAgrees(t, "queued sale", card, after)
	if before.Tickets != 3 || before.Waiting != 3 || before.ServingPosition != 0 || before.Rate != 7 {
		t.Errorf("the API's queue: %+v, want 3 tickets waiting at 7 a second, nobody admitted", before)
	}
	if card["queue.admit_in"] != "1 s" || card["_stale"] != "" {
		t.Errorf("the card reads %v: want 3 waiting admitted in 1 s at 7 a second, and no stale line", card)
	}
	switch {
	case (before.GateHolder == nil) != (after.GateHolder == nil):
		t.Logf("the shared gate lease changed hands during the test (%v, %v): its holder is not compared", before.GateHolder, after.GateHolder)
	case after.GateHolder == nil:
		if card["queue.gate_holder"] != "none" || !strings.Contains(card["queue.gate_warning"], "nobody is being admitted") || card["_warn"] != "error" {
			t.Errorf("no gate holder while 3 tickets wait after the start: the card reads holder %q, warning %q (class %q)",
				card["queue.gate_holder"], card["queue.gate_warning"], card["_warn"])
		}
	default:
		t.Logf("another test's reaper holds the shared gate lease (%s): the no-holder warning is checked by TestConsoleWaitingRoomOfAFakeAPI", *after.GateHolder)
		if card["queue.gate_holder"] != *after.GateHolder || card["queue.gate_warning"] != "" {
			t.Errorf("gate held by %s: the card reads holder %q, warning %q", *after.GateHolder, card["queue.gate_holder"], card["queue.gate_warning"])
		}
	}
	live := poll[map[string]string](t, b.ctx, "the live view", readPage(0), 5*time.Second)
	if live["item.name"] != queuedName || live["audit.verdict"] != "ok" {
		t.Errorf("the live view of the queued sale reads %v", live)
	}
	t.Logf("without a queue: no card (%s); with one: tickets %s, serving %s, waiting %s (%s), rate %s, holder %q, warning %q",
		page["item.name"], card["queue.tickets"], card["queue.serving_position"], card["queue.waiting"], card["queue.admit_in"],
		card["queue.rate"], card["queue.gate_holder"], card["queue.gate_warning"])

	// Back to the sale without a queue: the card goes.
	watch(plain)
	poll[map[string]string](t, b.ctx, "the live view", `(() => { const o = `+readPage(0)+`; return o && o["item.name"] === `+strconv.Quote(plainName)+` ? o : null; })()`, 10*time.Second)
	roomHidden(t, b.ctx, "the sale without a queue, watched again")
	b.check(t, p.url)
}

// fakeAPI is the admin API's reads of two sales, one with a queue, whose
// queue answer a test sets: the figures and the failures a real stack
// cannot be made to give on demand.
type fakeAPI struct {
	plain, queued int64

	mu      sync.Mutex
	queue   string        // the queue's answer; "" answers 503
	hang    chan struct{} // when set, a queue read waits until it is closed
	reads   map[string]int
	started time.Time // the sale's start

	// hanging is how many queue reads wait on hang now, mostHanging the
	// most that ever did at once.
	hanging, mostHanging int
}

func (f *fakeAPI) set(queue string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.queue = queue
}

func (f *fakeAPI) count(what string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.reads[what]
}

func (f *fakeAPI) item(id int64) string {
	return fmt.Sprintf(`{"id":%d,"name":"fake %d","price_cents":1,"total_stock":100,"stock":90,"per_user_limit":1,"starts_at":%q,"ends_at":%q,"buckets":1,"state":"open","queue":%t`,
		id, id, f.started.Format(time.RFC3339), f.started.Add(2*time.Hour).Format(time.RFC3339), id == f.queued)
}

func (f *fakeAPI) handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET "+console.Path, console.Handler())
	mux.HandleFunc("GET /api/v1/admin/items", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"items":[%s},%s}]}`, f.item(f.plain), f.item(f.queued))
	})
	mux.HandleFunc("GET /api/v1/admin/items/{id}/{part}", func(w http.ResponseWriter, r *http.Request) {
		id, _ := strconv.ParseInt(r.PathValue("id"), 10, 64)
		part := r.PathValue("part")
		f.mu.Lock()
		f.reads[fmt.Sprintf("%s %d", part, id)]++
		queue, hang := f.queue, f.hang
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch {
		case id != f.plain && id != f.queued:
			http.Error(w, `{"error":"not_found","message":"no such item"}`, http.StatusNotFound)
		case part == "live":
			fmt.Fprintf(w, `{"at":%q,"item":%s,"redis_warmed":true,"redis_stock":90},"audit":null,"answers":{"accepted":10},
				"accepted_latency":null,"consumer_lag":0,"dlq_messages":0,"unavailable":[]}`, time.Now().UTC().Format(time.RFC3339Nano), f.item(id))
		case part != "queue":
			http.Error(w, `{"error":"not_found","message":"no route"}`, http.StatusNotFound)
		case id == f.plain:
			w.WriteHeader(http.StatusConflict)
			fmt.Fprint(w, `{"error":"queue_off","message":"this item has no waiting room: order it directly"}`)
		default:
			if hang != nil {
				f.mu.Lock()
				f.hanging++
				f.mostHanging = max(f.mostHanging, f.hanging)
				f.mu.Unlock()
				select {
				case <-hang:
				case <-r.Context().Done():
				}
				f.mu.Lock()
				f.hanging--
				f.mu.Unlock()
				if r.Context().Err() != nil {
					return
				}
			}
			if queue == "" {
				w.WriteHeader(http.StatusServiceUnavailable)
				fmt.Fprint(w, `{"error":"unavailable","message":"redis unavailable"}`)
				return
			}
			fmt.Fprint(w, queue)
		}
	})
	return mux
}

// queueAnswer is an AdminQueue answer for the fake's queued sale.
func (f *fakeAPI) queueAnswer(startsAt time.Time, tickets, serving, rate int64, holder string, wl string) string {
	h := "null"
	if holder != "" {
		h = strconv.Quote(holder)
	}
	return fmt.Sprintf(`{"item_id":%d,"opens_at":%q,"starts_at":%q,"commitment":"%s","rate":%d,"tickets":%d,"serving_position":%d,"waiting":%d,"gate_holder":%s,"waitlist":%s}`,
		f.queued, startsAt.Add(-time.Hour).Format(time.RFC3339), startsAt.Format(time.RFC3339), strings.Repeat("ab", 32), rate, tickets, serving,
		max(tickets-serving, 0), h, wl)
}

// TestConsoleWaitingRoomOfAFakeAPI drives the card with answers a real
// stack does not give on demand, from a fake admin API: figures all
// different, so one shown in another's place is seen; no gate holder while
// 10,000 tickets wait after the start (the warning that nobody is being
// admitted); the queue read failing (the card says its figures are stale
// and keeps them, the live view goes on as before) and hanging (the live
// view is not held up by it, and reads of the queue do not pile up); a
// holder again; and a sale not yet started with no holder (a milder
// warning, the time to admit counted from the start). The sale without a
// queue shows no card.
func TestConsoleWaitingRoomOfAFakeAPI(t *testing.T) {
	f := &fakeAPI{plain: 11, queued: 12, reads: map[string]int{}, started: time.Now().UTC().Add(-time.Hour)}
	// in = pool + offers + claimed + returned: 17 = 3 + 2 + 8 + 4.
	const wl = `{"in":17,"pool":3,"offers":2,"offered":14,"claimed":8,"lapsed":6,"returned":4,"cursor":2400}`
	f.set(f.queueAnswer(f.started, 12345, 2345, 40, "", wl))
	srv := httptest.NewServer(f.handler())
	defer srv.Close()

	b := newBrowser(t, 2*time.Minute)
	do(t, b.ctx, "open the console", chromedp.Navigate(srv.URL+console.Path),
		chromedp.SetValue(chromedp.ID("token"), "fake-admin-token"), chromedp.Click(chromedp.ID("token-use")))
	watch := func(id int64) {
		t.Helper()
		row := fmt.Sprintf(`#sales-rows tr[data-id="%d"]`, id)
		poll[bool](t, b.ctx, "the sale's row", fmt.Sprintf(`document.querySelector(%q) !== null`, row), 10*time.Second)
		do(t, b.ctx, "watch the sale", chromedp.Click(chromedp.CSS(row+" button.watch")))
	}

	watch(f.plain)
	poll[map[string]string](t, b.ctx, "the live view", `(() => { const o = `+readPage(0)+`; return o && o["item.name"] === "fake 11" ? o : null; })()`, 10*time.Second)
	// Two more refreshes.
	lives := f.count("live 11")
	testenv.Eventually(t, 15*time.Second, 50*time.Millisecond, func() bool { return f.count("live 11") >= lives+2 },
		"the live view of a sale without a queue not refreshed twice")
	roomHidden(t, b.ctx, "a sale without a queue")
	if n := f.count("queue 11"); n != 0 {
		t.Errorf("the page read the queue of a sale without one %d times", n)
	}

	// No holder while tickets wait after the start.
	watch(f.queued)
	card := roomWhen(t, b.ctx, "the card", `o._shown === "true" && o["queue.tickets"] !== "" && o["queue.tickets"] !== "\u2013"`, 10*time.Second)
	want := map[string]string{"queue.tickets": "12,345", "queue.serving_position": "2,345", "queue.waiting": "10,000",
		"queue.admit_in": "4 min 10 s", "queue.rate": "40", "queue.gate_holder": "none",
		"queue.waitlist.in": "17", "queue.waitlist.held": "5", "queue.waitlist.offers": "2", "queue.waitlist.offered": "14",
		"queue.waitlist.claimed": "8", "queue.waitlist.lapsed": "6", "queue.waitlist.returned": "4", "_stale": "", "_warn": "error"}
	for k, v := range want {
		if card[k] != v {
			t.Errorf("no holder: %s is %q on the page, want %q", k, card[k], v)
		}
	}
	if !strings.Contains(card["queue.gate_warning"], "nobody is being admitted") || !strings.Contains(card["queue.gate_warning"], "10,000") {
		t.Errorf("no holder while 10,000 wait after the start: the warning reads %q", card["queue.gate_warning"])
	}

	// The queue read fails: the figures stay, said to be stale; the live
	// view goes on.
	f.set("")
	stale := roomWhen(t, b.ctx, "the stale line", `o._stale !== ""`, 5*time.Second)
	if !strings.Contains(stale["_stale"], "503") || stale["queue.tickets"] != "12,345" || stale["queue.waitlist.claimed"] != "8" {
		t.Errorf("queue read failing: the card reads %v", stale)
	}
	since := time.Now().UnixMilli()
	poll[map[string]string](t, b.ctx, "the live view to go on", readPage(since), 5*time.Second)
	if s := eval[string](t, b.ctx, `(document.getElementById("error").hidden ? "" : document.getElementById("error").textContent) +
		(document.getElementById("live-stale").hidden ? "" : document.getElementById("live-stale").textContent)`); s != "" {
		t.Errorf("a failing queue read is shown as the page's or the live view's failure: %q", s)
	}

	// The queue read hangs: the live view goes on being drawn as before,
	// and one read of the queue at a time is under way, not one a tick.
	f.mu.Lock()
	f.hang = make(chan struct{})
	f.mu.Unlock()
	testenv.Eventually(t, 15*time.Second, 10*time.Millisecond, func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.hanging > 0
	}, "no read of the queue hangs")
	lives, queues := f.count("live 12"), f.count("queue 12")
	since = time.Now().UnixMilli()
	testenv.Eventually(t, 15*time.Second, 50*time.Millisecond, func() bool { return f.count("live 12") >= lives+3 },
		"the live view not read 3 times while the queue read hangs: it waits for it")
	f.mu.Lock()
	most := f.mostHanging
	f.mu.Unlock()
	if most > 1 {
		t.Errorf("%d reads of the queue hung at once: they pile up", most)
	}
	t.Logf("%d reads of the queue started during 3 of /live while one hangs", f.count("queue 12")-queues)
	poll[map[string]string](t, b.ctx, "the live view while the queue read hangs", readPage(since), 10*time.Second)
	f.mu.Lock()
	close(f.hang)
	f.hang = nil
	f.mu.Unlock()

	// A holder again: the figures are fresh and the warning goes.
	f.set(f.queueAnswer(f.started, 12400, 12000, 40, "reaper-7f", wl))
	held := roomWhen(t, b.ctx, "the card with a holder", `o["queue.gate_holder"] === "reaper-7f"`, 5*time.Second)
	if held["_stale"] != "" || held["queue.gate_warning"] != "" || held["queue.waiting"] != "400" || held["queue.admit_in"] != "10 s" {
		t.Errorf("gate held: the card reads %v", held)
	}

	// Before the start, nobody holding the gate: a warning that the sale
	// would open with nobody admitted, the wait counted from the start.
	f.set(f.queueAnswer(time.Now().UTC().Add(time.Hour), 90, 0, 100, "", `{"in":0,"pool":0,"offers":0,"offered":0,"claimed":0,"lapsed":0,"returned":0,"cursor":0}`))
	early := roomWhen(t, b.ctx, "the card before the start", `o["queue.tickets"] === "90"`, 5*time.Second)
	if early["_warn"] != "warn" || !strings.Contains(early["queue.gate_warning"], "at the start") ||
		strings.Contains(early["queue.gate_warning"], "nobody is being admitted") || early["queue.admit_in"] != "1 s from the start" {
		t.Errorf("before the start, no holder: the card reads %v", early)
	}

	watch(f.plain)
	poll[map[string]string](t, b.ctx, "the live view", `(() => { const o = `+readPage(0)+`; return o && o["item.name"] === "fake 11" ? o : null; })()`, 10*time.Second)
	roomHidden(t, b.ctx, "the sale without a queue, watched again")
	if n := f.count("queue 11"); n != 0 {
		t.Errorf("the page read the queue of a sale without one %d times", n)
	}
	t.Logf("fake: no holder %q; failing %q; held %s waiting %s (%s); early %q",
		card["queue.gate_warning"], stale["_stale"], held["queue.gate_holder"], held["queue.waiting"], held["queue.admit_in"], early["queue.gate_warning"])
	b.check(t, srv.URL)
}
