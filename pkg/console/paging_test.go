package console_test

import (
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/console"
)

// TestConsolePagesTheSales: the sales list pages as the API does (50 a
// page, keyset on the id): 52 sales are the first 50 by id, then Next page
// the last 2 and no further Next, then First page the 50 again.
func TestConsolePagesTheSales(t *testing.T) {
	p := startPipeline(t)
	admin := token(t, 1, true)
	base := testenv.ItemID()
	const n = 52
	var wg sync.WaitGroup
	sem := make(chan struct{}, 6)
	for i := range int64(n) {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := p.tryPutItem(admin, base+i, fmt.Sprintf("sale %d", i), 10, 1, -time.Hour); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}

	b := newBrowser(t, 2*time.Minute)
	do(t, b.ctx, "open the console", chromedp.Navigate(p.url+console.Path),
		chromedp.SetValue(chromedp.ID("token"), admin), chromedp.Click(chromedp.ID("token-use")))
	ids := func(what string, first int64, count int) {
		t.Helper()
		got := poll[[]string](t, b.ctx, what, fmt.Sprintf(`(() => { const r = [...document.querySelectorAll("#sales-rows tr")];
			return r.length && r[0].dataset.id === %q ? r.map((tr) => tr.dataset.id) : null; })()`, strconv.FormatInt(first, 10)), 10*time.Second)
		if len(got) != count {
			t.Fatalf("%s: %d rows, want %d", what, len(got), count)
		}
		for i, s := range got {
			if s != strconv.FormatInt(first+int64(i), 10) {
				t.Fatalf("%s: row %d is item %s, want %d", what, i, s, first+int64(i))
			}
		}
	}
	ids("the first page", base, 50)
	do(t, b.ctx, "next page", chromedp.Click(chromedp.ID("page-next")))
	ids("the second page", base+50, 2)
	if !eval[bool](t, b.ctx, `document.getElementById("page-next").hidden`) {
		t.Error("the last page offers a next page")
	}
	do(t, b.ctx, "first page", chromedp.Click(chromedp.ID("page-first")))
	ids("the first page again", base, 50)
	b.check(t, p.url)
}
