package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/store"
	"github.com/flashsale-dev/flashsale/pkg/waitroom"
)

// putQueuedItem creates an item whose queue opens at opens and whose sale
// runs from starts to ends, through the admin API, and returns its answer.
// putQueuedItem puts a queued item with no shuffle window: the tickets
// taken before starts_at are drawn (round 0), later ones queue by
// arrival. TestShuffleWindow tests the window.
func (h *harness) putQueuedItem(id, stockQty int64, opens, starts, ends time.Time) map[string]any {
	h.t.Helper()
	body := fmt.Sprintf(`{"name":"queued %d","price_cents":999,"stock":%d,"per_user_limit":1,"starts_at":%q,"ends_at":%q,"queue":true,"queue_opens_at":%q,"queue_shuffle_window_ms":0}`,
		id, stockQty, starts.UTC().Format(time.RFC3339Nano), ends.UTC().Format(time.RFC3339Nano), opens.UTC().Format(time.RFC3339Nano))
	r := h.do(http.MethodPut, fmt.Sprintf("/api/v1/admin/items/%d", id), body, h.admin())
	if r.Code != http.StatusOK {
		h.t.Fatalf("put queued item: %d %s", r.Code, r.Body)
	}
	return r.json(h.t)
}

var hexSHA256 = regexp.MustCompile(`^[0-9a-f]{64}$`)

// TestQueueFieldsOnTheItem: a queued item shows its queue and commitment on
// the admin answers and the public item, never its seed; the commitment is
// the seed's and stays while the queue is changed before it opens; an item
// without a queue says queue false and nothing else.
func TestQueueFieldsOnTheItem(t *testing.T) {
	h := newHarness(t, harnessOpts{partitions: 1})
	now := time.Now()
	id := testenv.ItemID()
	put := h.putQueuedItem(id, 10, now.Add(time.Hour), now.Add(2*time.Hour), now.Add(3*time.Hour))
	commitment, _ := put["queue_commitment"].(string)
	if put["queue"] != true || !hexSHA256.MatchString(commitment) || put["queue_opens_at"] == nil {
		t.Fatalf("PUT answer %v: want queue true, a commitment and queue_opens_at", put)
	}
	seed, err := waitroom.QueueSeed(t.Context(), h.db, id)
	if err != nil {
		t.Fatal(err)
	}
	if seed.Commitment() != commitment {
		t.Fatalf("commitment %s is not sha256 of the stored seed (%s)", commitment, seed.Commitment())
	}
	for _, get := range []struct {
		path string
		hdr  map[string]string
	}{
		{fmt.Sprintf("/api/v1/items/%d", id), h.as(7)},
		{fmt.Sprintf("/api/v1/admin/items/%d", id), h.admin()},
		{fmt.Sprintf("/api/v1/admin/items?after=%d&limit=1", id-1), h.admin()},
	} {
		r := h.do(http.MethodGet, get.path, "", get.hdr)
		if r.Code != http.StatusOK {
			t.Fatalf("GET %s: %d %s", get.path, r.Code, r.Body)
		}
		if !strings.Contains(string(r.Body), `"queue_commitment":"`+commitment+`"`) || !strings.Contains(string(r.Body), `"queue":true`) {
			t.Errorf("GET %s = %s: want the queue and its commitment", get.path, r.Body)
		}
		if strings.Contains(string(r.Body), seed.String()) {
			t.Errorf("GET %s shows the seed before starts_at: %s", get.path, r.Body)
		}
	}
	// Moving queue_opens_at before the queue opened keeps the commitment.
	r := h.patch(id, fmt.Sprintf(`{"queue_opens_at":%q}`, now.Add(30*time.Minute).UTC().Format(time.RFC3339)), mimeMergePatch)
	if r.Code != http.StatusOK || !strings.Contains(string(r.Body), commitment) {
		t.Fatalf("PATCH queue_opens_at: %d %s, want 200 with the same commitment", r.Code, r.Body)
	}
	// Validation: queue_opens_at after starts_at, or missing, is 400.
	for _, body := range []string{
		fmt.Sprintf(`{"queue_opens_at":%q}`, now.Add(150*time.Minute).UTC().Format(time.RFC3339)),
	} {
		if r := h.patch(id, body, mimeMergePatch); r.Code != http.StatusBadRequest || !strings.Contains(string(r.Body), "invalid_queue") {
			t.Errorf("PATCH %s: %d %s, want 400 invalid_queue", body, r.Code, r.Body)
		}
	}
	plain := testenv.ItemID()
	noOpens := fmt.Sprintf(`{"name":"x","price_cents":1,"stock":1,"per_user_limit":1,"starts_at":%q,"ends_at":%q,"queue":true}`,
		now.Add(time.Hour).UTC().Format(time.RFC3339), now.Add(2*time.Hour).UTC().Format(time.RFC3339))
	if r := h.do(http.MethodPut, fmt.Sprintf("/api/v1/admin/items/%d", plain), noOpens, h.admin()); r.Code != http.StatusBadRequest || !strings.Contains(string(r.Body), "invalid_queue") {
		t.Errorf("PUT queue without queue_opens_at: %d %s, want 400 invalid_queue", r.Code, r.Body)
	}
	if r := h.do(http.MethodPut, fmt.Sprintf("/api/v1/admin/items/%d", plain), strings.Replace(noOpens, `"queue":true`, `"queue":"yes"`, 1), h.admin()); r.Code != http.StatusBadRequest {
		t.Errorf("PUT queue as a string: %d %s, want 400", r.Code, r.Body)
	}
	// An item without a queue: queue false, no commitment, no row.
	h.putItem(plain, 5, 1)
	r = h.do(http.MethodGet, fmt.Sprintf("/api/v1/items/%d", plain), "", h.as(7))
	if !strings.Contains(string(r.Body), `"queue":false`) || strings.Contains(string(r.Body), "queue_commitment") {
		t.Errorf("an item without a queue: %s", r.Body)
	}
	if _, err := waitroom.QueueSeed(t.Context(), h.db, plain); err != store.ErrNotFound {
		t.Errorf("seed of an item without a queue: %v, want ErrNotFound", err)
	}
}

// TestQueueCannotChangeOnceOpen: once queue_opens_at has passed, tickets may
// exist under the commitment shown: turning the queue off or moving its
// opening is 409 queue_open and changes nothing; other fields still change.
func TestQueueCannotChangeOnceOpen(t *testing.T) {
	h := newHarness(t, harnessOpts{partitions: 1})
	now := time.Now()
	id := testenv.ItemID()
	put := h.putQueuedItem(id, 10, now.Add(-time.Minute), now.Add(time.Hour), now.Add(2*time.Hour))
	for _, body := range []string{`{"queue":false}`, fmt.Sprintf(`{"queue_opens_at":%q}`, now.Add(10*time.Minute).UTC().Format(time.RFC3339))} {
		if r := h.patch(id, body, mimeMergePatch); r.Code != http.StatusConflict || !strings.Contains(string(r.Body), "queue_open") {
			t.Errorf("PATCH %s: %d %s, want 409 queue_open", body, r.Code, r.Body)
		}
	}
	// starts_at decides which tickets are shuffled: fixed once tickets exist.
	if r := h.patch(id, fmt.Sprintf(`{"starts_at":%q}`, now.Add(30*time.Minute).UTC().Format(time.RFC3339)), mimeMergePatch); r.Code != http.StatusConflict || !strings.Contains(string(r.Body), "queue_open") {
		t.Errorf("PATCH starts_at: %d %s, want 409 queue_open", r.Code, r.Body)
	}
	r := h.patch(id, `{"name":"renamed"}`, mimeMergePatch)
	if r.Code != http.StatusOK || !strings.Contains(string(r.Body), put["queue_commitment"].(string)) {
		t.Fatalf("PATCH name: %d %s, want 200 with the queue kept", r.Code, r.Body)
	}
}

// TestPutWithoutQueueKeepsIt: a PUT that leaves queue out keeps the stored
// queue and its commitment, as one that leaves buckets out keeps the count,
// and is checked with it: a starts_at before the stored opening is 409
// queue_kept (the conflict is with the stored queue, not the body).
func TestPutWithoutQueueKeepsIt(t *testing.T) {
	h := newHarness(t, harnessOpts{partitions: 1})
	now := time.Now()
	id := testenv.ItemID()
	put := h.putQueuedItem(id, 10, now.Add(time.Hour), now.Add(2*time.Hour), now.Add(3*time.Hour))
	body := func(starts time.Time) string {
		return fmt.Sprintf(`{"name":"again","price_cents":1,"stock":10,"per_user_limit":1,"starts_at":%q,"ends_at":%q}`,
			starts.UTC().Format(time.RFC3339), now.Add(3*time.Hour).UTC().Format(time.RFC3339))
	}
	path := fmt.Sprintf("/api/v1/admin/items/%d", id)
	r := h.do(http.MethodPut, path, body(now.Add(2*time.Hour)), h.admin())
	if r.Code != http.StatusOK || !strings.Contains(string(r.Body), `"queue_commitment":"`+put["queue_commitment"].(string)+`"`) {
		t.Fatalf("PUT without queue: %d %s, want the queue kept", r.Code, r.Body)
	}
	// The body is valid alone: its conflict is with the kept queue, a 409
	// that names the stored opening, and nothing changes.
	opens := now.Add(time.Hour).UTC().Format("2006-01-02T15:04:05") // the stored opening, to the second
	if r := h.do(http.MethodPut, path, body(now.Add(30*time.Minute)), h.admin()); r.Code != http.StatusConflict ||
		!strings.Contains(string(r.Body), `"error":"queue_kept"`) || !strings.Contains(string(r.Body), opens) {
		t.Errorf("PUT without queue, starts_at before the opening: %d %s, want 409 queue_kept naming %s", r.Code, r.Body, opens)
	}
	// A PATCH of starts_at alone, the same.
	if r := h.patch(id, fmt.Sprintf(`{"starts_at":%q}`, now.Add(30*time.Minute).UTC().Format(time.RFC3339)), mimeMergePatch); r.Code != http.StatusConflict ||
		!strings.Contains(string(r.Body), `"error":"queue_kept"`) || !strings.Contains(string(r.Body), opens) {
		t.Errorf("PATCH starts_at before the opening: %d %s, want 409 queue_kept naming %s", r.Code, r.Body, opens)
	}
	if r := h.do(http.MethodGet, path, "", h.admin()); !strings.Contains(string(r.Body), `"starts_at":"`+now.Add(2*time.Hour).UTC().Format("2006-01-02T15:04:05")) {
		t.Errorf("after the refusals: %s, want starts_at unchanged", r.Body)
	}
	// Turned off explicitly, before it opened: allowed.
	off := strings.Replace(body(now.Add(2*time.Hour)), `"name":"again"`, `"name":"again","queue":false`, 1)
	if r := h.do(http.MethodPut, path, off, h.admin()); r.Code != http.StatusOK || !strings.Contains(string(r.Body), `"queue":false`) {
		t.Errorf("PUT queue false: %d %s", r.Code, r.Body)
	}
}

// TestShortShuffleWindowSurvivesAPatch: a window shorter than the shortest
// round a body may ask for (queue_round_ms from 1 s) is one round as long
// as the window. The stored item, given back as the body a merge patch
// applies to, must not name that round: an empty PATCH of it is 200 and
// keeps the window and its one round (the contract run found a 400
// invalid_queue_round, ST202, for an item whose window was 0.5 s).
func TestShortShuffleWindowSurvivesAPatch(t *testing.T) {
	h := newHarness(t, harnessOpts{partitions: 1})
	now := time.Now()
	id := testenv.ItemID()
	body := fmt.Sprintf(`{"name":"short window","price_cents":999,"stock":5,"per_user_limit":1,"starts_at":%q,"ends_at":%q,"queue":true,"queue_opens_at":%q,"queue_shuffle_window_ms":500}`,
		now.Add(2*time.Hour).UTC().Format(time.RFC3339Nano), now.Add(3*time.Hour).UTC().Format(time.RFC3339Nano), now.Add(time.Hour).UTC().Format(time.RFC3339Nano))
	if r := h.do(http.MethodPut, fmt.Sprintf("/api/v1/admin/items/%d", id), body, h.admin()); r.Code != http.StatusOK {
		t.Fatalf("put: %d %s", r.Code, r.Body)
	}
	for _, patch := range []string{`{}`, `{"name":"renamed"}`} {
		r := h.patch(id, patch, mimeMergePatch)
		if r.Code != http.StatusOK {
			t.Fatalf("PATCH %s: %d %s, want 200", patch, r.Code, r.Body)
		}
		var got struct {
			Window int `json:"queue_shuffle_window_ms"`
			Round  int `json:"queue_round_ms"`
		}
		if err := json.Unmarshal(r.Body, &got); err != nil {
			t.Fatal(err)
		}
		if got.Window != 500 || got.Round != 500 {
			t.Errorf("PATCH %s: window %d ms, round %d ms; want the 500 ms window kept as one round", patch, got.Window, got.Round)
		}
	}
	// A PUT that says nothing of the queue keeps it, the same way (CI's
	// contract run found the 400 invalid_queue_round here too).
	put := fmt.Sprintf(`{"name":"renamed again","price_cents":0,"stock":7,"per_user_limit":2,"starts_at":%q,"ends_at":%q}`,
		now.Add(2*time.Hour).UTC().Format(time.RFC3339Nano), now.Add(3*time.Hour).UTC().Format(time.RFC3339Nano))
	r := h.do(http.MethodPut, fmt.Sprintf("/api/v1/admin/items/%d", id), put, h.admin())
	if r.Code != http.StatusOK {
		t.Fatalf("PUT without queue fields: %d %s, want 200", r.Code, r.Body)
	}
	var got struct {
		Queue  bool `json:"queue"`
		Window int  `json:"queue_shuffle_window_ms"`
		Round  int  `json:"queue_round_ms"`
	}
	if err := json.Unmarshal(r.Body, &got); err != nil {
		t.Fatal(err)
	}
	if !got.Queue || got.Window != 500 || got.Round != 500 {
		t.Errorf("PUT without queue fields: queue %v, window %d ms, round %d ms; want the queue and its 500 ms window kept as one round", got.Queue, got.Window, got.Round)
	}
}
