package ctl

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/flashsale-dev/flashsale/internal/testenv"
)

// buy posts one order of user for item and returns the status.
func (g *ingress) buy(t *testing.T, user, item int64) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, g.url+"/api/v1/orders", bytes.NewBufferString(fmt.Sprintf(`{"item_id":%d,"qty":1}`, item)))
	req.Header.Set("Authorization", "Bearer "+g.mint(t, user, false))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// waitAnswers waits until the live view of item sid counts at least want's
// answers: the tally flushes them to Redis in the background.
func (g *ingress) waitAnswers(t *testing.T, sid string, want map[string]int64) {
	t.Helper()
	var last map[string]int64
	testenv.Eventually(t, 20*time.Second, 50*time.Millisecond, func() bool {
		_, out, _ := run(t, g.lookup, "sale", "watch", sid, "--count", "1", "-o", "json")
		var v View
		if json.Unmarshal([]byte(out), &v) != nil || v.Cur == nil {
			return false
		}
		last = v.Cur.Answers
		for k, n := range want {
			if last[k] < n {
				return false
			}
		}
		return true
	}, "the live view never counted %v: last read %v", want, &last)
}

// TestSaleWatchFollowsASale runs `sale watch` against a real ingress while
// buyers buy between its frames: the second frame's rates are the
// interval's answers, its p50 is drawn from the interval's 202s, and the
// text frame shows stock, audit and answers as the API has them.
func TestSaleWatchFollowsASale(t *testing.T) {
	g := startIngress(t)
	g.startConsumer(t, 30*time.Second)
	id := testenv.ItemID()
	sid := strconv.FormatInt(id, 10)
	mustRun(t, g.lookup, "items", "create", sid, "--name", "watched", "--price-cents", "500", "--stock", "10", "--starts-at", "-1m", "--ends-at", "+1h")
	user := testenv.ItemID() % 1_000_000_000
	for i := range 3 {
		if code := g.buy(t, user+int64(i), id); code != http.StatusAccepted {
			t.Fatalf("order %d: %d", i, code)
		}
	}
	// Wait for the first three to be flushed, so the first frame has them.
	g.waitAnswers(t, sid, map[string]int64{"accepted": 3})

	// Between the two frames: 7 more 202s (stock 10) and 2 sold out, and
	// the wait for the tally's flush (FLASHSALE_TALLY_FLUSH, 100 ms here)
	// to show them.
	sleep := func(time.Duration) {
		for i := 3; i < 12; i++ {
			g.buy(t, user+int64(i), id)
		}
		g.waitAnswers(t, sid, map[string]int64{"accepted": 10, "sold_out": 2})
	}
	var out, errb bytes.Buffer
	if code := Main([]string{"sale", "watch", sid, "--count", "2", "-o", "json"},
		Env{Lookup: g.lookup, Stdout: &out, Stderr: &errb, Sleep: sleep}); code != 0 {
		t.Fatalf("sale watch: exit %d: %s", code, errb.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("want 2 frames, got %d:\n%s", len(lines), out.String())
	}
	var first, second View
	if err := json.Unmarshal([]byte(lines[0]), &first); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(lines[1]), &second); err != nil {
		t.Fatal(err)
	}
	if first.Rates != nil || first.P50 != nil {
		t.Errorf("first frame has rates %v p50 %v: one read cannot give a rate", first.Rates, first.P50)
	}
	a := second.Cur.Answers
	if a["accepted"] != 10 || a["sold_out"] != 2 {
		t.Fatalf("second frame's answers %v, want 10 accepted and 2 sold_out", a)
	}
	dt := second.Interval
	if dt <= 0 || dt > 60 { // at most: a hang guard, not a speed bound
		t.Fatalf("interval %v s", dt)
	}
	for k, n := range map[string]float64{"accepted": 7, "sold_out": 2} {
		if got := second.Rates[k]; got < n/dt*0.999 || got > n/dt*1.001 {
			t.Errorf("rate of %s %.3f/s, want %d in %.3f s = %.3f/s", k, got, int(n), dt, n/dt)
		}
	}
	if second.P50 == nil || second.P99 == nil || second.P50.Seconds <= 0 || second.P50.Seconds > second.P99.Seconds {
		t.Errorf("p50 %+v p99 %+v, want both from the interval's seven 202s", second.P50, second.P99)
	}
	if second.Cur.Item == nil || second.Cur.Item.RedisStock == nil || *second.Cur.Item.RedisStock != 0 {
		t.Errorf("item %+v, want 0 left in Redis", second.Cur.Item)
	}
	if second.Cur.Audit == nil || !second.Cur.Audit.OK || len(second.Cur.Unavailable) != 0 {
		t.Errorf("audit %+v unavailable %v", second.Cur.Audit, second.Cur.Unavailable)
	}

	// The text frame, as an operator sees it (docs/operating.md's example), once the
	// consumer has written the orders, with late buyers between its frames.
	testenv.Eventually(t, 20*time.Second, 100*time.Millisecond, func() bool {
		return g.count(t, "SELECT COUNT(*) FROM orders WHERE item_id = ?", id) == 10
	}, "the consumer did not write the ten orders")
	late := func(time.Duration) {
		for i := 12; i < 16; i++ {
			g.buy(t, user+int64(i), id)
		}
		g.buy(t, user, id) // already purchased
		g.waitAnswers(t, sid, map[string]int64{"sold_out": 6, "already_purchased": 1})
	}
	out.Reset()
	if code := Main([]string{"sale", "watch", sid, "--count", "2", "--no-clear"},
		Env{Lookup: g.lookup, Stdout: &out, Stderr: &errb, Sleep: late}); code != 0 {
		t.Fatalf("sale watch: exit %d: %s", code, errb.String())
	}
	frames := strings.SplitAfterN(out.String(), "item "+sid, 3)
	if len(frames) != 3 {
		t.Fatalf("want 2 text frames:\n%s", out.String())
	}
	text := "item " + sid + frames[2]
	for _, want := range []string{"item " + sid + ` "watched"  open`, "stock      redis 0  mysql 0  of 10",
		"orders     unpaid 10", "audit      ok", "consumer lag 0  dlq 0", "accepted           10", "sold_out           6"} {
		if !strings.Contains(text, want) {
			t.Errorf("frame lacks %q:\n%s", want, text)
		}
	}
	t.Logf("frame:\n%s", text)
}
