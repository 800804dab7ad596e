package console_test

import (
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/console"
)

// readPage returns every figure of the live view as the page shows it
// (data-k key to text) and the "at" of the read it drew (_at), in one
// evaluation, so they belong to one drawing. With after > 0 it is null
// until the drawn read was taken after that Unix time in ms.
func readPage(after int64) string {
	return fmt.Sprintf(`(() => {
		const at = document.getElementById("live-at").getAttribute("datetime");
		if (!at || document.getElementById("live").hidden || Date.parse(at) <= %d) return null;
		const o = { _at: at };
		for (const el of document.querySelectorAll("#live [data-k]")) o[el.dataset.k] = el.textContent;
		return o;
	})()`, after)
}

// number parses a figure as the page prints it (1,234); ok false for "–".
func number(s string) (int64, bool) {
	n, err := strconv.ParseInt(strings.ReplaceAll(s, ",", ""), 10, 64)
	return n, err == nil
}

// seconds parses a latency as the page prints it (3.2 ms, 1.20 s, > 5.00 s).
func seconds(s string) (float64, bool) {
	s = strings.TrimPrefix(s, "> ")
	unit := 1.0
	switch {
	case strings.HasSuffix(s, " ms"):
		s, unit = strings.TrimSuffix(s, " ms"), 1e-3
	case strings.HasSuffix(s, " s"):
		s = strings.TrimSuffix(s, " s")
	default:
		return 0, false
	}
	v, err := strconv.ParseFloat(s, 64)
	return v * unit, err == nil
}

// moving are the figures that go up and down while orders flow (a
// reservation is pending until the consumer decides it): no bound holds
// for them between two reads, so they are compared at rest only.
func moving(k string) bool {
	return k == "consumer_lag" || strings.HasSuffix(k, ".pending") || strings.HasSuffix(k, ".pending_qty")
}

// agree checks the page's drawing against two reads of the API, a taken
// before the page's read and b after it: every figure the API gives is on
// the page and lies between a's and b's (the counts and stocks only move
// one way while buyers buy), and at rest (a == b) equals them.
func agree(t *testing.T, what string, page map[string]string, a, b live, atRest bool) {
	t.Helper()
	fa, fb := a.figures(), b.figures()
	for k, vb := range fb {
		if !atRest && moving(k) {
			continue
		}
		va := fa[k] // an outcome first answered after a: 0 in a
		text, ok := page[k]
		if !ok {
			t.Errorf("%s: the page shows no %s (the API's %d)", what, k, vb)
			continue
		}
		v, ok := number(text)
		if !ok {
			t.Errorf("%s: %s is %q on the page, the API's %d", what, k, text, vb)
			continue
		}
		if lo, hi := min(va, vb), max(va, vb); v < lo || v > hi {
			t.Errorf("%s: %s is %d on the page, outside the API's reads around it [%d, %d]", what, k, v, lo, hi)
		}
	}
	for k := range page {
		if strings.HasPrefix(k, "answers.") && strings.HasSuffix(k, ".total") {
			if _, ok := fb[k]; !ok {
				t.Errorf("%s: the page shows %s=%s, which the API does not answer", what, k, page[k])
			}
		}
	}
}

// drawnBetween reads /live, waits until the page draws a read taken after
// that one was answered, and reads /live again: the page's read lies
// between the two.
func drawnBetween(t *testing.T, p *pipeline, tab *browser, admin string, id int64) (map[string]string, live, live) {
	t.Helper()
	a, aDone := p.readLive(t, admin, id)
	page := poll[map[string]string](t, tab.ctx, "the page to draw a newer read", readPage(aDone.UnixMilli()), 10*time.Second)
	b, _ := p.readLive(t, admin, id)
	pageAt, err := time.Parse(time.RFC3339Nano, page["_at"])
	if err != nil || !pageAt.After(a.At) || !b.At.After(pageAt) {
		t.Fatalf("reads out of order: api %v, page %q, api %v", a.At, page["_at"], b.At)
	}
	return page, a, b
}

// TestConsoleWatchesAndEndsASale drives the console in headless Chromium
// against a real pipeline (ingress, consumer, MySQL, Redis, Kafka) while
// buyers order: the page draws the sale; its figures agree with the API's
// within one refresh (each lies between two reads of /live around the
// page's, the rates and latencies are there); its end-sale button stops the
// sale (every order sent after the page showed the end's answer is 409
// sale_ended); and once the pipeline is at rest the audit holds exactly the
// orders the buyers were told 202, and the page shows exactly what the API
// does. FLASHSALE_CONSOLE_SCREENSHOT=docs/console.png saves a picture of
// the running console.
func TestConsoleWatchesAndEndsASale(t *testing.T) {
	p := startPipeline(t)
	admin := token(t, 1, true)
	id := testenv.ItemID()
	const total = 100_000
	name := "console sneakers " + testenv.Suffix()
	p.putItem(t, admin, id, name, total, 4, -time.Hour)
	other := testenv.ItemID()
	p.putItem(t, admin, other, "next week's sale", 500, 1, 7*24*time.Hour)

	b := newBrowser(t, 3*time.Minute)
	do(t, b.ctx, "open the console", chromedp.Navigate(p.url+console.Path))
	if n := eval[int](t, b.ctx, `document.querySelectorAll("#sales-rows tr").length`); n != 0 {
		t.Fatalf("the page drew %d sales before a token was given", n)
	}
	do(t, b.ctx, "paste the admin token", chromedp.SetValue(chromedp.ID("token"), admin), chromedp.Click(chromedp.ID("token-use")))

	// (1) The page draws the sales, and the sale.
	row := fmt.Sprintf(`#sales-rows tr[data-id="%d"]`, id)
	cells := poll[[]string](t, b.ctx, "the sale's row", fmt.Sprintf(`(() => { const r = document.querySelector(%q);
		return r && [...r.cells].map((c) => c.textContent); })()`, row), 10*time.Second)
	if len(cells) < 6 || cells[0] != strconv.FormatInt(id, 10) || cells[1] != name || cells[2] != "open" || cells[4] != "100,000" || cells[5] != "4" {
		t.Fatalf("the sale's row reads %q", cells)
	}
	if n := eval[int](t, b.ctx, `document.querySelectorAll("#sales-rows tr").length`); n != 2 {
		t.Errorf("the page lists %d sales, want 2", n)
	}
	if s := eval[string](t, b.ctx, fmt.Sprintf(`document.querySelector('#sales-rows tr[data-id="%d"]').cells[2].textContent`, other)); s != "scheduled" {
		t.Errorf("next week's sale is %q on the page, want scheduled", s)
	}

	bs := p.buy(t, id, 4, 10*time.Millisecond)
	halted := false
	defer func() {
		if !halted {
			bs.halt()
		}
	}()
	do(t, b.ctx, "watch the sale", chromedp.Click(chromedp.CSS(row+" button.watch")))
	first := poll[map[string]string](t, b.ctx, "the live view", readPage(0), 10*time.Second)
	if first["item.name"] != name || first["item.state"] != "open" || first["audit.verdict"] == "" {
		t.Fatalf("the live view reads %v", first)
	}

	// (2) Its figures agree with the API's within one refresh, three times.
	var running map[string]string
	reads, notOK := 0, 0
	for round := range 3 {
		page, a, after := drawnBetween(t, p, b, admin, id)
		agree(t, fmt.Sprintf("round %d", round+1), page, a, after, false)
		running = page
		for _, l := range []live{a, after} {
			reads++
			if !l.Audit.OK {
				notOK++
				t.Logf("round %d: an audit read while orders flow: not ok: %v", round+1, l.Audit.Violations)
			}
		}
	}
	t.Logf("audit while orders flow: %d of %d reads of /live not ok", notOK, reads)
	if r, err := strconv.ParseFloat(running["answers.accepted.rate"], 64); err != nil || r <= 0 {
		t.Errorf("202s per second on the page: %q while buyers buy", running["answers.accepted.rate"])
	}
	p50, ok50 := seconds(running["p50"])
	p99, ok99 := seconds(running["p99"])
	if !ok50 || !ok99 || p50 <= 0 || p50 > p99 {
		t.Errorf("202 latency on the page: p50 %q, p99 %q", running["p50"], running["p99"])
	}
	for _, k := range []string{"bucket.0.redis_stock", "bucket.3.db_stock", "audit.pending", "consumer_lag", "dlq_messages"} {
		if running[k] == "" {
			t.Errorf("the page shows no %s", k)
		}
	}
	t.Logf("running: %s 202/s, p50 %s, p99 %s, redis %s, mysql %s, pending %s, lag %s, interval %s",
		running["answers.accepted.rate"], running["p50"], running["p99"], running["item.redis_stock"], running["item.stock"],
		running["audit.pending"], running["consumer_lag"], running["interval"])
	if path := screenshotPath(t); path != "" {
		png, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatalf("screenshot: %v", err)
		}
		if err := os.WriteFile(path, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot of the running console: %s (%d bytes)", path, len(png))
	}

	// (3) The end-sale button stops the sale.
	do(t, b.ctx, "press End sale", chromedp.Click(chromedp.ID("end")), chromedp.WaitVisible(chromedp.ID("end-yes")))
	clicked := time.Now()
	do(t, b.ctx, "confirm the end", chromedp.Click(chromedp.ID("end-yes")))
	status := poll[string](t, b.ctx, "the end's answer", `document.getElementById("end-result").dataset.status || null`, 15*time.Second)
	shown := time.Now()
	result := eval[string](t, b.ctx, `document.getElementById("end-result").textContent`)
	if status != "200" || !strings.Contains(result, "ended at") {
		t.Fatalf("the end: status %s, %q", status, result)
	}
	// Buyers keep trying after the page showed the end.
	testenv.Eventually(t, 30*time.Second, 20*time.Millisecond, func() bool {
		return bs.count(func(a answer) bool { return a.start.After(shown) }) >= 20
	}, "fewer than 20 orders sent after the page showed the end")
	answers := bs.halt()
	halted = true

	var accepted, afterEnd, endedAfter int
	var last202 time.Time
	for _, a := range answers {
		if a.err != nil {
			t.Errorf("an order got no answer: %v", a.err)
			continue
		}
		if a.status == http.StatusAccepted {
			accepted++
			if a.done.After(last202) {
				last202 = a.done
			}
		}
		if a.start.After(shown) {
			afterEnd++
			if a.status == http.StatusConflict && a.code == "sale_ended" {
				endedAfter++
			} else {
				t.Errorf("an order sent %v after the page showed the end was answered %d %s", a.start.Sub(shown), a.status, a.code)
			}
		}
	}
	if afterEnd < 10 || accepted < 50 {
		t.Fatalf("%d orders after the end, %d accepted in all: too few to show anything", afterEnd, accepted)
	}
	t.Logf("end: click to answer on the page %v; last 202 %v after the click; %d orders, %d accepted; %d sent after the end, all 409 sale_ended: %v",
		shown.Sub(clicked).Round(time.Millisecond), last202.Sub(clicked).Round(time.Millisecond), len(answers), accepted, afterEnd, endedAfter == afterEnd)

	// At rest: the consumer has written every order, the tally has counted
	// every answer, and the audit holds exactly the 202s.
	var rest live
	testenv.Eventually(t, 30*time.Second, 200*time.Millisecond, func() bool {
		rest, _ = p.readLive(t, admin, id)
		var n int64
		for _, c := range rest.Answers {
			n += c
		}
		return rest.Audit.OK && rest.Audit.Pending == 0 && *rest.ConsumerLag == 0 && n == int64(len(answers))
	}, "the pipeline never came to rest: %+v", &rest)
	orders := p.count(t, "SELECT COUNT(*) FROM orders WHERE item_id = ?", id)
	au := rest.Audit
	if orders != int64(accepted) || au.Unpaid != int64(accepted) || au.DBStock != total-int64(accepted) || au.RedisStock != au.DBStock ||
		rest.Answers["accepted"] != int64(accepted) || rest.Item.State != "ended" || len(au.Violations) > 0 {
		t.Errorf("at rest: %d order rows, audit %+v, answers %v, state %s; buyers were told 202 %d times", orders, *au, rest.Answers, rest.Item.State, accepted)
	}
	// The page's rates span its last two reads: let it draw one read made
	// at rest first, so the one checked and the one before it both are.
	drawnBetween(t, p, b, admin, id)
	page, a, after := drawnBetween(t, p, b, admin, id)
	if fmt.Sprint(a.figures()) != fmt.Sprint(after.figures()) {
		t.Fatalf("the API's figures moved at rest: %v then %v", a.figures(), after.figures())
	}
	agree(t, "at rest", page, a, after, true)
	if page["item.state"] != "ended" || page["audit.verdict"] != "ok" || page["audit.streak"] != "" || page["answers.accepted.rate"] != "0.0" || page["p50"] != "\u2013" {
		t.Errorf("at rest the page reads state %q, verdict %q, 202/s %q, p50 %q", page["item.state"], page["audit.verdict"], page["answers.accepted.rate"], page["p50"])
	}
	ended := poll[string](t, b.ctx, "the list to show the end", fmt.Sprintf(`(() => { const r = document.querySelector(%q);
		return r && r.cells[2].textContent === "ended" && "ended"; })()`, row), 5*time.Second)
	t.Logf("at rest: %d orders, audit ok, redis %d = mysql %d, the list says %s", orders, au.RedisStock, au.DBStock, ended)
	b.check(t, p.url)
}
