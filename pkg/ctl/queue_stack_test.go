package ctl

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/api"
	"github.com/flashsale-dev/flashsale/pkg/waitroom"
)

// call is one request to the ingress with token (none when empty): its
// status and body.
func (g *ingress) call(t *testing.T, method, path, token, body string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest(method, g.url+path, bytes.NewBufferString(body))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// closeRounds does what the gate's passes do for item id (no gate runs
// here): closes its rounds as Redis' clock passes their ends, until want
// are closed.
func (g *ingress) closeRounds(t *testing.T, id int64, want int) {
	t.Helper()
	wr := waitroom.NewStore(g.stock)
	testenv.Eventually(t, 30*time.Second, 50*time.Millisecond, func() bool {
		it, err := waitroom.ReadItem(t.Context(), g.db, id)
		if err != nil {
			t.Fatal(err)
		}
		now, err := wr.Now(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		closed, err := waitroom.CloseRounds(t.Context(), g.db, wr, it, now)
		if err != nil {
			t.Fatal(err)
		}
		return len(closed) == want
	}, "item %d's %d rounds did not close", id, want)
}

// TestQueueTranscriptOnTheStack: `queue transcript` against the real
// ingress and stores: refused (exit 1, not_revealed) before starts_at;
// after it and the rounds' closes the published transcript verifies, and
// each buyer's position from --ticket/--arrival, or --receipt, is the one
// the buyer's own ticket poll answers, for the four taken before the start
// (round 0: the item has no shuffle window) and the one taken after it,
// behind them by arrival.
func TestQueueTranscriptOnTheStack(t *testing.T) {
	g := startIngress(t)
	id := testenv.ItemID()
	now := time.Now()
	starts := now.Add(1500 * time.Millisecond)
	stamp := func(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }
	body := fmt.Sprintf(`{"name":"queued","price_cents":999,"stock":10,"per_user_limit":1,"starts_at":%q,"ends_at":%q,"queue":true,"queue_opens_at":%q,"queue_shuffle_window_ms":0}`,
		stamp(starts), stamp(now.Add(time.Hour)), stamp(now.Add(-time.Minute)))
	if code, b := g.call(t, http.MethodPut, "/api/v1/admin/items/"+strconv.FormatInt(id, 10), g.env["FLASHSALE_TOKEN"], body); code != http.StatusOK {
		t.Fatalf("put queued item: %d %s", code, b)
	}
	type ticket struct {
		Ticket  string `json:"ticket"`
		Arrival int64  `json:"arrival"`
		Receipt string `json:"receipt"`
	}
	take := func(user int64) ticket {
		code, b := g.call(t, http.MethodPost, fmt.Sprintf("/api/v1/items/%d/queue", id), g.mint(t, user, false), "")
		var tk ticket
		if code != http.StatusCreated || json.Unmarshal(b, &tk) != nil || tk.Ticket == "" {
			t.Fatalf("take a ticket for %d: %d %s", user, code, b)
		}
		return tk
	}
	users := []int64{501, 502, 503, 504, 505}
	var tickets []ticket
	for _, u := range users[:4] {
		tickets = append(tickets, take(u))
	}
	noToken := func(k string) (string, bool) {
		if k == "FLASHSALE_TOKEN" {
			return "", false
		}
		return g.lookup(k)
	}
	sid := strconv.FormatInt(id, 10)
	if code, _, errs := run(t, noToken, "queue", "transcript", sid, "--verify"); code != ExitAPI || !strings.Contains(errs, "not_revealed (HTTP 409)") {
		t.Fatalf("before the start: exit %d %q", code, errs)
	}
	// starts_at is judged by the ingress's and Redis' real clocks: wait for
	// the ingress to reveal the seed, then take a ticket after it.
	testenv.Eventually(t, 30*time.Second, 50*time.Millisecond, func() bool {
		code, _ := g.call(t, http.MethodGet, fmt.Sprintf("/api/v1/items/%d/transcript", id), "", "")
		return code == http.StatusOK
	}, "the transcript was never revealed after starts_at %v", starts)
	tickets = append(tickets, take(users[4])) // after the start: behind round 0's four, by arrival
	g.closeRounds(t, id, 1)

	out := mustRun(t, noToken, "queue", "transcript", sid, "--verify")
	if !strings.Contains(out, "tickets:     5") || !strings.Contains(out, "round 0:     arrivals 1..4") ||
		strings.Contains(out, "round 1:") || !strings.Contains(out, "verified:") {
		t.Fatalf("--verify:\n%s", out)
	}
	for i, tk := range tickets {
		check := []string{"--arrival", strconv.FormatInt(tk.Arrival, 10)}
		if i%2 == 1 {
			check = []string{"--receipt", tk.Receipt}
		}
		out := mustRun(t, noToken, append([]string{"queue", "verify", sid, "--ticket", tk.Ticket}, check...)...)
		m := regexp.MustCompile(`position: (\d+) of 5`).FindStringSubmatch(out)
		code, b := g.call(t, http.MethodGet, fmt.Sprintf("/api/v1/items/%d/queue/%s", id, tk.Ticket), g.mint(t, users[i], false), "")
		var st struct {
			Position *int64 `json:"position"`
		}
		if code != http.StatusOK || json.Unmarshal(b, &st) != nil || st.Position == nil {
			t.Fatalf("buyer %d's poll: %d %s", users[i], code, b)
		}
		if m == nil || m[1] != strconv.FormatInt(*st.Position, 10) {
			t.Errorf("buyer %d: flashsalectl says %q, the poll position %d", users[i], out, *st.Position)
		}
		if i == 4 && *st.Position != 5 {
			t.Errorf("the ticket taken after the start is at %d, want 5 (behind round 0's four)", *st.Position)
		}
	}
}

// TestQueueShowOnTheStack: `queue show` against the real ingress and
// stores: before starts_at the tickets taken all wait at serving position
// 0; once the gate's script has moved the item on (stock.AdvanceGate, what
// the gate runs each pass; called here directly, as the lease on the shared
// Redis may be another process's), every ticket is admitted and none
// waits. The rate and commitment are the item's.
func TestQueueShowOnTheStack(t *testing.T) {
	g := startIngress(t)
	id := testenv.ItemID()
	sid := strconv.FormatInt(id, 10)
	now := time.Now()
	starts := now.Add(time.Hour) // reached by the gate's clock below, not waited for
	stamp := func(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }
	body := fmt.Sprintf(`{"name":"queued","price_cents":999,"stock":10,"per_user_limit":1,"starts_at":%q,"ends_at":%q,"queue":true,"queue_opens_at":%q,"queue_rate":1000}`,
		stamp(starts), stamp(now.Add(2*time.Hour)), stamp(now.Add(-time.Minute)))
	code, b := g.call(t, http.MethodPut, "/api/v1/admin/items/"+sid, g.env["FLASHSALE_TOKEN"], body)
	var put struct {
		Commitment string `json:"queue_commitment"`
	}
	if code != http.StatusOK || json.Unmarshal(b, &put) != nil || put.Commitment == "" {
		t.Fatalf("put queued item: %d %s", code, b)
	}
	for _, u := range []int64{601, 602, 603} {
		if code, b := g.call(t, http.MethodPost, fmt.Sprintf("/api/v1/items/%d/queue", id), g.mint(t, u, false), ""); code != http.StatusCreated {
			t.Fatalf("take a ticket for %d: %d %s", u, code, b)
		}
	}
	show := func() api.AdminQueue {
		var v api.AdminQueue
		if err := json.Unmarshal([]byte(mustRun(t, g.lookup, "-o", "json", "queue", "show", sid)), &v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	v := show()
	if v.ItemID != id || v.Rate != 1000 || v.Commitment != put.Commitment || v.Tickets != 3 || v.Serving != 0 || v.Waiting != 3 || v.StartsAt.Sub(starts).Abs() >= time.Millisecond {
		t.Fatalf("before the start: %+v (starts %v, commitment %s)", v, starts, put.Commitment)
	}
	out := mustRun(t, g.lookup, "queue", "show", sid)
	for _, want := range []string{"tickets:           3\n", "serving_position:  0\n", "waiting:           3 (1s at the rate)\n", "rate:              1000 a second\n", "gate_holder:"} {
		if !strings.Contains(out, want) {
			t.Errorf("queue show lacks %q:\n%s", want, out)
		}
	}
	// The gate's move 50 ms after starts_at, by a clock the test sets
	// rather than Redis' (waitroom.Store.WithClock): at 1000 a second, 50
	// positions' worth for 3 tickets.
	moved := waitroom.NewStore(g.stock).WithClock(func() time.Time { return starts.Add(50 * time.Millisecond) })
	if _, err := moved.AdvanceGate(t.Context(), id, 1000, -1); err != nil {
		t.Fatal(err)
	}
	if v := show(); v.Tickets != 3 || v.Serving != 3 || v.Waiting != 0 {
		t.Fatalf("after the gate's move: %+v, want all 3 admitted", v)
	}
	plain := testenv.ItemID()
	mustRun(t, g.lookup, "items", "create", strconv.FormatInt(plain, 10), "--name", "plain", "--price-cents", "100", "--stock", "1", "--starts-at", "-1m", "--ends-at", "+1h")
	if code, _, errs := run(t, g.lookup, "queue", "show", strconv.FormatInt(plain, 10)); code != ExitAPI || !strings.Contains(errs, "queue_off (HTTP 409)") {
		t.Errorf("an item without a queue: exit %d %q", code, errs)
	}
}
