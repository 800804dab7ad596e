package console_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/console"
	"github.com/flashsale-dev/flashsale/pkg/httpapi"
	"github.com/flashsale-dev/flashsale/pkg/orderlog"
)

// TestConsoleShowsWhatIsUnavailable: in an outage the console keeps
// drawing what /live could read and says what it could not. A second
// ingress on the pipeline's MySQL and Redis whose Kafka never answers shows
// the sale, its audit and its answers (counted by the first ingress, read
// from Redis), "unavailable" for the lag and the DLQ, and names kafka; with
// its MySQL cut as well, the item and the audit go unavailable too and the
// answers stay. Pressing Watch again does not start a second refresh loop.
func TestConsoleShowsWhatIsUnavailable(t *testing.T) {
	p := startPipeline(t)
	admin := token(t, 1, true)
	id := testenv.ItemID()
	name := "outage boots " + testenv.Suffix()
	p.putItem(t, admin, id, name, 1000, 1, -time.Hour)
	for u := range int64(3) {
		p.mustCall(t, http.MethodPost, "/api/v1/orders", token(t, 500+u, false), fmt.Sprintf(`{"item_id":%d,"qty":1}`, id), http.StatusAccepted)
	}

	silent := testenv.Silent(t)
	fd := testenv.NewFaultDialer()
	db := testenv.FaultyMySQL(t, p.dsn, fd)
	w := orderlog.NewWriter([]string{silent.Addr}, "test.unused", time.Second)
	srv, err := httpapi.New(httpapi.Config{Ingress: p.ingress, StoreTimeout: 500 * time.Millisecond, Brokers: []string{silent.Addr},
		Topic: "test.unused", DLQTopic: "test.unused.dlq", Group: "test-unused"},
		httpapi.Deps{DB: db, Stock: p.st, Publisher: w, Registry: prometheus.NewRegistry(), Log: testenv.LogTail(t)})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Echo())
	t.Cleanup(func() {
		silent.Stop() // releases the reads blocked on it, so the listener can close
		hs.Close()
		_ = w.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Close(ctx)
	})

	b := newBrowser(t, 2*time.Minute)
	do(t, b.ctx, "open the console", chromedp.Navigate(hs.URL+console.Path),
		chromedp.SetValue(chromedp.ID("token"), admin), chromedp.Click(chromedp.ID("token-use")))
	row := fmt.Sprintf(`#sales-rows tr[data-id="%d"]`, id)
	poll[bool](t, b.ctx, "the sale", fmt.Sprintf(`document.querySelector(%q) !== null`, row), 10*time.Second)
	do(t, b.ctx, "watch it", chromedp.Click(chromedp.CSS(row+" button.watch")))

	// The first ingress flushes its counts within a second.
	kafka := poll[map[string]string](t, b.ctx, "the answers, without Kafka", `(() => { const o = `+readPage(0)+`;
		return o && o["answers.accepted.total"] === "3" ? o : null; })()`, 10*time.Second)
	if kafka["item.name"] != name || kafka["audit.verdict"] != "ok" || kafka["audit.unpaid"] == "" ||
		kafka["consumer_lag"] != "unavailable" || kafka["dlq_messages"] != "unavailable" || kafka["unavailable"] != "kafka" {
		t.Errorf("Kafka silent: the page reads %v", kafka)
	}
	if eval[bool](t, b.ctx, `document.getElementById("live-unavailable").hidden`) {
		t.Error("Kafka silent: the unavailable line is hidden")
	}

	// Watch pressed again, twice, while a read is under way (each takes the
	// store timeout, 500 ms, here): once the reads of the loops the presses
	// ended are over, still one read at a time, not one loop per press. A
	// loop reads, then waits a second: one loop never has two reads under
	// way; loops started a press apart read at the same time.
	do(t, b.ctx, "watch it twice more", chromedp.Click(chromedp.CSS(row+" button.watch")), chromedp.Click(chromedp.CSS(row+" button.watch")))
	var mark int
	testenv.Eventually(t, 30*time.Second, 10*time.Millisecond, func() bool {
		var ok bool
		mark, ok = b.quiet("/live")
		return ok
	}, "a read of /live always under way after Watch was pressed again")
	before := b.requests("/live")
	testenv.Eventually(t, 30*time.Second, 50*time.Millisecond, func() bool { return b.requests("/live")-before >= 4 },
		"fewer than 4 reads of /live after Watch was pressed again")
	if n := b.overlap("/live", mark); n > 1 {
		t.Errorf("%d reads of /live under way at once after Watch was pressed again: more than one refresh loop", n)
	}

	// A read of /live under way at the cut may have read the item just
	// before it and failed only the audit after it: that page is true for
	// its moment. The next read, wholly after the cut, finds neither.
	fd.Cut()
	both := poll[map[string]string](t, b.ctx, "the item and MySQL named unavailable", `(() => { const o = `+readPage(0)+`;
		return o && o.unavailable.includes("mysql") && o["item.name"].includes("unavailable") ? o : null; })()`, 15*time.Second)
	if !strings.Contains(both["item.name"], "unavailable") || both["item.stock"] != "\u2013" || both["audit.verdict"] != "unavailable" ||
		both["audit.unpaid"] != "\u2013" || both["answers.accepted.total"] != "3" || !strings.Contains(both["unavailable"], "kafka") {
		t.Errorf("Kafka silent and MySQL cut: the page reads %v", both)
	}
	if s := eval[string](t, b.ctx, `document.getElementById("error").hidden ? "" : document.getElementById("error").textContent`); s != "" {
		t.Errorf("an outage of the stores is shown as an error of the page: %q", s)
	}
	t.Logf("Kafka silent: lag %q, dlq %q, unavailable %q; MySQL cut too: item %q, audit %q, 202s %s, unavailable %q",
		kafka["consumer_lag"], kafka["dlq_messages"], kafka["unavailable"], both["item.name"], both["audit.verdict"],
		both["answers.accepted.total"], both["unavailable"])
	b.check(t, hs.URL)
}
