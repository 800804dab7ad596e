package ctl

import (
	"bytes"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flashsale-dev/flashsale/pkg/api"
	"github.com/flashsale-dev/flashsale/pkg/waitroom/draw"
)

// fakeAPI answers one path with status and body and records the requests it
// got; any other path is a 404 API error.
type fakeAPI struct {
	path   string
	status int
	body   string
	auth   []string          // Authorization of each request to path
	more   map[string]string // other paths it answers 200 with these bodies
}

func (f *fakeAPI) start(t *testing.T) string {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if b, ok := f.more[r.URL.Path]; ok && r.Method == http.MethodGet {
			fmt.Fprint(w, b)
			return
		}
		if r.Method != http.MethodGet || r.URL.Path != f.path {
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprintf(w, `{"error":"not_found","message":"%s %s"}`, r.Method, r.URL.Path)
			return
		}
		f.auth = append(f.auth, r.Header.Get("Authorization"))
		w.WriteHeader(f.status)
		fmt.Fprint(w, f.body)
	}))
	t.Cleanup(s.Close)
	return s.URL
}

// The contract's example (GET /api/v1/admin/items/{id}/queue), with a
// field this CLI does not know, which -o json must still show.
const queueBody = `{"item_id":7,"opens_at":"2026-12-03T09:00:00Z","starts_at":"2026-12-03T10:00:00Z",
 "commitment":"5d41402abc4b2a76b9719d911017c592ae1f2d8f1e5f1c1e7c1e1b3a6c2c4e1f","rate":100,
 "tickets":1234,"serving_position":500,"waiting":734,"gate_holder":"reaper-abc",
 "waitlist":{"in":12,"pool":1,"offers":2,"offered":9,"claimed":7,"lapsed":2,"returned":2,"cursor":640},"later_field":true}`

// TestQueueShow: the operator's view of one item's queue, as fields and
// as sent; a null holder says nobody is admitted; the API's refusals and
// a bad id keep their exit codes.
func TestQueueShow(t *testing.T) {
	api := &fakeAPI{path: "/api/v1/admin/items/7/queue", status: http.StatusOK, body: queueBody}
	env := envOf(map[string]string{"FLASHSALE_URL": api.start(t), "FLASHSALE_TOKEN": "admin-token-0123456789"})
	out := mustRun(t, env, "queue", "show", "7")
	for _, want := range []string{`item:\s+7\n`, `opens_at:\s+2026-12-03T09:00:00Z\n`, `starts_at:\s+2026-12-03T10:00:00Z\n`,
		`commitment:\s+5d41402a`, `rate:\s+100 a second\n`, `tickets:\s+1234\n`, `serving_position:\s+500\n`,
		`waiting:\s+734 \(8s at the rate\)\n`, `gate_holder:\s+reaper-abc\n`,
		`waitlist:\s+12 released: 3 held \(2 on offer\), 7 claimed, 2 returned; 9 offered, 2 lapsed\n`} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("queue show lacks %s:\n%s", want, out)
		}
	}
	if len(api.auth) != 1 || api.auth[0] != "Bearer admin-token-0123456789" {
		t.Errorf("Authorization sent: %q", api.auth)
	}
	var raw map[string]any
	if err := json.Unmarshal([]byte(mustRun(t, env, "-o", "json", "queue", "show", "7")), &raw); err != nil || raw["later_field"] != true || raw["waiting"] != 734.0 {
		t.Errorf("-o json: %v %v", raw, err)
	}

	// A bucketed item's waitlist also says what moved between its buckets,
	// and counts a unit moving as held.
	api.body = strings.Replace(queueBody, `"cursor":640}`, `"cursor":640,"moved":5,"moving":1}`, 1)
	out = mustRun(t, env, "queue", "show", "7")
	if want := `waitlist:\s+12 released: 4 held \(2 on offer\), 7 claimed, 2 returned; 9 offered, 2 lapsed; 5 moved between buckets \(1 moving\)\n`; !regexp.MustCompile(want).MatchString(out) {
		t.Errorf("queue show of a bucketed item's waitlist lacks %s:\n%s", want, out)
	}

	api.body = strings.Replace(queueBody, `"reaper-abc"`, "null", 1)
	out = mustRun(t, env, "queue", "show", "7")
	if !regexp.MustCompile(`gate_holder:\s+none: no reaper holds the gate, nobody is being admitted\n`).MatchString(out) {
		t.Errorf("null holder:\n%s", out)
	}

	api.status, api.body = http.StatusConflict, `{"error":"queue_off","message":"this item has no waiting room"}`
	if code, _, errs := run(t, env, "queue", "show", "7"); code != ExitAPI || !strings.Contains(errs, "queue_off (HTTP 409)") {
		t.Errorf("queue_off: exit %d %q", code, errs)
	}
	if code, _, errs := run(t, env, "queue", "show", "x"); code != ExitUsage || !strings.Contains(errs, "positive integer") {
		t.Errorf("bad id: exit %d %q", code, errs)
	}
	if code, _, _ := run(t, env, "queue", "show"); code != ExitUsage {
		t.Errorf("no id: exit %d", code)
	}
}

// transcriptOf is a real transcript of item 7: five tickets, the first
// three taken before starts_at (shuffled), and the ids they hash from.
// transcriptOf is item 7's transcript: 5 tickets, round 0 over arrivals
// 1..3 (taken before the start), the other two after the window.
func transcriptOf(t *testing.T) (draw.RoundTranscript, []string) {
	t.Helper()
	seed, err := draw.ParseSeed(strings.Repeat("ab", 32))
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	var es []draw.Entry
	for i := 1; i <= 5; i++ {
		id := fmt.Sprintf("%032x", i*7919)
		ids = append(ids, id)
		es = append(es, draw.Entry{Ticket: draw.Hash(id), Arrival: int64(i)})
	}
	r0, err := draw.CloseRound(0, 1, 3, es)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := draw.NewRoundTranscript(7, seed, []draw.Round{r0}, es)
	if err != nil {
		t.Fatal(err)
	}
	return tr, ids
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestQueueTranscript: the public transcript needs no token; it is shown
// in serving order; --verify checks it from itself alone and fails (exit
// 3) on a tampered order or a seed that is not the committed one;
// --ticket/--arrival give the buyer's own position and fail for a ticket
// not listed so.
func TestQueueTranscript(t *testing.T) {
	tr, ids := transcriptOf(t)
	api := &fakeAPI{path: "/api/v1/items/7/transcript", status: http.StatusOK, body: jsonOf(t, tr)}
	env := envOf(map[string]string{"FLASHSALE_URL": api.start(t)}) // no token: the endpoint is public

	out := mustRun(t, env, "queue", "transcript", "7")
	for _, want := range []string{`item:\s+7\n`, `commitment:\s+` + tr.Commitment + `\n`, `seed:\s+` + tr.Seed.String() + `\n`,
		`tickets:\s+5\n`, `round 0:\s+arrivals 1\.\.3, root ` + tr.Rounds[0].Root + `\n`, `POSITION\s+ARRIVAL\s+TICKET\n`} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("transcript lacks %s:\n%s", want, out)
		}
	}
	for i, e := range tr.Tickets {
		if !regexp.MustCompile(fmt.Sprintf(`(?m)^%d\s+%d\s+%s$`, i+1, e.Arrival, e.Ticket)).MatchString(out) {
			t.Errorf("row %d (arrival %d) missing or out of order:\n%s", i+1, e.Arrival, out)
		}
	}
	if api.auth[0] != "" {
		t.Errorf("sent Authorization %q without a token", api.auth[0])
	}
	if got := mustRun(t, env, "-o", "json", "queue", "transcript", "7"); jsonOf(t, json.RawMessage(got)) != api.body {
		t.Errorf("-o json is not the answer as sent:\n%s", got)
	}

	out = mustRun(t, env, "queue", "transcript", "7", "--verify")
	if !strings.Contains(out, "verified: sha256(seed) is the commitment, the 1 rounds' roots and seeds are their tickets', and the order of the 5 tickets follows") ||
		!strings.Contains(out, "commitment:") || strings.Contains(out, "POSITION") {
		t.Errorf("--verify:\n%s", out)
	}

	// -o json keeps stdout one document: the verdict goes to stderr.
	if code, out, errs := run(t, env, "-o", "json", "queue", "transcript", "7", "--verify"); code != ExitOK || !json.Valid([]byte(out)) || !strings.Contains(errs, "verified:") {
		t.Errorf("-o json --verify: exit %d stdout %q stderr %q", code, out, errs)
	}

	// The buyer's own position: the index of their ticket's hash in the
	// serving order, found here by hand.
	for i, id := range ids {
		want := 0
		for p, e := range tr.Tickets {
			if e.Ticket == draw.Hash(id) {
				want = p + 1
			}
		}
		out := mustRun(t, env, "queue", "transcript", "7", "--ticket", id, "--arrival", fmt.Sprint(i+1))
		if !strings.Contains(out, fmt.Sprintf("position: %d of 5 (arrival %d)", want, i+1)) || !strings.Contains(out, "verified:") {
			t.Errorf("ticket %d: want position %d:\n%s", i+1, want, out)
		}
	}
	if code, _, errs := run(t, env, "queue", "transcript", "7", "--ticket", ids[0], "--arrival", "2"); code != ExitAuditFailed || !strings.Contains(errs, "not in the transcript") {
		t.Errorf("wrong arrival: exit %d %q", code, errs)
	}
	if code, _, errs := run(t, env, "queue", "transcript", "7", "--ticket", strings.Repeat("0", 32), "--arrival", "1"); code != ExitAuditFailed || !strings.Contains(errs, "not in the transcript") {
		t.Errorf("unknown ticket: exit %d %q", code, errs)
	}
	if code, _, errs := run(t, env, "queue", "transcript", "7", "--ticket", ids[0]); code != ExitUsage || !strings.Contains(errs, "--arrival") {
		t.Errorf("--ticket without --arrival: exit %d %q", code, errs)
	}
	if code, _, errs := run(t, env, "queue", "transcript", "7", "--arrival", "1"); code != ExitUsage || !strings.Contains(errs, "--ticket") {
		t.Errorf("--arrival without --ticket: exit %d %q", code, errs)
	}
	// A ticket of round 0 gets its round's proof checked.
	if out := mustRun(t, env, "queue", "verify", "7", "--ticket", ids[0], "--arrival", "1"); !strings.Contains(out, "round: 0, leaf 0 of 3, its Merkle proof leads to the root "+tr.Rounds[0].Root) {
		t.Errorf("round 0's ticket: no proof checked:\n%s", out)
	}

	// Two served tickets swapped: the order no longer follows from the seed.
	bad := tr
	bad.Tickets = append([]draw.Entry(nil), tr.Tickets...)
	bad.Tickets[0], bad.Tickets[1] = bad.Tickets[1], bad.Tickets[0]
	api.body = jsonOf(t, bad)
	if code, out, errs := run(t, env, "queue", "transcript", "7", "--verify"); code != ExitAuditFailed || !strings.Contains(errs, "order does not follow from the seed") || strings.Contains(out, "verified:") {
		t.Errorf("swapped order: exit %d stdout %q stderr %q", code, out, errs)
	}
	// Without --verify the same transcript is shown, not judged.
	if code, _, _ := run(t, env, "queue", "transcript", "7"); code != ExitOK {
		t.Errorf("swapped order without --verify: exit %d", code)
	}
	// A seed that is not the one committed to.
	bad = tr
	bad.Commitment = strings.Repeat("0", 64)
	api.body = jsonOf(t, bad)
	if code, _, errs := run(t, env, "queue", "transcript", "7", "--verify"); code != ExitAuditFailed || !strings.Contains(errs, "does not match the commitment") {
		t.Errorf("wrong commitment: exit %d %q", code, errs)
	}

	api.status, api.body = http.StatusConflict, `{"error":"not_revealed","message":"the seed is revealed at starts_at, 2026-12-03T10:00:00Z"}`
	if code, _, errs := run(t, env, "queue", "transcript", "7", "--verify"); code != ExitAPI || !strings.Contains(errs, "not_revealed (HTTP 409)") {
		t.Errorf("before the start: exit %d %q", code, errs)
	}
}

// TestQueueVerifyReceipt: `queue verify --ticket ID --receipt R` checks the
// receipt against the deployment's published key before the transcript:
// a good receipt of a listed ticket verifies and gives its place; a
// receipt whose ticket the transcript leaves out is exit 3 naming what the
// signed receipt proves; a forged or foreign receipt is refused.
func TestQueueVerifyReceipt(t *testing.T) {
	tr, ids := transcriptOf(t)
	priv := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, 32))
	pub := priv.Public().(ed25519.PublicKey)
	key := jsonOf(t, api.ReceiptKey{Algorithm: "Ed25519", KeyID: draw.KeyID(pub), PublicKey: hex.EncodeToString(pub)})
	srv := &fakeAPI{path: "/api/v1/items/7/transcript", status: http.StatusOK, body: jsonOf(t, tr),
		more: map[string]string{"/.well-known/flashsale-receipt-key": key}}
	env := envOf(map[string]string{"FLASHSALE_URL": srv.start(t)})
	receipt := func(priv ed25519.PrivateKey, item int64, id string, arrival int64) string {
		r, err := draw.SignReceipt(priv, draw.Receipt{Item: item, Ticket: draw.Hash(id), Arrival: arrival, TakenAt: time.UnixMilli(1_800_000_000_000)})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}

	out := mustRun(t, env, "queue", "verify", "7", "--ticket", ids[1], "--receipt", receipt(priv, 7, ids[1], 2))
	if !strings.Contains(out, "receipt: signed by the deployment's key, arrival 2") || !strings.Contains(out, "(arrival 2)") {
		t.Errorf("good receipt:\n%s", out)
	}

	// The server's transcript leaves ticket 2 out (its entry replaced):
	// the receipt proves it was taken.
	bad := tr
	bad.Tickets = slices.DeleteFunc(slices.Clone(tr.Tickets), func(e draw.Entry) bool { return e.Arrival == 5 })
	srv.body = jsonOf(t, bad)
	gone := fmt.Sprintf("%032x", 99)
	if code, _, errs := run(t, env, "queue", "verify", "7", "--ticket", gone, "--receipt", receipt(priv, 7, gone, 4)); code != ExitAuditFailed ||
		!strings.Contains(errs, "the receipt, signed by the deployment's key, says ticket "+draw.Hash(gone)+" took arrival 4") {
		t.Errorf("left out: exit %d %q", code, errs)
	}
	srv.body = jsonOf(t, tr)

	other := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{8}, 32))
	for name, r := range map[string]string{
		"another key's":  receipt(other, 7, ids[1], 2),
		"another item's": receipt(priv, 8, ids[1], 2),
		"another ticket": receipt(priv, 7, ids[2], 3),
		"garbage":        "r1.nope",
	} {
		if code, _, errs := run(t, env, "queue", "verify", "7", "--ticket", ids[1], "--receipt", r); code != ExitAuditFailed || !strings.Contains(errs, "receipt") {
			t.Errorf("%s receipt: exit %d %q", name, code, errs)
		}
	}
	if code, _, errs := run(t, env, "queue", "verify", "7", "--ticket", ids[1], "--receipt", receipt(priv, 7, ids[1], 2), "--arrival", "2"); code != ExitUsage {
		t.Errorf("--arrival with --receipt: exit %d %q", code, errs)
	}
}
