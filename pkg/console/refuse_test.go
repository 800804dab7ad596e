package console_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/auth"
	"github.com/flashsale-dev/flashsale/pkg/console"
)

// shown is what of the sales a tab's DOM holds.
type shown struct {
	Rows    int    `json:"rows"`
	Figures int    `json:"figures"` // data-k elements with text
	Data    bool   `json:"data"`    // the data section is visible
	Name    bool   `json:"name"`    // the item's name is anywhere in the DOM
	Error   string `json:"error"`   // the error shown, "" if none
	Token   bool   `json:"token"`   // a token is kept in sessionStorage
}

func shownIn(t *testing.T, ctx context.Context, name string) shown {
	t.Helper()
	return eval[shown](t, ctx, fmt.Sprintf(`(() => ({
		rows: document.querySelectorAll("#sales-rows tr, #bucket-rows tr, #answer-rows tr").length,
		figures: [...document.querySelectorAll("[data-k]")].filter((e) => e.textContent !== "").length,
		data: !document.getElementById("data").hidden,
		name: document.documentElement.outerHTML.includes(%q),
		error: document.getElementById("error").hidden ? "" : document.getElementById("error").textContent,
		token: sessionStorage.getItem("flashsale.adminToken") !== null,
	}))()`, name))
}

// refusedNothing fails unless the tab shows an error naming status and no
// figure at all.
func refusedNothing(t *testing.T, ctx context.Context, what, name, status string) {
	t.Helper()
	poll[bool](t, ctx, what+": an error", `!document.getElementById("error").hidden`, 10*time.Second)
	s := shownIn(t, ctx, name)
	if s.Rows != 0 || s.Figures != 0 || s.Data || s.Name || s.Token || !strings.Contains(s.Error, status) {
		t.Errorf("%s: the page shows %+v; want no rows, no figure, no item name, the token forgotten, and an error naming %s", what, s, status)
	}
}

// TestConsoleShowsABuyerNothing: a buyer's token (valid, not an admin's)
// and a token that is no token draw nothing: no sale, no figure, not even
// the item's name in the DOM, and an error that says why (403, 401). A tab
// that was showing a sale to an admin and is given a buyer's token wipes
// everything, and keeps nothing drawn after a refresh would have come; so
// does a tab whose admin token expires while it watches a sale.
func TestConsoleShowsABuyerNothing(t *testing.T) {
	p := startPipeline(t)
	admin := token(t, 1, true)
	id := testenv.ItemID()
	name := "for admins only " + testenv.Suffix()
	p.putItem(t, admin, id, name, 1000, 2, -time.Hour)
	b := newBrowser(t, 2*time.Minute)

	buyer := b.tab(t)
	do(t, buyer, "open the console", chromedp.Navigate(p.url+console.Path),
		chromedp.SetValue(chromedp.ID("token"), token(t, 42, false)), chromedp.Click(chromedp.ID("token-use")))
	refusedNothing(t, buyer, "a buyer's token", name, "403")

	do(t, buyer, "paste a token that is none", chromedp.SetValue(chromedp.ID("token"), "not-a-token"), chromedp.Click(chromedp.ID("token-use")))
	refusedNothing(t, buyer, "no token", name, "401")

	// The same tab with an admin's token shows the sale (so the checks
	// above could see it), then a buyer's token takes it all away.
	do(t, buyer, "paste the admin token", chromedp.SetValue(chromedp.ID("token"), admin), chromedp.Click(chromedp.ID("token-use")))
	poll[bool](t, buyer, "the sale", fmt.Sprintf(`document.querySelector('#sales-rows tr[data-id="%d"]') !== null`, id), 10*time.Second)
	do(t, buyer, "watch it", chromedp.Click(chromedp.CSS(fmt.Sprintf(`#sales-rows tr[data-id="%d"] button.watch`, id))))
	poll[map[string]string](t, buyer, "the live view", readPage(0), 10*time.Second)
	if s := shownIn(t, buyer, name); !s.Name || s.Rows < 3 || s.Figures < 20 || s.Error != "" {
		t.Fatalf("with the admin token the page shows %+v", s)
	}
	do(t, buyer, "paste a buyer's token", chromedp.SetValue(chromedp.ID("token"), token(t, 43, false)), chromedp.Click(chromedp.ID("token-use")))
	refusedNothing(t, buyer, "a buyer's token after an admin's", name, "403")
	// Real time is the subject: nothing may be drawn later, once the
	// refresh timer (REFRESH_MS, 1 s, in the page) of the loop the swap
	// ended would have fired and a read it had under way answered. That is
	// an absence, with no event to wait for: two refreshes' worth of time.
	time.Sleep(2500 * time.Millisecond)
	refusedNothing(t, buyer, "a buyer's token, 2.5 s later", name, "403")

	// An admin's token that expires while the sale is watched: the next
	// refresh is refused (401) and everything drawn goes.
	short, err := auth.Sign(secret, 1, "admin", 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	expiring := b.tab(t)
	do(t, expiring, "open the console with a short-lived token", chromedp.Navigate(p.url+console.Path),
		chromedp.SetValue(chromedp.ID("token"), short), chromedp.Click(chromedp.ID("token-use")))
	poll[bool](t, expiring, "the sale", fmt.Sprintf(`document.querySelector('#sales-rows tr[data-id="%d"]') !== null`, id), 10*time.Second)
	do(t, expiring, "watch it", chromedp.Click(chromedp.CSS(fmt.Sprintf(`#sales-rows tr[data-id="%d"] button.watch`, id))))
	poll[map[string]string](t, expiring, "the live view", readPage(0), 10*time.Second)
	start := time.Now()
	poll[bool](t, expiring, "the token's expiry", `!document.getElementById("error").hidden`, 20*time.Second)
	t.Logf("the short-lived token was refused %v after the live view was drawn", time.Since(start).Round(100*time.Millisecond))
	refusedNothing(t, expiring, "an admin's token once expired", name, "401")
	b.check(t, p.url)
}
